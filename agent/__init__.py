"""dsf-agent: runs every scorer of one managed cluster and publishes the scores.

Reading order, one scorer from configuration to published score: ``settings`` (command
line) → ``config`` (ConfigMap or file → summaries) → ``loop`` (one task per scorer,
cadence) → ``cycle`` (one scoring cycle) → ``fetch`` (Prometheus) → ``score``
(Scoring API) → ``metrics`` and ``publish`` (AddOnPlacementScore on the hub).
"""

from __future__ import annotations

import dsf_transport  # noqa: F401  (first: it keeps httpx's command line out)
from dsf_contract.pydantic_plugins import without_pydantic_plugins

# before any module of the agent builds a model (the configuration's, the settings')
without_pydantic_plugins()
