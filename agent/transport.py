"""The agent's one shared HTTP client, its request slots, and the JSON of its answers.

What every dsf client shares (no redirects, no cookies, the capped reader, naming a
failure) is :mod:`dsf_transport.http`; here is what only the agent needs: the lean
plain-HTTP pool for ``http://``, httpx for the rest (with a big pool and ``--resolve``),
and a deadline per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from ipaddress import IPv6Address
from types import TracebackType
from typing import TYPE_CHECKING
from urllib.parse import quote_plus, urlsplit

from agent.errors import AgentError
from dsf_contract.failures import RequestFailure, http_status_reason
from dsf_transport import http1
from dsf_transport.http import (
    MemoryHook,
    UserAgent,
    describe_failure,
    new_client,
    proxy_configured,
    read_capped,
)
from dsf_transport.http1_heads import write_head

if TYPE_CHECKING:
    import httpx

#: Connections of the shared pool.
POOL_CONNECTIONS = 256
#: Requests in flight at once, kept below the pool size. Thousands of scorers against a
#: hanging API would otherwise all queue inside httpcore's pool, which rescans its whole
#: queue on every change: the event loop spins at 100 % CPU, the health endpoints and
#: SIGTERM go unanswered. Waiting on a semaphore costs nothing per waiter.
MAX_IN_FLIGHT = 192
#: Requests in flight to one host (``host:port``): a hanging API with hundreds of scorers
#: must leave slots to the others, which would otherwise wait behind it.
MAX_IN_FLIGHT_PER_HOST = 64
#: Idle connections kept per host, and for how long (seconds).
MAX_IDLE_PER_HOST, KEEPALIVE_EXPIRY = 64, 30.0
#: The headers every plain request carries (before its own): those httpx's client sends
#: (the heads are the same, ``tests/agent/test_agent_stream.py``), offering the encodings
#: both undo (httpx offers more only where ``brotli`` or ``zstandard`` is installed).
DEFAULT_HEADERS = {
    "Accept": "*/*",
    "Accept-Encoding": "gzip, deflate",
    "Connection": "keep-alive",
    "User-Agent": str(UserAgent.AGENT),
}
_DEFAULT_FIELDS = [
    (name.encode("ascii"), value.encode("ascii")) for name, value in DEFAULT_HEADERS.items()
]


class AgentClient:
    """The agent's HTTP client: its timeouts, the plain-HTTP pool and httpx's client.

    Without a proxy in the environment, plain ``http://`` requests go as bytes to the lean
    pool of :mod:`dsf_transport.http1` (a fraction of httpx's CPU per request, and httpx
    is not even loaded: about 6 MB of memory); anything else (``https``, a proxy,
    ``--resolve``, a ``transport`` a test gives) through an httpx client made at its
    first request (:meth:`httpx_client`).
    """

    def __init__(
        self,
        timeout: float,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        connect_to: Mapping[tuple[str, int], tuple[str, int]] | None = None,
    ) -> None:
        self.timeout = timeout
        #: httpx's timeout phases for a plain request: the slot's deadline bounds the rest
        self.plain_timeouts = {"connect": min(timeout, 10.0)}
        self._transport = transport
        self._connect_to = connect_to
        self.plain: http1.Pool | None = None
        if transport is None and not connect_to and not proxy_configured():
            self.plain = http1.Pool(
                max_idle_per_host=MAX_IDLE_PER_HOST, keepalive_expiry=KEEPALIVE_EXPIRY
            )
        self._httpx: httpx.AsyncClient | None = None

    def httpx_client(self) -> httpx.AsyncClient:
        """httpx's client, made at the first request that needs it.

        Redirects are not followed: a Prometheus or Scoring API that redirects is
        misconfigured, and following one could send a bearer token to another host.
        ``connect_to`` (the agent's ``--resolve``) connects elsewhere for some
        ``host:port`` while URLs, ``Host`` headers and TLS names stay as the summaries
        wrote them. ``HTTPS_PROXY``/``NO_PROXY`` set by the addon deployment are honoured.
        """
        if self._httpx is None:
            self._httpx = _new_httpx_client(self.timeout, self._transport, self._connect_to)
        return self._httpx

    async def aclose(self) -> None:
        """Close the idle connections and httpx's client."""
        if self.plain is not None:
            self.plain.close()
        if self._httpx is not None:
            await self._httpx.aclose()

    async def __aenter__(self) -> AgentClient:
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.aclose()


def _new_httpx_client(
    timeout: float,
    transport: httpx.AsyncBaseTransport | None,
    connect_to: Mapping[tuple[str, int], tuple[str, int]] | None,
) -> httpx.AsyncClient:
    """An ``AsyncClient`` with a big pool and an explicit timeout for every phase."""
    import httpx

    limits = httpx.Limits(
        max_connections=POOL_CONNECTIONS,
        max_keepalive_connections=MAX_IDLE_PER_HOST,
        keepalive_expiry=KEEPALIVE_EXPIRY,
    )
    if connect_to:
        from dsf_transport.connect_transport import ConnectToTransport

        def make_transport() -> httpx.AsyncBaseTransport:
            return httpx.AsyncHTTPTransport(limits=limits, trust_env=True)

        transport = ConnectToTransport(
            transport if transport is not None else make_transport(),
            connect_to,
            owns_inner=transport is None,
            make_transport=make_transport if transport is None else None,
        )
    return new_client(
        UserAgent.AGENT,
        transport=transport,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        limits=limits,
        trust_env=True,  # honours HTTPS_PROXY/NO_PROXY set by the addon deployment
    )


def make_client(
    timeout: float,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    connect_to: Mapping[tuple[str, int], tuple[str, int]] | None = None,
) -> AgentClient:
    """The agent's client (:class:`AgentClient`), with ``timeout`` for each request."""
    return AgentClient(timeout, transport=transport, connect_to=connect_to)


def plain_transport(client: AgentClient) -> http1.Pool | None:
    """The plain-HTTP pool every plain ``http://`` request of ``client`` goes to, if any."""
    return client.plain


@functools.lru_cache(maxsize=4096)
def _host_of(url: str) -> str:
    """``host:port`` of ``url`` as its slots count it (a few endpoints, every cycle)."""
    return urlsplit(url).netloc.lower()


#: A host the plain pool takes as httpx would write it: a lower-case name or IPv4
#: address, or an IPv6 address in brackets (checked canonical below).
_PLAIN_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\]")
#: A path httpx sends as it is written (nothing to percent-encode).
_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._~/-]*")


