"""The agent's error tree: every failure of a cycle or a reload is one of these.

Each error carries a short, stable ``reason`` (a metric label value, never a message
with user data in it) next to its human-readable message.
"""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """The agent's own failure reasons (``reason`` label values of its failure metrics).

    Failed requests add ``dsf_contract.failures``' ``RequestFailure`` and ``ApiFailure``
    reasons and ``http_4xx``/``http_5xx``; ``agent/README.md`` lists them all by stage.
    """

    ERROR = "error"
    API_ERROR = "api_error"
    CONFLICT = "conflict"
    EMPTY = "empty"
    INVALID_DOCUMENT = "invalid_document"
    INVALID_JSON = "invalid_json"
    INVALID_REFERENCE = "invalid_reference"
    INVALID_YAML = "invalid_yaml"
    KEY_NOT_FOUND = "key_not_found"
    KUBE_CONFIG = "kube_config"
    MISSING_KEY = "missing_key"
    OS_ERROR = "os_error"
    QUERY_ERROR = "query_error"
    STATUS_TOO_LARGE = "status_too_large"
    TOO_DEEP = "too_deep"
    TOO_MANY_RESULTS = "too_many_results"
    UNREADABLE = "unreadable"


class AgentError(Exception):
    """Base of every error the agent raises on purpose."""

    stage = "agent"

    def __init__(self, message: str, *, reason: str = Reason.ERROR) -> None:
        super().__init__(message)
        self.reason = reason


class ConfigError(AgentError):
    """The configuration (ConfigMap or file) cannot be used."""

    stage = "config"


class SecretMissingError(AgentError):
    """A Secret or one of its keys that a scorer needs does not exist (yet)."""

    stage = "secret"


class FetchError(AgentError):
    """The Prometheus query failed or answered something unusable."""

    stage = "fetch"


class ScoreError(AgentError):
    """The Scoring API failed or answered something unusable."""

    stage = "score"


class PublishError(AgentError):
    """Writing the AddOnPlacementScore to the hub failed."""

    stage = "publish"
