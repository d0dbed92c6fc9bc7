"""The agent's command line: each option's flag and environment variable, defined once.

The agent's parser (``agent/settings.py``) is built from these options, and the compiler
writes the agent Deployment's args and env from them
(``dsf_compile/render/agent_manifests.py``): a renamed flag cannot leave the Deployment
passing one the agent no longer knows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

#: The agent's program name: its command, and the manager named on what it writes.
PROGRAM = "dsf-agent"


@dataclass(frozen=True)
class AgentOption:
    """One option of ``dsf-agent``: its flag and the ``DSF_*`` variable that sets it too."""

    flag: str
    env: str

    def arg(self, value: object) -> str:
        """``--flag=value``, as a container's ``args`` write it."""
        return f"{self.flag}={value}"


CLUSTER_NAME = AgentOption("--cluster-name", "DSF_CLUSTER_NAME")
CONFIG_FILE = AgentOption("--config-file", "DSF_CONFIG_FILE")
SECRETS_DIR = AgentOption("--secrets-dir", "DSF_SECRETS_DIR")
HUB_KUBECONFIG = AgentOption("--hub-kubeconfig", "DSF_HUB_KUBECONFIG")
METRICS_BIND = AgentOption("--metrics-bind", "DSF_METRICS_BIND")
LOG_LEVEL = AgentOption("--log-level", "DSF_LOG_LEVEL")
LOG_FORMAT = AgentOption("--log-format", "DSF_LOG_FORMAT")
NAMESPACE = AgentOption("--namespace", "DSF_NAMESPACE")
AGGREGATE = AgentOption("--aggregate", "DSF_AGGREGATE")
REQUEST_TIMEOUT = AgentOption("--request-timeout", "DSF_REQUEST_TIMEOUT")
MAX_RESPONSE_BYTES = AgentOption("--max-response-bytes", "DSF_MAX_RESPONSE_BYTES")
MAX_SCORING_RESPONSE_BYTES = AgentOption(
    "--max-scoring-response-bytes", "DSF_MAX_SCORING_RESPONSE_BYTES"
)
MAX_RESULTS = AgentOption("--max-results", "DSF_MAX_RESULTS")
HUB_SPREAD = AgentOption("--hub-spread", "DSF_HUB_SPREAD")
RESOLVE = AgentOption("--resolve", "DSF_RESOLVE")
MEMORY_LIMIT = AgentOption("--memory-limit", "DSF_MEMORY_LIMIT")
COMPLIANCE_CLAIM = AgentOption("--compliance-claim", "DSF_COMPLIANCE_CLAIM")
COMPLIANCE_POLL_SECONDS = AgentOption("--compliance-poll-seconds", "DSF_COMPLIANCE_POLL_SECONDS")
COMPLIANCE_STABLE_SECONDS = AgentOption(
    "--compliance-stable-seconds", "DSF_COMPLIANCE_STABLE_SECONDS"
)

#: Every option, in the order ``dsf-agent --help`` lists them.
OPTIONS = (
    CLUSTER_NAME,
    CONFIG_FILE,
    SECRETS_DIR,
    HUB_KUBECONFIG,
    METRICS_BIND,
    LOG_LEVEL,
    LOG_FORMAT,
    NAMESPACE,
    AGGREGATE,
    REQUEST_TIMEOUT,
    MAX_RESPONSE_BYTES,
    MAX_SCORING_RESPONSE_BYTES,
    MAX_RESULTS,
    HUB_SPREAD,
    RESOLVE,
    MEMORY_LIMIT,
    COMPLIANCE_CLAIM,
    COMPLIANCE_POLL_SECONDS,
    COMPLIANCE_STABLE_SECONDS,
)

#: The port of ``/metrics``, ``/healthz`` and ``/readyz``.
METRICS_PORT = 8080
DEFAULT_METRICS_BIND = f"0.0.0.0:{METRICS_PORT}"
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
#: The largest Prometheus answer the agent reads unless told otherwise.
DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
#: The largest Scoring API answer read: the agent's default, and sync's conformance check.
DEFAULT_MAX_SCORING_RESPONSE_BYTES = 16 * 1024 * 1024

#: How the agent folds results of one score that land on the same dimension
#: (``--aggregate SCORE_NAME=FUNCTION``; upstream keeps the last).
Aggregation = Literal["last", "max", "min", "avg", "sum"]
AGGREGATIONS: tuple[str, ...] = get_args(Aggregation)
