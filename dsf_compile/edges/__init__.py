"""The edges: where the compiler reads and writes the world.

Files written through a journal (:mod:`.files`, :mod:`.journal`), the hub read through
its API or snapshots (:mod:`.hub`, :mod:`.hub_state`), the committed state
(:mod:`.committed`), the generated JSON Schemas (:mod:`.schemas`), YAML text out
(:mod:`.yaml_text`) and text from outside in (:mod:`.untrusted`). The stages take and
return plain values; their I/O happens here.
"""
