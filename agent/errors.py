"""The agent's error tree: every failure of a cycle or a reload is one of these.

Each error carries a short, stable ``reason`` (a metric label value, never a message
with user data in it) next to its human-readable message.
"""

from __future__ import annotations


def http_status_reason(status: int) -> str:
    """The failure reason of an answer with error status ``status``: ``http_4xx``, ``http_5xx``
    (a status past 999, which only a broken server sends, is ``http_9xx``: the label's
    values stay few)."""
    return f"http_{min(status // 100, 9)}xx"


#: Every reason :func:`http_status_reason` gives.
HTTP_STATUS_REASONS = frozenset(http_status_reason(100 * digit) for digit in range(10))


class AgentError(Exception):
    """Base of every error the agent raises on purpose."""

    stage = "agent"

    def __init__(self, message: str, *, reason: str = "error") -> None:
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


class ResponseTooLargeError(AgentError):
    """A response body exceeded the configured cap (raised while streaming it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response larger than {limit} bytes", reason="too_large")
        self.limit = limit