@dataclass(frozen=True)
class _Endpoint:
    """A summary's endpoint, parsed once (the same few endpoints serve every cycle)."""

    text: str
    #: without a query or fragment of its own: the parameters are the whole query
    bare: bool
    #: (host, port) when a request can go to the plain pool as bytes
    origin: tuple[str, int] | None
    #: the ``Host`` header and the path, for the plain pool
    netloc: bytes = b""
    path: bytes = b""


@functools.lru_cache(maxsize=4096)
def _endpoint(endpoint: str) -> _Endpoint:
    bare = "?" not in endpoint and "#" not in endpoint
    origin = _plain_origin(endpoint) if bare else None
    if origin is None:
        return _Endpoint(text=endpoint, bare=bare, origin=None)
    host, port, path = origin
    netloc = host if port == 80 else f"{host}:{port}"
    return _Endpoint(
        text=endpoint,
        bare=bare,
        origin=(host.strip("[]"), port),
        netloc=netloc.encode("ascii"),
        path=path.encode("ascii"),
    )


def _plain_origin(endpoint: str) -> tuple[str, int, str] | None:
    """Host, port and path of an ``http://`` endpoint that httpx would send as written
    (None for anything else: those requests go through httpx)."""
    parts = urlsplit(endpoint)
    if parts.scheme != "http" or "@" in parts.netloc:
        return None
    if parts.netloc.startswith("["):
        address, bracket, after = parts.netloc[1:].partition("]")
        host, colon, port_text = f"[{address}]", after[:1], after[1:]
        if not bracket or after[:1] not in ("", ":") or not _canonical_ipv6(address):
            return None
    else:
        host, colon, port_text = parts.netloc.partition(":")
    path = parts.path or "/"
    if _PLAIN_HOST.fullmatch(host) is None or _PLAIN_PATH.fullmatch(path) is None:
        return None
    if not colon:
        return host, 80, path
    if not port_text.isdigit() or port_text.startswith("0") or int(port_text) > 65535:
        return None
    return host, int(port_text), path


def _canonical_ipv6(text: str) -> bool:
    try:
        return str(IPv6Address(text)) == text
    except ValueError:
        return False


def _request_url(endpoint: _Endpoint, params: Mapping[str, str] | None) -> httpx.URL:
    """``endpoint`` with ``params`` as its query, encoded as httpx encodes them."""
    import httpx

    url = httpx.URL(endpoint.text)
    if not params:
        return url
    if not endpoint.bare:
        return url.copy_merge_params(params)
    return url.copy_with(raw_path=url.raw_path + _query(params))


