"""The agent's command line: each option's flag and environment variable, defined once.

The agent's parser (``agent/settings.py``) is built from these options, and the compiler
writes the agent Deployment's args and env from them
(``dsf_compile/render/agent_manifests.py``): a renamed flag cannot leave the Deployment
passing one the agent no longer knows.
"""

from __future__ import annotations

from typing import Literal, get_args

from dsf_contract.records import frozen

#: The agent's program name: its command, and the manager named on what it writes.
PROGRAM = "dsf-agent"


@frozen
class AgentOption:
    """One option of ``dsf-agent``: its flag, and the ``DSF_*`` variable that sets it too."""

    flag: str

    @property
    def env(self) -> str:
        """The variable, named after the flag: ``--log-level`` is ``DSF_LOG_LEVEL``."""
        return "DSF_" + self.flag.removeprefix("--").upper().replace("-", "_")

    def arg(self, value: object) -> str:
        """``--flag=value``, as a container's ``args`` write it."""
        return f"{self.flag}={value}"


_DEFINED: list[AgentOption] = []


def _option(flag: str) -> AgentOption:
    """An option, registered in :data:`OPTIONS` in the order of this module."""
    _DEFINED.append(AgentOption(flag))
    return _DEFINED[-1]


CLUSTER_NAME = _option("--cluster-name")
CONFIG_FILE = _option("--config-file")
SECRETS_DIR = _option("--secrets-dir")
HUB_KUBECONFIG = _option("--hub-kubeconfig")
METRICS_BIND = _option("--metrics-bind")
LOG_LEVEL = _option("--log-level")
LOG_FORMAT = _option("--log-format")
NAMESPACE = _option("--namespace")
AGGREGATE = _option("--aggregate")
REQUEST_TIMEOUT = _option("--request-timeout")
MAX_RESPONSE_BYTES = _option("--max-response-bytes")
MAX_SCORING_RESPONSE_BYTES = _option("--max-scoring-response-bytes")
MAX_RESULTS = _option("--max-results")
HUB_SPREAD = _option("--hub-spread")
RESOLVE = _option("--resolve")
MEMORY_LIMIT = _option("--memory-limit")
COMPLIANCE_CLAIM = _option("--compliance-claim")
COMPLIANCE_POLL_SECONDS = _option("--compliance-poll-seconds")
COMPLIANCE_STABLE_SECONDS = _option("--compliance-stable-seconds")

#: Every option, in the order ``dsf-agent --help`` lists them (the order above).
OPTIONS = tuple(_DEFINED)

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
