"""The agent's error tree: every failure of a cycle or a reload is one of these.

Each error carries a short, stable ``reason`` (a metric label value, never a message
with user data in it) next to its human-readable message.
"""

from __future__ import annotations


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