def _target(endpoint: _Endpoint, params: Mapping[str, str] | None) -> bytes:
    """The request target of a bare, plain ``endpoint`` with ``params`` as its query."""
    return endpoint.path + _query(params) if params else endpoint.path


def _query(params: Mapping[str, str]) -> bytes:
    """``?`` and ``params`` encoded as httpx encodes them."""
    query = "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in params.items())
    return b"?" + query.encode("ascii")


def _quoted(text: str) -> str:
    """``urlencode``'s quoting of one name or value; short ones are remembered (a scorer
    sends the same query every cycle, and scorers share the names and current seconds),
    within a few MB whatever the configuration holds."""
    return _quoted_short(text) if len(text) <= 2048 else quote_plus(text)


_quoted_short = functools.lru_cache(maxsize=1024)(quote_plus)


def _request_fields(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """The default headers, overridden by ``headers`` (names compared as HTTP compares
    them)."""
    own = [(name.encode("ascii"), value.encode("latin-1")) for name, value in headers.items()]
    if not own:
        return _DEFAULT_FIELDS
    names = {name.lower() for name, _ in own}
    return [item for item in _DEFAULT_FIELDS if item[0].lower() not in names] + own


@contextlib.asynccontextmanager
async def stream(
    client: AgentClient,
    method: str,
    endpoint: str,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> AsyncIterator[http1.Response | httpx.Response]:
    """The response to one request, its body still to be read (:func:`read_answer`).

    A plain ``http://`` request of a client with the plain pool goes to it as bytes: the
    head httpx would write (:func:`_plain_head`), without httpx's request, URL, response
    and header objects, which cost most of the agent's CPU at 400 requests a second. Its
    read and write phases have no timeout of their own there: every call is made inside
    :meth:`RequestSlots.take`, whose deadline (the same request timeout) bounds the whole
    exchange. Any other request (``https``, a proxy, ``--resolve``) goes through httpx's
    public ``send``, which picks the transport (its mounts) itself."""
    target = _endpoint(endpoint)
    plain = client.plain
    response: http1.Response | httpx.Response
    if target.origin is not None and plain is not None:
        response = await plain.send(
            target.origin,
            _plain_head(method, target, params, headers, content),
            content or b"",
            client.plain_timeouts,
        )
        try:
            yield response
        finally:
            response.close()
        return
    via = client.httpx_client()
    request = via.build_request(
        method, _request_url(target, params), headers=headers, content=content
    )
    response = await via.send(request, stream=True)
    try:
        yield response
    finally:
        await response.aclose()


def _plain_head(
    method: str,
    endpoint: _Endpoint,
    params: Mapping[str, str] | None,
    headers: Mapping[str, str],
    content: bytes | None,
) -> bytes:
    """The head httpx writes for this request, in its order: ``Host`` (and ``Content-Length:
    0`` for a method that carries a body but has none), the default headers overridden by
    ``headers``, then the body's ``Content-Length``."""
    fields = [(b"Host", endpoint.netloc)]
    if content is None and method in ("POST", "PUT", "PATCH"):
        fields.append((b"Content-Length", b"0"))
    fields += _request_fields(headers)
    if content is not None:
        fields.append((b"Content-Length", b"%d" % len(content)))
    return write_head(method.encode("ascii"), _target(endpoint, params), fields)


class RequestSlots:
    """At most ``limit`` requests in flight (``per_host`` to one host), each bounded by a
    deadline for the whole exchange.

    httpx's timeouts apply per phase (connect, each read): a server that drips a byte
    every few seconds would hold a request, and a slot, for ever. The deadline covers
    connecting, sending, and reading the whole body; waiting for a slot is not counted.
    """

    def __init__(
        self, deadline: float, limit: int = MAX_IN_FLIGHT, per_host: int = MAX_IN_FLIGHT_PER_HOST
    ) -> None:
        if limit >= POOL_CONNECTIONS:
            raise ValueError(f"limit must stay below the pool's {POOL_CONNECTIONS} connections")
        self.deadline = deadline
        self._semaphore = asyncio.Semaphore(limit)
        self._per_host = per_host
        self._hosts: dict[str, asyncio.Semaphore] = {}

    def take(self, url: str) -> _Slot:
        """Hold a slot for one request to ``url`` (``async with``); ``TimeoutError`` when
        the deadline passes."""
        host = _host_of(url)
        per_host = self._hosts.get(host)
        if per_host is None:
            per_host = self._hosts[host] = asyncio.Semaphore(self._per_host)
        return _Slot(per_host, self._semaphore, self.deadline)


class _Slot:
    """One request's slot: its host's semaphore, then the agent's, then the deadline (a
    class rather than a generator: 400 of them a second)."""

    __slots__ = ("_all", "_deadline", "_host", "_timeout")

    def __init__(self, host: asyncio.Semaphore, every: asyncio.Semaphore, deadline: float) -> None:
        self._host = host
        self._all = every
        self._deadline = deadline
        self._timeout: asyncio.Timeout | None = None

    async def __aenter__(self) -> None:
        await self._host.acquire()
        try:
            await self._all.acquire()
        except BaseException:
            self._host.release()
            raise
        self._timeout = timeout = asyncio.timeout(self._deadline)
        try:
            await timeout.__aenter__()
        except BaseException:
            self._release()
            raise

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        assert self._timeout is not None
        try:
            await self._timeout.__aexit__(kind, error, traceback)
        finally:
            self._release()

    def _release(self) -> None:
        self._all.release()
        self._host.release()


async def fetch_answer(
    client: AgentClient,
    slots: RequestSlots,
    method: str,
    endpoint: str,
    *,
    service: str,
    error: type[AgentError],
    limit: int,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    content: bytes | None = None,
    memory: MemoryHook | None = None,
) -> bytes | bytearray:
    """One request to ``service`` within a slot of ``slots``: the body of its 200 answer
    (:func:`read_answer`), or ``error`` (:func:`request_failures`).

    What :func:`stream` does, with a plain request sent and read without a context
    manager (a cycle's two requests, 400 a second)."""
    try:
        async with slots.take(endpoint):
            target = _endpoint(endpoint)
            plain = client.plain
            if target.origin is None or plain is None:
                async with stream(
                    client, method, endpoint, headers=headers, params=params, content=content
                ) as answer:
                    return await read_answer(answer, service, error, limit, memory)
            head = _plain_head(method, target, params, headers, content)
            response = await plain.send(target.origin, head, content or b"", client.plain_timeouts)
            try:
                return await read_answer(response, service, error, limit, memory)
            finally:
                response.close()
    except Exception as err:
        turned = _turned(service, error, err)
        if turned is err:
            raise
        raise turned from err


async def read_answer(
    response: http1.Response | httpx.Response,
    service: str,
    error: type[AgentError],
    limit: int,
    memory: MemoryHook | None = None,
) -> bytes | bytearray:
    """The body of ``service``'s answer, read within ``limit`` bytes (and ``memory``);
    ``error`` with the status's reason when the answer is not a 200."""
    if response.status_code != 200:
        raise error(
            f"{service} answered HTTP {response.status_code}",
            reason=http_status_reason(response.status_code),
        )
    if isinstance(response, http1.Response):
        return await response.read(limit, memory=memory)
    return await read_capped(response, limit, memory=memory)


@contextlib.contextmanager
def request_failures(service: str, error: type[AgentError]) -> Iterator[None]:
    """Turn what can go wrong with one request to ``service`` into ``error`` with a reason."""
    try:
        yield
    except Exception as err:
        turned = _turned(service, error, err)
        if turned is err:
            raise
        raise turned from err


def _turned(service: str, error: type[AgentError], err: Exception) -> Exception:
    """``err`` as ``error`` with a reason when it is a request's failure; else ``err``
    itself (already an ``error``, or a bug, which goes on)."""
    if isinstance(err, error):
        return err
    if isinstance(err, AgentError):
        return error(f"{service} {err}", reason=err.reason)
    failure = describe_failure(err)
    if failure is None:
        return err
    return error(_failure_message(service, err, failure.reason), reason=failure.reason)


def _failure_message(service: str, err: Exception, reason: RequestFailure) -> str:
    if isinstance(err, TimeoutError):  # the whole-request deadline of RequestSlots
        return f"{service} did not answer in time"
    if reason is RequestFailure.TIMEOUT:
        return f"{service} timed out ({type(err).__name__})"
    if reason is RequestFailure.UNREACHABLE:
        return f"{service} unreachable ({err})"
    if reason is RequestFailure.TOO_LARGE:  # the response size cap
        return f"{service} {err}"
    # reset, cut-off body, protocol violation
    return f"{service} connection failed ({type(err).__name__}: {err})"
