"""Why a connection failed, in a few stable words (sync's lockfile reasons, the hub's errors).

The exception's class is stable, its text (addresses, "All connection attempts failed") is
not: the reason comes from walking the chain of causes down to the system's error.
"""

from __future__ import annotations

import errno
import socket
import ssl

__all__ = ["UNREACHABLE_REASONS", "connect_failure"]

#: The reasons that say this machine did not get through to the server at all (what
#: sync's unreachable-fleet guard counts), as opposed to a server that answered wrongly.
UNREACHABLE_REASONS = frozenset(
    {
        "connection refused",
        "cannot resolve host name",
        "network unreachable",
        "host unreachable",
        "connection failed",
    }
)


def connect_failure(err: BaseException) -> str:
    """``connection refused``, ``cannot resolve host name``, ``TLS handshake failed`` ..."""
    seen: set[int] = set()
    cause: BaseException | None = err
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"TLS certificate verification failed: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return "TLS handshake failed"
        if isinstance(cause, socket.gaierror):
            return "cannot resolve host name"
        code = getattr(cause, "errno", None)
        if isinstance(cause, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            return "connection refused"
        if code == errno.ENETUNREACH:
            return "network unreachable"
        if code == errno.EHOSTUNREACH:
            return "host unreachable"
        inner = getattr(cause, "reason", None)  # urllib3's MaxRetryError keeps it here
        if isinstance(inner, BaseException) and id(inner) not in seen:
            cause = inner
        else:
            cause = cause.__cause__ or cause.__context__
    text = str(err).lower()
    if "refused" in text:
        return "connection refused"
    if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
        return "cannot resolve host name"
    return "connection failed"
