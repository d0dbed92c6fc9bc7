"""The agent's failures: one error class per stage, one ``reason`` per cause.

Each error carries a short, stable ``reason`` (a value of the ``reason`` label of
``dynamic_scoring_failures_total``, never a message with user data in it) next to its
human-readable message; its class says the stage. A cycle that fails before the hub
write tells the hub why in the ``ScoresAvailable`` condition of its AddOnPlacementScore:
:func:`condition_reason` picks that condition reason from the stage and the reason.

The whole tree: every reason once, with the enum that owns it, the stages it occurs in
and, after ``→``, the condition reason it maps to there (``agent/README.md`` lists the
same by stage; tests hold both to the enums and to :func:`condition_reason`)::

    AgentError              stage "agent": the process cannot start (exit 2)
    ├── ConfigError         stage "config": the last good configuration is kept
    ├── SecretMissingError  stage "secret": the scorer is disabled until it appears
    ├── FetchError          stage "fetch": the Prometheus query
    ├── ScoreError          stage "score": the Scoring API
    └── PublishError        stage "publish": the hub (no condition is written)

    reason (the ``reason`` label)
    ├── RequestFailure (dsf_contract.failures): a request got no usable answer
    │   ├── timeout           fetch → PrometheusUnreachable · score → ScoringFailed
    │   │                     · publish · config · compliance
    │   ├── unreachable       fetch → PrometheusUnreachable · score → ScoringFailed
    │   │                     · publish · config · compliance
    │   ├── transport_error   fetch → PrometheusUnreachable · score → ScoringFailed
    │   ├── too_large         fetch → QueryFailed · score → InvalidResponse · publish · config
    │   │                     · compliance
    │   └── invalid_response  fetch → QueryFailed · score → InvalidResponse · publish · config
    │                         · compliance
    ├── http_status_reason (dsf_contract.failures): an error status by class, not an enum
    │   └── http_4xx          fetch → QueryFailed · score → ScoringFailed · secret → SecretMissing
    │                         · publish · config · compliance (and http_1xx … http_9xx alike)
    ├── ApiFailure (dsf_contract.failures): a Kubernetes API answer named by its status
    │   ├── unauthorized      secret → SecretMissing · publish · config · compliance
    │   ├── forbidden         secret → SecretMissing · publish · config · compliance
    │   └── not_found         secret → SecretMissing · publish · config · compliance
    └── Reason (agent.errors): the agent's own
        ├── error             any stage: a failure nothing else names
        ├── api_error         secret → SecretMissing
        ├── conflict          publish: resourceVersion conflicts past the retries
        ├── empty             secret → SecretMissing · config
        ├── invalid_document  config · compliance
        ├── invalid_json      config · compliance
        ├── invalid_reference secret → SecretMissing
        ├── invalid_yaml      config
        ├── key_not_found     secret → SecretMissing
        ├── kube_config       agent: credentials that cannot be loaded
        ├── missing_key       config
        ├── not_owned         compliance: the claim exists, not made by the agent
        ├── os_error          agent: the system refused (a port taken)
        ├── query_error       fetch → QueryFailed
        ├── status_too_large  score → InvalidResponse
        ├── too_deep          config · compliance
        ├── too_many_results  score → InvalidResponse · compliance
        ├── unreadable        secret → SecretMissing · config
        └── watch_ended       config · compliance: a watch ended early without a change

    condition reason (ScoresReason, dsf_contract.scores: ``ScoresAvailable``'s reason)
    ├── ScoresPublished       the last cycle published fresh scores
    ├── SecretMissing         stage secret
    ├── PrometheusUnreachable stage fetch: the source did not answer
    ├── QueryFailed           stage fetch: the source answered wrongly
    ├── ScoringFailed         stage score: the Scoring API did not answer, or refused
    ├── InvalidResponse       stage score: the Scoring API answered something unusable
    └── CycleFailed           any other stage
"""

from __future__ import annotations

from enum import StrEnum

from dsf_contract.failures import HTTP_STATUS_REASONS, UNANSWERED
from dsf_contract.scores import ScoresReason


class Reason(StrEnum):
    """The agent's own failure reasons (``reason`` label values of its failure metrics).

    Failed requests add ``dsf_contract.failures``' ``RequestFailure`` and ``ApiFailure``
    reasons and ``http_4xx``/``http_5xx`` (the tree above).
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
    NOT_OWNED = "not_owned"
    OS_ERROR = "os_error"
    QUERY_ERROR = "query_error"
    STATUS_TOO_LARGE = "status_too_large"
    TOO_DEEP = "too_deep"
    TOO_MANY_RESULTS = "too_many_results"
    UNREADABLE = "unreadable"
    WATCH_ENDED = "watch_ended"


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


def condition_reason(stage: str, reason: str) -> ScoresReason:
    """The condition's reason for a cycle that failed at ``stage`` with metric reason ``reason``."""
    if stage == "secret":
        return ScoresReason.SECRET_MISSING
    if stage == "fetch":
        if reason in UNANSWERED:
            return ScoresReason.PROMETHEUS_UNREACHABLE
        return ScoresReason.QUERY_FAILED
    if stage == "score":
        if reason in UNANSWERED or reason in HTTP_STATUS_REASONS:
            return ScoresReason.SCORING_FAILED
        return ScoresReason.INVALID_RESPONSE
    return ScoresReason.CYCLE_FAILED
