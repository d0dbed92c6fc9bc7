"""The commands as pipelines of stages: load → validate → (sync) → resolve → render → write.

One module per command family wires the stages together and is where their I/O is
called: :mod:`.inputs` (settings, inputs, validate, plan), :mod:`.render`, :mod:`.sync`
(scorers and clusters), :mod:`.placements` (explain, optimize, verify, decisions),
:mod:`.backtest`, :mod:`.schemas` (the JSON Schemas of the models) and :mod:`.init`.
"""
