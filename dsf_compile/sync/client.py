"""The HTTP client ``sync`` requests through: lean plain http, https on first use, ``--resolve``.

Requests run concurrently on one ``httpx.AsyncClient`` (bounded by sync's semaphore, not by
the pool): plain http over :mod:`dsf_transport.plainhttp`, https over httpcore, made when a
first https request needs it; ``connect_to`` redirects connections as curl's ``--connect-to``.
No environment proxies, no netrc, no automatic redirects.

A plain-http GET that ``connect_to`` does not map skips the client's layers (building an
``httpx.Request``, auth and redirect hooks, the cookie jar, a second stream wrapper: a
third of a small request's CPU) and hands the transport the head the client would have
written, the client's own headers after ``Host``: the same bytes on the wire, the same
answer, the same errors.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import httpx

from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_transport.connect_transport import ConnectToTransport
from dsf_transport.http import (
    UserAgent,
    new_client,
)
from dsf_transport.http1_heads import write_head
from dsf_transport.plainhttp import PlainHTTPTransport

ConnectTo = Mapping[tuple[str, int], tuple[str, int]]
"""``(host, port)`` as named in URLs → ``(address, port)`` to connect to instead."""


class SyncClient:
    """Sync's GET: through the lean transport when it serves the URL alone, else the client."""

    def __init__(
        self, client: httpx.AsyncClient, plain: PlainHTTPTransport | None, connect_to: ConnectTo
    ) -> None:
        self._client = client
        self._plain = plain
        # What ConnectToTransport rewrites (its keys, as it normalizes them): those go the long way.
        self._mapped = frozenset((host.lower(), port) for host, port in connect_to)
        # The headers httpx's Request puts after Host: the client's, in its order.
        self._fields = tuple(client.headers.raw)

    async def get(self, url: httpx.URL, timeout: httpx.Timeout) -> httpx.Response:
        """The answer to ``GET url``, its body still to be read; the caller closes it."""
        plain = self._plain
        origin = (url.host, url.port or 80)
        if plain is None or url.scheme != "http" or (origin[0].lower(), origin[1]) in self._mapped:
            request = self._client.build_request("GET", url, timeout=timeout)
            return await self._client.send(request, stream=True)
        head = write_head(b"GET", url.raw_path, ((b"Host", url.netloc), *self._fields))
        return await plain.send(origin, head, b"", timeout.as_dict())


@asynccontextmanager
async def open_client(
    settings: SyncSettings, connect_to: ConnectTo, transport: httpx.AsyncBaseTransport | None
) -> AsyncIterator[SyncClient]:
    """The client of one sync; ``transport`` (tests') replaces the default and is not closed."""
    tls: list[ssl.SSLContext] = []

    def make_transport() -> httpx.AsyncBaseTransport:
        # One TLS context (CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR) for every pool:
        # loading the CA bundle costs tens of milliseconds, so only a first https
        # request pays for it (and for importing httpcore).
        if not tls:
            tls.append(httpx.create_ssl_context())
        # The semaphore bounds concurrency; the pool must not add a second, smaller bound.
        return httpx.AsyncHTTPTransport(
            verify=tls[0],
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
        )

    plain: PlainHTTPTransport | None = None
    inner = transport
    if inner is None:
        # Plain http goes through the lean keep-alive transport: httpcore's pool rescans
        # every connection for each of hundreds of concurrent requests, and importing it
        # (with anyio, and trio when installed) costs a sync a tenth of a second.
        inner = plain = PlainHTTPTransport(
            _OnFirstUse(make_transport), max_idle_per_host=settings.concurrency
        )
    wrapper = ConnectToTransport(
        inner,
        connect_to,
        owns_inner=transport is None,
        make_transport=make_transport if transport is None else None,
    )
    # Redirects are followed by hand, same origin only; no environment proxies or netrc:
    # sync connects where it is told. Each request carries its own timeout (the budget).
    client = new_client(
        UserAgent.SYNC,
        transport=wrapper,
        timeout=httpx.Timeout(settings.timeoutSeconds),
        headers={"Accept": "application/json", "Accept-Encoding": "identity"},
    )
    async with client:
        yield SyncClient(client, plain, connect_to)


class _OnFirstUse(httpx.AsyncBaseTransport):
    """A transport made when the first request needs it (``https``), and closed if made."""

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make = make
        self._made: httpx.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._made is None:
            self._made = self._make()
        return await self._made.handle_async_request(request)

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.aclose()
