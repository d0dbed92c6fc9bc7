"""HTTP to services dsf does not control, the same for the compiler and the agent.

``dsf-compile sync`` (a scorer's ``/config``), ``dsf-compile scorer-check`` and the agent
(Prometheus, the Scoring APIs) make their clients here, read every answer through
:func:`read_capped`, and name what went wrong with :func:`describe_failure`; the hub reader
names a failed connection with :func:`connect_failure`. The words and labels these give
are a contract, and written in :mod:`dsf_contract.failures`; here is only which exception
stands for which of them.

httpx is imported by the functions that need it: the hub reader (the ``kubernetes``
client, over urllib3) names its failures here without loading a second HTTP client, and
the agent's plain requests (:mod:`dsf_transport.http1`) without loading any.
"""

from __future__ import annotations

import errno
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from dsf_contract import __version__
from dsf_contract.agent_cli import PROGRAM
from dsf_contract.failures import UNREACHABLE_WORDS, ConnectFailure, RequestFailure
from dsf_transport import http1_errors

if TYPE_CHECKING:
    import httpx

__all__ = [
    "BodyTooLargeError",
    "Failure",
    "MemoryHook",
    "UserAgent",
    "causes",
    "connect_failure",
    "describe_failure",
    "new_client",
    "proxy_configured",
    "read_capped",
]


class UserAgent(StrEnum):
    """The ``User-Agent`` each program sends, so a service's logs tell them apart."""

    AGENT = f"{PROGRAM}/{__version__}"
    SYNC = "dsf-compile-sync/1"
    BACKTEST = "dsf-compile-backtest/1"  # its score history's reads (Prometheus-compatible)
    CI = "dsf-compile-ci/1"
    SCORER_CHECK = "dsf-scorer-check"


# ------------------------------------------------------------------- the client


def new_client(
    user_agent: UserAgent,
    *,
    transport: httpx.AsyncBaseTransport | None,
    timeout: httpx.Timeout,
    trust_env: bool = False,
    limits: httpx.Limits | None = None,
    headers: Mapping[str, str] | None = None,
) -> httpx.AsyncClient:
    """An ``AsyncClient`` that follows no redirect and keeps no cookie.

    A redirect is never followed for the caller: it could send a bearer token to another
    host (sync follows same-origin ones by hand). Every request stands alone, so no cookie
    a service sets is sent back. ``trust_env`` honours ``HTTPS_PROXY``/``NO_PROXY`` (the
    agent, as the addon deployment sets them); the compiler connects where it is told.
    """
    import httpx

    from dsf_transport.no_cookies import NoCookies

    options: dict[str, Any] = {} if limits is None else {"limits": limits}
    return httpx.AsyncClient(
        transport=transport,
        timeout=timeout,
        follow_redirects=False,
        cookies=NoCookies(),
        trust_env=trust_env,
        headers={"User-Agent": str(user_agent), **(headers or {})},
        **options,
    )


def proxy_configured() -> bool:
    """Whether the environment names a proxy (``HTTP_PROXY``, ``HTTPS_PROXY``, ``ALL_PROXY``)."""
    import urllib.request  # with http.client and email: not for a caller that never asks

    return any(scheme != "no" for scheme in urllib.request.getproxies())


# ------------------------------------------------------------------ the answer


