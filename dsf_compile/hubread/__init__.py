"""The hub's state read as models: AddOnPlacementScores, PlacementDecisions, bindings,
Placements and ManagedClusters, from ``--scores``/``--decisions`` snapshot files or from a
hub's API (over :mod:`dsf_compile.edges.hub`), each object validated against its model
of :mod:`dsf_compile.inputs` with located errors (:mod:`.state`).

It stands above :mod:`dsf_compile.edges` (which knows no model) and below the stages and
pipelines that replay the scheduler on what it returns.
"""
