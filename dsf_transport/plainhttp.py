"""The lean plain-HTTP client of :mod:`dsf_transport.http1` under httpx's transport API.

At 400 requests a second httpx's default transport (httpcore over anyio) spent half of the
agent's CPU: every request rescans the whole connection pool, probing each idle socket
with ``select`` and ``getpeername``. This transport sends ``http://`` requests through a
:class:`~dsf_transport.http1.Pool` (one stack of idle connections per host), keeps
httpx's timeouts (connect, read and write, as the request's ``timeout`` extension carries
them), leaves response decoding and size caps to the caller (the body is streamed), turns
the pool's failures into httpx's exceptions of the same names, and hands everything it
does not serve — ``https://`` — to the ``fallback`` transport. ``dsf-compile sync``
installs it under its httpx client (it never uses proxies), over the pool its plain GETs
go to directly, so a fleet of plain-http scorers never loads httpcore at all. The agent
calls the pool itself (:mod:`agent.transport`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import NoReturn

import httpx

from dsf_transport.http1 import Pool, Response, Timeouts
from dsf_transport.http1_errors import TransportError
from dsf_transport.http1_heads import write_head


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive for ``http://`` URLs; other schemes go to ``fallback``.

    ``fallback`` may be a function that makes it, called at the first request that needs
    it: httpx's transport loads a TLS context with its CA bundle (about 2.6 MB of memory),
    which a fleet of plain-http scorers never uses. ``pool``, when given, is the pool to
    send through (a caller that also sends to it directly); it is closed with the transport."""

    def __init__(
        self,
        fallback: httpx.AsyncBaseTransport | Callable[[], httpx.AsyncBaseTransport],
        *,
        max_idle_per_host: int = 64,
        keepalive_expiry: float = 30.0,
        pool: Pool | None = None,
    ) -> None:
        self._fallback: httpx.AsyncBaseTransport | None = None
        self._make_fallback: Callable[[], httpx.AsyncBaseTransport]
        if isinstance(fallback, httpx.AsyncBaseTransport):
            self._fallback = fallback
            self._make_fallback = lambda: fallback
        else:
            self._make_fallback = fallback
        if pool is None:
            pool = Pool(max_idle_per_host=max_idle_per_host, keepalive_expiry=keepalive_expiry)
        self._pool = pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return the response with its body still to be streamed."""
        url = request.url
        if url.scheme != "http":
            return await self._fallback_transport().handle_async_request(request)
        body = await request.aread()
        timeouts: Timeouts = request.extensions.get("timeout", {})
        try:
            head = write_head(request.method.encode("ascii"), url.raw_path, request.headers.raw)
        except TransportError as err:
            _raise_as_httpx(err, request)
        response = await self.send((url.host, url.port or 80), head, body, timeouts, request)
        response.request = request
        return response

    async def send(
        self,
        origin: tuple[str, int],
        head: bytes,
        body: bytes,
        timeouts: Timeouts,
        request: httpx.Request | None = None,
    ) -> httpx.Response:
        """One exchange with ``origin`` (host, port): ``head`` as
        :func:`~dsf_transport.http1_heads.write_head` wrote it, then ``body``; the response
        comes back with its body still to be streamed. ``timeouts`` holds httpx's phases
        (``connect``, ``write``, ``read``; None: no limit); ``request``, when there is one,
        is named by the errors.

        A caller that already holds its request as bytes (sync's plain GETs) sends it here
        without building an ``httpx.Request``."""
        try:
            response = await self._pool.send(origin, head, body, timeouts)
        except TransportError as err:
            _raise_as_httpx(err, request)
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_Body(response, request),
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": response.reason},
        )

    async def aclose(self) -> None:
        """Close every idle connection, and the fallback transport."""
        self._pool.close()
        if self._fallback is not None:
            await self._fallback.aclose()

    def _fallback_transport(self) -> httpx.AsyncBaseTransport:
        if self._fallback is None:
            self._fallback = self._make_fallback()
        return self._fallback


def _raise_as_httpx(err: TransportError, request: httpx.Request | None) -> NoReturn:
    """Raise httpx's exception of the same name as ``err`` (they are ranked alike)."""
    kind: type[httpx.RequestError] = getattr(httpx, type(err).__name__)
    raise kind(str(err), request=request) from err


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection (see :class:`~dsf_transport.http1.Response`)."""

    def __init__(self, response: Response, request: httpx.Request | None) -> None:
        self._response = response
        self._request = request
        self._started = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self._started or self._response.is_closed:
            raise httpx.StreamClosed()
        self._started = True
        try:
            while piece := await self._response.next_piece():
                yield piece
        except TransportError as err:
            _raise_as_httpx(err, self._request)

    async def aclose(self) -> None:
        """Give the connection back when the body was read entirely, else close it."""
        self._response.close()
