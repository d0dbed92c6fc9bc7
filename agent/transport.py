"""The agent's one shared HTTP client, its request slots, and the JSON of its answers.

What every dsf client shares (no redirects, no cookies, the capped reader, naming a
failure) is :mod:`dsf_transport.http`; here is what only the agent needs: the lean
plain-HTTP pool for ``http://``, httpx for the rest (with a big pool and ``--resolve``),
and a deadline per request.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import TYPE_CHECKING

from agent.errors import AgentError
from agent.request_heads import host_of, parse_endpoint, plain_head, request_url
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
    head httpx would write (:func:`plain_head`), without httpx's request, URL, response
    and header objects, which cost most of the agent's CPU at 400 requests a second. Its
    read and write phases have no timeout of their own there: every call is made inside
    :meth:`RequestSlots.take`, whose deadline (the same request timeout) bounds the whole
    exchange. Any other request (``https``, a proxy, ``--resolve``) goes through httpx's
    public ``send``, which picks the transport (its mounts) itself."""
    target = parse_endpoint(endpoint)
    plain = client.plain
    response: http1.Response | httpx.Response
    if target.origin is not None and plain is not None:
        response = await plain.send(
            target.origin,
            plain_head(method, target, params, headers, content),
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
        method, request_url(target, params), headers=headers, content=content
    )
    response = await via.send(request, stream=True)
    try:
        yield response
    finally:
        await response.aclose()


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
        host = host_of(url)
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
            target = parse_endpoint(endpoint)
            plain = client.plain
            if target.origin is None or plain is None:
                async with stream(
                    client, method, endpoint, headers=headers, params=params, content=content
                ) as answer:
                    return await read_answer(answer, service, error, limit, memory)
            head = plain_head(method, target, params, headers, content)
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
