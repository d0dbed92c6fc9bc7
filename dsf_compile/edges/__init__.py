"""The edges: where the compiler reads and writes the world, the floor of its rooms.

Files written through a journal (:mod:`.files`, :mod:`.journal`, :mod:`.replacement`)
in a folder opened without following links (:mod:`.tree`), the hub's API read within
bounds (:mod:`.hub`), the committed state (:mod:`.committed`), GitHub (:mod:`.github`),
YAML text out (:mod:`.yaml_text`) and text from outside in (:mod:`.untrusted`). The edges
know no model of the stages (:mod:`dsf_compile.inputs`, ``render``, ``sync``,
``placement``): they import only :mod:`dsf_compile.errors` and the shared packages
(``tests/test_layers.py``); what reads the world as models stands above them
(:mod:`dsf_compile.hubread`, :mod:`dsf_compile.pipeline.schemas`).
"""
