"""What a failed request is called: the agent's failure reasons and the connection words.

These words are a contract: the agent's ``reason`` label (``dynamic_scoring_failures_total``)
and the AddOnPlacementScore condition it chooses from them (``ScoresReason``), the
lockfile's reasons and the hub's errors, and sync's unreachable-fleet guard are built on
them. Which exception stands for which word is the transport's business
(:func:`dsf_transport.http.describe_failure`, :func:`~dsf_transport.http.connect_failure`).
"""

from __future__ import annotations

from enum import StrEnum


class RequestFailure(StrEnum):
    """Why a request got no usable answer: the agent's ``reason`` label values
    (``dynamic_scoring_failures_total``), from which ``ScoresReason`` is chosen."""

    TIMEOUT = "timeout"
    UNREACHABLE = "unreachable"
    TRANSPORT_ERROR = "transport_error"
    TOO_LARGE = "too_large"
    INVALID_RESPONSE = "invalid_response"


#: The reasons of a request that got no answer at all (as opposed to a wrong one).
UNANSWERED = frozenset(
    {RequestFailure.TIMEOUT, RequestFailure.UNREACHABLE, RequestFailure.TRANSPORT_ERROR}
)


def http_status_reason(status: int) -> str:
    """The failure reason of an answer with error status ``status``: ``http_4xx``, ``http_5xx``
    (a status past 999, which only a broken server sends, is ``http_9xx``: the label's
    values stay few)."""
    return f"http_{min(status // 100, 9)}xx"


class ApiFailure(StrEnum):
    """The Kubernetes API answers named by their status rather than its class."""

    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"


_NAMED_STATUSES = {
    401: ApiFailure.UNAUTHORIZED,
    403: ApiFailure.FORBIDDEN,
    404: ApiFailure.NOT_FOUND,
}

#: Every reason :func:`http_status_reason` gives.
HTTP_STATUS_REASONS = frozenset(http_status_reason(100 * digit) for digit in range(10))


def api_status_reason(status: int) -> str:
    """The failure reason of a Kubernetes API's error answer: 401 and 403 say the agent's
    credentials or their RBAC are wrong, and are named so that a missing verb shows as
    itself, not as one more 4xx; 404 says the object is not there."""
    return _NAMED_STATUSES.get(status) or http_status_reason(status)


class ConnectFailure(StrEnum):
    """Why a connection failed, in a few stable words (the lockfile's reasons, the hub's
    errors): the exception's class is stable, its text (addresses, "All connection
    attempts failed") is not."""

    REFUSED = "connection refused"
    NO_HOST_NAME = "cannot resolve host name"
    NETWORK_UNREACHABLE = "network unreachable"
    HOST_UNREACHABLE = "host unreachable"
    FAILED = "connection failed"
    TLS_HANDSHAKE = "TLS handshake failed"
    #: Followed by ``: `` and what the verification said.
    TLS_CERTIFICATE = "TLS certificate verification failed"


#: The words that say this machine did not get through to the server at all (what sync's
#: unreachable-fleet guard counts), as opposed to a server that answered wrongly.
UNREACHABLE_WORDS = frozenset(
    {
        ConnectFailure.REFUSED,
        ConnectFailure.NO_HOST_NAME,
        ConnectFailure.NETWORK_UNREACHABLE,
        ConnectFailure.HOST_UNREACHABLE,
        ConnectFailure.FAILED,
    }
)
