"""The commands as pipelines of stages: load → validate → (sync) → resolve → render → write.

One module per command family wires the stages together and is where their I/O is
called: :mod:`.inputs` (settings, inputs, validate, plan), :mod:`.render`, :mod:`.sync`
(scorers and clusters) and :mod:`.placements` (explain, optimize, verify, decisions).
"""
