"""The agent's one shared HTTP client, its request slots, and the JSON of its answers.

What every dsf client shares (no redirects, no cookies, the capped reader, naming a
failure) is :mod:`dsf_transport.http`; here is what only the agent needs: a big pool, the
lean plain-HTTP transport, ``--resolve``, and a deadline per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import weakref
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import quote_plus, urlsplit

import httpx

from agent.errors import AgentError
from dsf_contract.failures import RequestFailure, http_status_reason
from dsf_transport.connect_transport import ConnectToTransport
from dsf_transport.http import (
    MemoryHook,
    UserAgent,
    describe_failure,
    new_client,
    proxy_configured,
    read_capped,
)
from dsf_transport.http1_heads import write_head
from dsf_transport.plainhttp import PlainHTTPTransport

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
#: The plain-HTTP transport :func:`make_client` gave a client, when it gave it one: every
#: ``http://`` request of that client goes to it (no proxy in the environment, no
#: ``--resolve``), so :func:`stream` needs no httpx internals to know where one goes.
_PLAIN: weakref.WeakKeyDictionary[httpx.AsyncClient, PlainHTTPTransport] = (
    weakref.WeakKeyDictionary()
)


def make_client(
    timeout: float,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    connect_to: Mapping[tuple[str, int], tuple[str, int]] | None = None,
) -> httpx.AsyncClient:
    """An ``AsyncClient`` with pooling and an explicit timeout for every phase of a request.

    Redirects are not followed: a Prometheus or Scoring API that redirects is misconfigured,
    and following one could send a bearer token to another host. ``connect_to`` (the
    agent's ``--resolve``) connects elsewhere for some ``host:port`` while URLs, ``Host``
    headers and TLS names stay as the summaries wrote them.

    Without a proxy in the environment, plain ``http://`` goes through the lean
    :class:`PlainHTTPTransport` (a fraction of httpcore's CPU per request) and ``https://``
    through httpx's own transport; with a proxy, httpx's transports handle everything, as
    they honour ``HTTPS_PROXY``/``NO_PROXY``.
    """
    limits = httpx.Limits(
        max_connections=POOL_CONNECTIONS, max_keepalive_connections=64, keepalive_expiry=30.0
    )
    if connect_to:

        def make_transport() -> httpx.AsyncBaseTransport:
            return httpx.AsyncHTTPTransport(limits=limits, trust_env=True)

        transport = ConnectToTransport(
            transport if transport is not None else make_transport(),
            connect_to,
            owns_inner=transport is None,
            make_transport=make_transport if transport is None else None,
        )
    plain = None
    if not connect_to and transport is None and not proxy_configured():
        transport = plain = PlainHTTPTransport(
            lambda: httpx.AsyncHTTPTransport(limits=limits, trust_env=True),
            max_idle_per_host=64,
            keepalive_expiry=30.0,
        )
    client = new_client(
        UserAgent.AGENT,
        transport=transport,
        timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
        limits=limits,
        trust_env=True,  # honours HTTPS_PROXY/NO_PROXY set by the addon deployment
    )
    if plain is not None:
        _PLAIN[client] = plain
    return client


def plain_transport(client: httpx.AsyncClient) -> PlainHTTPTransport | None:
    """The plain-HTTP transport every ``http://`` request of ``client`` goes to, if any."""
    return _PLAIN.get(client)


@functools.lru_cache(maxsize=4096)
def _host_of(url: str) -> str:
    """``host:port`` of ``url`` as its slots count it (a few endpoints, every cycle)."""
    return urlsplit(url).netloc.lower()


@dataclass(frozen=True)
class _Endpoint:
    """A summary's endpoint, parsed once (the same few endpoints serve every cycle)."""

    url: httpx.URL
    #: without a query or fragment of its own: the parameters are the whole query
    bare: bool
    #: (host, port) when a request can go to the plain-HTTP transport as bytes
    origin: tuple[str, int] | None


@functools.lru_cache(maxsize=4096)
def _endpoint(endpoint: str) -> _Endpoint:
    url = httpx.URL(endpoint)
    bare = "?" not in endpoint and "#" not in endpoint
    plain = bare and url.scheme == "http"
    return _Endpoint(url=url, bare=bare, origin=(url.host, url.port or 80) if plain else None)


def _request_url(endpoint: _Endpoint, params: Mapping[str, str] | None) -> httpx.URL:
    """``endpoint`` with ``params`` as its query, encoded as httpx encodes them."""
    url = endpoint.url
    if not params:
        return url
    if not endpoint.bare:
        return url.copy_merge_params(params)
    return url.copy_with(raw_path=_target(endpoint, params))


def _target(endpoint: _Endpoint, params: Mapping[str, str] | None) -> bytes:
    """The request target of a bare ``endpoint`` with ``params`` as its query."""
    path = endpoint.url.raw_path
    if not params:
        return path
    query = "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in params.items())
    return path + b"?" + query.encode("ascii")


def _quoted(text: str) -> str:
    """``urlencode``'s quoting of one name or value; short ones are remembered (a scorer
    sends the same query every cycle, and scorers share the names and current seconds),
    within a few MB whatever the configuration holds."""
    return _quoted_short(text) if len(text) <= 2048 else quote_plus(text)


_quoted_short = functools.lru_cache(maxsize=1024)(quote_plus)


def _request_headers(
    client: httpx.AsyncClient, headers: Mapping[str, str]
) -> list[tuple[bytes, bytes]]:
    """The client's default headers, overridden by ``headers`` (names compared as HTTP
    compares them)."""
    own = [(name.encode("ascii"), value.encode("latin-1")) for name, value in headers.items()]
    names = {name.lower() for name, _ in own}
    return [item for item in client.headers.raw if item[0].lower() not in names] + own


@contextlib.asynccontextmanager
async def stream(
    client: httpx.AsyncClient,
    method: str,
    endpoint: str,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    content: bytes | None = None,
) -> AsyncIterator[httpx.Response]:
    """``client.stream(method, endpoint, ...)``, with the client's timeouts and default
    headers.

    A plain ``http://`` request of a client with the plain-HTTP transport
    (:func:`plain_transport`) goes to it as bytes, past httpx's request, authentication,
    redirect and cookie layers (which the agent's client has turned off, see
    :func:`new_client`): building and walking them, then an ``httpx.URL`` and
    ``httpx.Request``, cost most of the agent's CPU at 400 requests a second. Its read and
    write phases have no timeout of their own there: every call is made inside
    :meth:`RequestSlots.take`, whose deadline (the same request timeout) bounds the whole
    exchange. Any other request (``https``, a proxy, ``--resolve``) goes through httpx's
    public ``send``, which picks the transport (its mounts) itself."""
    target = _endpoint(endpoint)
    plain = _PLAIN.get(client)
    if target.origin is not None and plain is not None:
        response = await plain.send(
            target.origin,
            _plain_head(client, method, target, params, headers, content),
            content or b"",
            {"connect": client.timeout.connect},  # the slot's deadline bounds the rest
        )
    else:
        request = client.build_request(
            method, _request_url(target, params), headers=headers, content=content
        )
        response = await client.send(request, stream=True)
    try:
        yield response
    finally:
        await response.aclose()


def _plain_head(
    client: httpx.AsyncClient,
    method: str,
    endpoint: _Endpoint,
    params: Mapping[str, str] | None,
    headers: Mapping[str, str],
    content: bytes | None,
) -> bytes:
    """The head httpx writes for this request, in its order: ``Host`` (and ``Content-Length:
    0`` for a method that carries a body but has none), the client's default headers
    overridden by ``headers``, then the body's ``Content-Length``."""
    fields = [(b"Host", endpoint.url.netloc)]
    if content is None and method in ("POST", "PUT", "PATCH"):
        fields.append((b"Content-Length", b"0"))
    fields += _request_headers(client, headers)
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

    @contextlib.asynccontextmanager
    async def take(self, url: str) -> AsyncIterator[None]:
        """Hold a slot for one request to ``url``; ``TimeoutError`` when the deadline passes."""
        host = _host_of(url)
        per_host = self._hosts.get(host)
        if per_host is None:
            per_host = self._hosts[host] = asyncio.Semaphore(self._per_host)
        async with per_host, self._semaphore:
            async with asyncio.timeout(self.deadline):
                yield


async def read_answer(
    response: httpx.Response,
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
    return await read_capped(response, limit, memory=memory)


@contextlib.contextmanager
def request_failures(service: str, error: type[AgentError]) -> Iterator[None]:
    """Turn what can go wrong with one request to ``service`` into ``error`` with a reason."""
    try:
        yield
    except error:
        raise
    except AgentError as err:
        raise error(f"{service} {err}", reason=err.reason) from err
    except Exception as err:  # a request's failures are turned; anything else goes on
        failure = describe_failure(err)
        if failure is None:
            raise
        raise error(_failure_message(service, err, failure.reason), reason=failure.reason) from err


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