class BodyTooLargeError(Exception):
    """The answer is larger than the cap."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response larger than {limit} bytes")
        self.limit = limit


class MemoryHook(Protocol):
    """What :func:`read_capped` asks of a memory budget (the agent's ``Reservation``)."""

    #: Bytes already covered.
    held: int

    async def grow_to(self, size: int) -> None:
        """Cover ``size`` bytes in total, waiting while the budget is spent."""


async def read_capped(
    response: httpx.Response,
    limit: int,
    *,
    memory: MemoryHook | None = None,
    decoded: bool = True,
) -> bytes | bytearray:
    """The body of a streamed ``response``; :class:`BodyTooLargeError` past ``limit`` bytes.

    The body is read chunk by chunk and the read stops as soon as the cap is passed, so a
    huge or endless answer costs at most the cap in memory. With ``memory``, the body's
    bytes are covered in that budget before they are read. ``decoded`` counts the bytes
    once a ``Content-Encoding`` is undone (what the caller will hold); ``decoded=False``
    reads the bytes as sent, for a caller that refused every encoding.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit():
        if int(declared) > limit:
            raise BodyTooLargeError(limit)
        if memory is not None:
            await memory.grow_to(int(declared))
    if response.is_stream_consumed:
        # Only in-memory responses (an injected mock transport) arrive already read.
        chunks: AsyncIterator[bytes] = _one_chunk(response.content)
    else:
        # Without a Content-Encoding the bytes as sent are the body, and httpx's decoding
        # layers would only pass them along (a tenth of a small request's CPU).
        encoded = decoded and "content-encoding" in response.headers
        chunks = response.aiter_bytes() if encoded else response.aiter_raw()
    # One growing buffer, not a list of chunks joined at the end: the body is held once.
    # This loop reads the agent's tens of megabytes of series: keep it this lean.
    body = bytearray()
    async for chunk in chunks:
        if len(body) + len(chunk) > limit:
            raise BodyTooLargeError(limit)
        if memory is not None and len(body) + len(chunk) > memory.held:
            await memory.grow_to(len(body) + len(chunk))
        body += chunk
    # A small body as bytes; a big one is not copied again.
    return bytes(body) if len(body) < 65536 else body


async def _one_chunk(content: bytes) -> AsyncIterator[bytes]:
    yield content


# ------------------------------------------------------------- what went wrong


#: Exceptions followed down a chain at the most (a chain can be made to loop or to branch).
MAX_CAUSES = 32


def causes(err: BaseException) -> Iterator[BaseException]:
    """``err`` and what it wraps (urllib3's ``reason``, then causes, then contexts), each once."""
    seen: set[int] = set()
    todo: list[BaseException] = [err]
    while todo and len(seen) < MAX_CAUSES:
        cause = todo.pop()
        if id(cause) in seen:
            continue
        seen.add(id(cause))
        yield cause
        inner = getattr(cause, "reason", None)  # urllib3's MaxRetryError keeps it here
        todo += [
            c
            for c in (cause.__context__, cause.__cause__, inner)
            if isinstance(c, BaseException) and id(c) not in seen
        ]


def connect_failure(err: BaseException) -> str:
    """A :class:`ConnectFailure`, found down the chain of causes to the system's error
    (``TLS certificate verification failed: ...`` carries what the check said)."""
    for cause in causes(err):
        if isinstance(cause, ssl.SSLCertVerificationError):
            return f"{ConnectFailure.TLS_CERTIFICATE}: {cause.verify_message}"
        if isinstance(cause, ssl.SSLError):
            return ConnectFailure.TLS_HANDSHAKE
        if isinstance(cause, socket.gaierror):
            return ConnectFailure.NO_HOST_NAME
        code = getattr(cause, "errno", None)
        if isinstance(cause, ConnectionRefusedError) or code == errno.ECONNREFUSED:
            return ConnectFailure.REFUSED
        if code == errno.ENETUNREACH:
            return ConnectFailure.NETWORK_UNREACHABLE
        if code == errno.EHOSTUNREACH:
            return ConnectFailure.HOST_UNREACHABLE
    text = str(err).lower()
    if "refused" in text:
        return ConnectFailure.REFUSED
    if "name or service" in text or "nodename" in text or "getaddrinfo" in text:
        return ConnectFailure.NO_HOST_NAME
    return ConnectFailure.FAILED


@dataclass(frozen=True)
class Failure:
    """What became of a request that got no usable answer."""

    #: The agent's label for it.
    reason: RequestFailure
    #: A few stable words for a lockfile or a message (no address, no timing).
    words: str
    #: Whether another try could go otherwise (a timeout, a refused or reset connection).
    transient: bool

    @property
    def unreached(self) -> bool:
        """Whether this machine never got through to the server (what sync's
        unreachable-fleet guard counts): timed out, refused, unresolved, unroutable; a TLS
        failure or a server that broke off was reached."""
        return self.reason is RequestFailure.TIMEOUT or self.words in UNREACHABLE_WORDS


def describe_failure(err: BaseException) -> Failure | None:
    """The failure ``err`` stands for, or None when it is not one of a request's: httpx's
    exceptions, and those of :mod:`dsf_transport.http1` (named and ranked alike)."""
    # an httpx exception exists only once httpx is loaded: a failed plain request of the
    # agent must not load it
    httpx = sys.modules.get("httpx")
    if isinstance(err, TimeoutError | http1_errors.TimeoutException) or (
        httpx is not None and isinstance(err, httpx.TimeoutException)
    ):
        return Failure(RequestFailure.TIMEOUT, "timed out", transient=True)
    if isinstance(err, BodyTooLargeError):
        return Failure(RequestFailure.TOO_LARGE, str(err), transient=False)
    if isinstance(err, http1_errors.TransportError):
        return _transport_failure(err, http1_errors)
    if httpx is not None and isinstance(err, httpx.HTTPError):
        return _transport_failure(err, httpx)
    return None


def _transport_failure(err: BaseException, kinds: Any) -> Failure:
    """The failure of a request's ``err``, one of ``kinds``' exceptions (httpx or
    :mod:`dsf_transport.http1_errors`)."""
    if isinstance(err, kinds.ConnectError):
        return Failure(RequestFailure.UNREACHABLE, connect_failure(err), transient=True)
    if isinstance(err, kinds.RemoteProtocolError):
        if "without sending" in str(err):
            words = "server closed the connection without a response"
        else:
            words = "invalid HTTP response"
        return Failure(RequestFailure.TRANSPORT_ERROR, words, transient=True)
    if isinstance(err, kinds.NetworkError):
        return Failure(RequestFailure.TRANSPORT_ERROR, "connection reset", transient=True)
    if isinstance(err, getattr(kinds, "UnsupportedProtocol", ())):
        words = "only http and https URLs are allowed"
        return Failure(RequestFailure.TRANSPORT_ERROR, words, transient=False)
    words = f"request failed ({type(err).__name__})"
    return Failure(RequestFailure.TRANSPORT_ERROR, words, transient=False)
