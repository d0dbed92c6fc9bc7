"""The HTTP client ``sync`` requests through: lean plain http, httpx for the rest, ``--resolve``.

Requests run concurrently (bounded by sync's semaphore, not by a pool). A plain-http GET
that ``connect_to`` does not map goes as bytes to the keep-alive pool of
:mod:`dsf_transport.http1`: the head httpx's client would write (``Host``, then the
client's own headers), the same bytes on the wire, its answer and failures named as
httpx's are. When its URL is one httpx would send as written
(:mod:`dsf_transport.plain_target`), httpx is not even imported: a fleet of such scorers
sends its first requests without loading it (tens of milliseconds of every sync).

Everything else (``https``, a host ``connect_to`` maps, a URL httpx must parse, a redirect
target, a transport a test gives) goes through an ``httpx.AsyncClient`` made at its first
request: plain http there over the same pool (:mod:`dsf_transport.plainhttp`), https over
httpcore with one TLS context; ``connect_to`` redirects connections as curl's
``--connect-to``. No environment proxies, no netrc, no automatic redirects.
"""

from __future__ import annotations

import ssl
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_transport.http import UserAgent
from dsf_transport.http1 import Pool, Response
from dsf_transport.http1_errors import TransportError
from dsf_transport.http1_heads import write_head
from dsf_transport.plain_target import PlainTarget, plain_target

if TYPE_CHECKING:
    import httpx

    #: Where a GET goes: a plain URL read without httpx, or one httpx parsed.
    Target = PlainTarget | httpx.URL
    #: An answer, its body still to be read: from the lean pool, or from httpx's client.
    Answer = Response | httpx.Response

ConnectTo = Mapping[tuple[str, int], tuple[str, int]]
"""``(host, port)`` as named in URLs → ``(address, port)`` to connect to instead."""

#: The headers sync's client sends (:func:`_new_client`), as its ``headers.raw`` holds
#: them: httpx's defaults kept (``Connection``) or replaced (``User-Agent``, then ours, each
#: set anew at the end). A plain GET carries them after ``Host``, as httpx's request
#: would (``tests/test_sync.py`` compares the heads, ``tests/test_plain_target.py`` these).
HEADERS = {"Accept": "application/json", "Accept-Encoding": "identity"}
FIELDS = (
    (b"Connection", b"keep-alive"),
    (b"User-Agent", str(UserAgent.SYNC).encode("ascii")),
    (b"Accept", b"application/json"),
    (b"Accept-Encoding", b"identity"),
)


class SyncClient:
    """Sync's GET: as bytes to the lean pool when it serves the URL alone, else httpx's client."""

    def __init__(
        self,
        settings: SyncSettings,
        connect_to: ConnectTo,
        transport: httpx.AsyncBaseTransport | None,
    ) -> None:
        self._settings = settings
        self._connect_to = connect_to
        self._transport = transport
        self._pool = None if transport is not None else Pool(max_idle_per_host=settings.concurrency)
        # What ConnectToTransport rewrites (its keys, as it normalizes them): those go the long way.
        self._mapped = frozenset((host.lower(), port) for host, port in connect_to)
        self._client: httpx.AsyncClient | None = None

    def target(self, url: str) -> Target | None:
        """``url`` as sync's GET takes it; None when httpx finds it invalid."""
        plain = plain_target(url) if self._pool is not None else None
        if plain is not None and (plain.host, plain.port) not in self._mapped:
            return plain
        import httpx

        try:
            return httpx.URL(url)
        except httpx.InvalidURL:
            return None

    def url(self, target: Target) -> httpx.URL:
        """``target`` as httpx's URL (what a redirect is joined to)."""
        import httpx

        return httpx.URL(target.text) if isinstance(target, PlainTarget) else target

    async def get(self, target: Target, connect: float) -> Answer:
        """The answer to ``GET target``, its body still to be read; the caller closes it.
        Connecting takes at most ``connect`` seconds, reading and writing have no limit."""
        pool = self._pool
        origin = (target.host, target.port or 80)
        if isinstance(target, PlainTarget) or (
            pool is not None
            and target.scheme == "http"
            and (origin[0].lower(), origin[1]) not in self._mapped
        ):
            assert pool is not None  # a PlainTarget only when there is the pool
            head = write_head(b"GET", target.raw_path, ((b"Host", target.netloc), *FIELDS))
            timeouts = {"connect": connect, "read": None, "write": None, "pool": None}
            return await pool.send(origin, head, b"", timeouts)
        import httpx

        client = self._httpx_client()
        timeout = httpx.Timeout(None, connect=connect)
        request = client.build_request("GET", target, timeout=timeout)
        return await client.send(request, stream=True)

    def _httpx_client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = _new_client(
                self._settings, self._connect_to, self._transport, self._pool
            )
        return self._client

    async def aclose(self) -> None:
        """Close the idle connections, and httpx's client if it was made."""
        if self._client is not None:
            await self._client.aclose()
        if self._pool is not None:
            self._pool.close()


def header(answer: Answer, name: str) -> str | None:
    """Header ``name`` of ``answer`` as httpx reads it (every value, joined by ``, ``, and
    decoded as httpx decodes them); None when it is absent."""
    if not isinstance(answer, Response):
        found: str | None = answer.headers.get(name)
        return found
    if answer.header(name.encode("ascii")) is None:
        return None
    import httpx  # a header sync reads only on a redirect, or a Content-Encoding

    value: str | None = httpx.Headers(answer.headers).get(name)
    return value


def request_errors() -> tuple[type[Exception], ...]:
    """The exceptions a failed GET raises: the lean pool's, and httpx's once it is loaded."""
    httpx = sys.modules.get("httpx")
    return (TransportError,) if httpx is None else (TransportError, httpx.HTTPError)


@asynccontextmanager
async def open_client(
    settings: SyncSettings, connect_to: ConnectTo, transport: httpx.AsyncBaseTransport | None
) -> AsyncIterator[SyncClient]:
    """The client of one sync; ``transport`` (tests') replaces the default and is not closed."""
    client = SyncClient(settings, connect_to, transport)
    try:
        yield client
    finally:
        await client.aclose()


def _new_client(
    settings: SyncSettings,
    connect_to: ConnectTo,
    transport: httpx.AsyncBaseTransport | None,
    pool: Pool | None,
) -> httpx.AsyncClient:
    """httpx's client of one sync: over ``transport`` when a test gives one, else plain
    http over ``pool`` and https over httpcore, made when a first https request needs it."""
    import httpx

    from dsf_transport.connect_transport import ConnectToTransport
    from dsf_transport.http import new_client
    from dsf_transport.plainhttp import PlainHTTPTransport

    make_transport = _tls_transports()
    inner = transport
    if inner is None:
        inner = PlainHTTPTransport(make_transport, pool=pool)
    wrapper = ConnectToTransport(
        inner,
        connect_to,
        owns_inner=transport is None,
        make_transport=make_transport if transport is None else None,
    )
    # Redirects are followed by hand, same origin only; no environment proxies or netrc:
    # sync connects where it is told. Each request carries its own timeout (the budget).
    return new_client(
        UserAgent.SYNC,
        transport=wrapper,
        timeout=httpx.Timeout(settings.timeoutSeconds),
        headers=HEADERS,
    )


def _tls_transports() -> Callable[[], httpx.AsyncBaseTransport]:
    """What makes httpx's transports for https: all with one TLS context."""
    import httpx

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

    return make_transport
