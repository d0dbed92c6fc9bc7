"""dsf-agent: runs every scorer of one managed cluster and publishes the scores.

Reading order, one scorer from configuration to published score: ``settings`` (command
line) → ``config`` (ConfigMap or file → summaries) → ``loop`` (one task per scorer,
cadence) → ``cycle`` (one scoring cycle) → ``fetch`` (Prometheus) → ``score``
(Scoring API) → ``metrics`` and ``publish`` (AddOnPlacementScore on the hub).
"""

from __future__ import annotations

import sys

# httpx's package imports its command line (click, rich and pygments: 6 MB of the agent's
# memory) whenever those happen to be installed; the agent never runs it, and its image
# does not hold them. The agent loads httpx only for what its plain pool does not carry
# (https, a proxy, --resolve: agent/transport.py). The module's name is httpx's own: pyproject.toml pins the httpx range
# this is tested with (tests/agent/test_httpx_pin.py).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
