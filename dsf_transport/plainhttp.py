"""A lean HTTP/1.1 keep-alive transport for plain ``http://`` requests, under httpx's API.

At 400 requests a second httpx's default transport (httpcore over anyio) spent half of the
agent's CPU: every request rescans the whole connection pool, probing each idle socket
with ``select`` and ``getpeername``. This transport keeps one stack of idle connections
per host and speaks HTTP/1.1 over asyncio streams (the heads it writes and parses are
:mod:`dsf_transport.http1_heads`). It keeps httpx's timeouts (connect, read and write,
as the request's ``timeout`` extension carries them), leaves response
decoding and size caps to the caller (the body is streamed), and hands everything it does
not serve — ``https://`` — to the ``fallback`` transport. The agent installs it when no
proxy is configured (see :func:`agent.transport.make_client`); ``dsf-compile sync`` always
(it never uses proxies), so a fleet of plain-http scorers never loads httpcore at all.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx

from dsf_transport.http1_heads import Framing, parse_head, request_head

#: Largest response head (status line and headers) accepted.
MAX_HEAD_BYTES = 64 * 1024
#: Largest piece of body read at once.
READ_CHUNK = 64 * 1024
#: Largest piece of a request body handed to the socket at once.
WRITE_PIECE = 256 * 1024
_NO_BODY_STATUS = frozenset({204, 304})
_T = TypeVar("_T")
#: httpx's timeout phases of one request (``connect``, ``write``, ``read``), in seconds;
#: a phase that is absent or None has no limit.
Timeouts = Mapping[str, float | None]
_HEX_DIGITS = b"0123456789abcdefABCDEF"


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = field(default_factory=time.monotonic)

    def usable(self, expiry: float) -> bool:
        """Idle connections closed by the server (or kept too long) are not reused."""
        return (
            not self.writer.is_closing()
            and not self.reader.at_eof()
            and time.monotonic() - self.idle_since < expiry
        )

    def close(self) -> None:
        self.writer.close()


class PlainHTTPTransport(httpx.AsyncBaseTransport):
    """HTTP/1.1 with keep-alive for ``http://`` URLs; other schemes go to ``fallback``.

    ``fallback`` may be a function that makes it, called at the first request that needs
    it: httpx's transport loads a TLS context with its CA bundle (about 2.6 MB of memory),
    which a fleet of plain-http scorers never uses."""

    def __init__(
        self,
        fallback: httpx.AsyncBaseTransport | Callable[[], httpx.AsyncBaseTransport],
        *,
        max_idle_per_host: int = 64,
        keepalive_expiry: float = 30.0,
    ) -> None:
        self._fallback: httpx.AsyncBaseTransport | None = None
        self._make_fallback: Callable[[], httpx.AsyncBaseTransport]
        if isinstance(fallback, httpx.AsyncBaseTransport):
            self._fallback = fallback
            self._make_fallback = lambda: fallback
        else:
            self._make_fallback = fallback
        self._max_idle = max_idle_per_host
        self._expiry = keepalive_expiry
        self._idle: dict[tuple[str, int], list[_Connection]] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return the response with its body still to be streamed."""
        url = request.url
        if url.scheme != "http":
            return await self._fallback_transport().handle_async_request(request)
        body = await request.aread()
        timeouts: Timeouts = request.extensions.get("timeout", {})
        response = await self.send(
            (url.host, url.port or 80), request_head(request), body, timeouts, request
        )
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
        """One exchange with ``origin`` (host, port) over plain HTTP/1.1, on a kept-alive
        connection when one is idle: ``head`` as :func:`~dsf_transport.http1_heads.write_head`
        wrote it, then ``body``; the response comes back with its body still to be streamed.
        ``timeouts`` holds httpx's phases (``connect``, ``write``, ``read``; None: no limit);
        ``request``, when there is one, is named by the errors.

        A caller that already holds its request as bytes (the agent, 400 times a second)
        sends it here without building an ``httpx.Request``."""
        message = (head, body)
        connection = self._take(origin)
        if connection is not None:
            try:
                return await self._exchange(request, origin, connection, message, timeouts)
            except _StaleConnectionError:
                pass  # the server closed the kept-alive connection meanwhile: one fresh try
        connection = await self._connect(request, origin, timeouts)
        try:
            return await self._exchange(request, origin, connection, message, timeouts)
        except _StaleConnectionError as err:
            raise httpx.RemoteProtocolError(
                "server disconnected without sending a response", request=request
            ) from err

    async def aclose(self) -> None:
        """Close every idle connection, and the fallback transport."""
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()
        if self._fallback is not None:
            await self._fallback.aclose()

    def _fallback_transport(self) -> httpx.AsyncBaseTransport:
        if self._fallback is None:
            self._fallback = self._make_fallback()
        return self._fallback

    def _take(self, key: tuple[str, int]) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.usable(self._expiry):
                return connection
            connection.close()
        return None

    def _give_back(self, key: tuple[str, int], connection: _Connection) -> None:
        idle = self._idle.setdefault(key, [])
        if len(idle) >= self._max_idle:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def _connect(
        self, request: httpx.Request | None, key: tuple[str, int], timeouts: Timeouts
    ) -> _Connection:
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                reader, writer = await asyncio.open_connection(key[0], key[1], limit=MAX_HEAD_BYTES)
        except TimeoutError as err:
            raise httpx.ConnectTimeout("timed out connecting", request=request) from err
        except OSError as err:
            raise httpx.ConnectError(str(err) or type(err).__name__, request=request) from err
        return _Connection(reader, writer)

    async def _exchange(
        self,
        request: httpx.Request | None,
        key: tuple[str, int],
        connection: _Connection,
        message: tuple[bytes, bytes],
        timeouts: Timeouts,
    ) -> httpx.Response:
        """Write the request and read the response head; the body is read by the caller."""
        try:
            try:
                await _send(connection.writer, message, timeouts.get("write"))
            except TimeoutError as err:
                raise httpx.WriteTimeout("timed out sending", request=request) from err
            except OSError as err:
                raise _StaleConnectionError from err
            status, reason, headers, framing = await _read_head(
                connection.reader, request, timeouts.get("read")
            )
        except BaseException:
            connection.close()
            raise
        if message[0].startswith(b"HEAD ") or status in _NO_BODY_STATUS:
            framing = Framing(length=0, chunked=False, keep_alive=framing.keep_alive)
        stream = _Body(self, key, connection, framing, request, timeouts.get("read"))
        return httpx.Response(
            status,
            headers=headers,
            stream=stream,
            extensions={"http_version": b"HTTP/1.1", "reason_phrase": reason},
        )


async def _send(
    writer: asyncio.StreamWriter, message: tuple[bytes, bytes], timeout: float | None
) -> None:
    """Write the head and body; a big body goes in pieces, so that the transport's buffer
    never holds a second copy of it."""
    head, body = message
    if len(body) <= WRITE_PIECE:
        writer.write(head + body)
        await _within(timeout, writer.drain())
        return
    writer.write(head)
    view = memoryview(body)
    for offset in range(0, len(body), WRITE_PIECE):
        writer.write(view[offset : offset + WRITE_PIECE])
        await _within(timeout, writer.drain())


async def _within(timeout: float | None, call: Awaitable[_T]) -> _T:
    """``call`` awaited within ``timeout`` seconds; None: no limit, and no timer set up (the
    agent sends 400 requests a second under a deadline of their own)."""
    if timeout is None:
        return await call
    async with asyncio.timeout(timeout):
        return await call


class _StaleConnectionError(Exception):
    """The connection broke before any byte of the response arrived."""


async def _read_head(
    reader: asyncio.StreamReader, request: httpx.Request | None, timeout: float | None
) -> tuple[int, bytes, list[tuple[bytes, bytes]], Framing]:
    """The status, reason, headers and framing of the next final (non-1xx) response."""
    first = True
    while True:
        try:
            head = await _within(timeout, reader.readuntil(b"\r\n\r\n"))
        except TimeoutError as err:
            raise httpx.ReadTimeout("timed out waiting for the response", request=request) from err
        except asyncio.IncompleteReadError as err:
            if first and not err.partial:
                raise _StaleConnectionError from err
            raise httpx.RemoteProtocolError(
                "server disconnected in the middle of the response head", request=request
            ) from err
        except asyncio.LimitOverrunError as err:
            raise httpx.RemoteProtocolError("response head too large", request=request) from err
        except OSError as err:
            if first:
                raise _StaleConnectionError from err
            raise httpx.ReadError(str(err), request=request) from err
        first = False
        status, reason, headers, framing = parse_head(head, request)
        if status >= 200 or status == 101:
            return status, reason, headers, framing


class _Body(httpx.AsyncByteStream):
    """A response body read from its connection; the connection goes back to the pool once
    the body has been read to its end, and is closed when it is abandoned half-way."""

    def __init__(
        self,
        transport: PlainHTTPTransport,
        key: tuple[str, int],
        connection: _Connection,
        framing: Framing,
        request: httpx.Request | None,
        timeout: float | None,
    ) -> None:
        self._transport = transport
        self._key = key
        self._connection: _Connection | None = connection
        self._framing = framing
        self._request = request
        self._timeout = timeout
        self._complete = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        if connection is None:
            raise httpx.StreamClosed()
        framing = self._framing
        try:
            if framing.chunked:
                async for chunk in self._chunked(connection.reader):
                    yield chunk
            else:
                async for chunk in self._sized(connection.reader, framing.length):
                    yield chunk
        except BaseException:
            self._drop()
            raise
        self._complete = True
        self._release()

    async def aclose(self) -> None:
        """Give the connection back when the body was read entirely, else close it."""
        if self._complete:
            self._release()
        else:
            self._drop()

    def _release(self) -> None:
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._framing.keep_alive:
            self._transport._give_back(self._key, connection)
        else:
            connection.close()

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    async def _read(self, call: Any) -> bytes:
        try:
            data: bytes = await _within(self._timeout, call)
        except TimeoutError as err:
            raise httpx.ReadTimeout("timed out reading the body", request=self._request) from err
        except asyncio.IncompleteReadError as err:
            raise httpx.RemoteProtocolError(
                "server disconnected in the middle of the body", request=self._request
            ) from err
        except asyncio.LimitOverrunError as err:
            raise httpx.RemoteProtocolError(
                "malformed chunked body", request=self._request
            ) from err
        except OSError as err:
            raise httpx.ReadError(str(err), request=self._request) from err
        return data

    async def _sized(
        self, reader: asyncio.StreamReader, length: int | None
    ) -> AsyncIterator[bytes]:
        if length is None:  # until the server closes the connection
            while chunk := await self._read(reader.read(READ_CHUNK)):
                yield chunk
            return
        remaining = length
        while remaining > 0:
            chunk = await self._read(reader.read(min(remaining, READ_CHUNK)))
            if not chunk:
                raise httpx.RemoteProtocolError(
                    "server disconnected in the middle of the body", request=self._request
                )
            remaining -= len(chunk)
            yield chunk

    async def _chunked(self, reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
        while True:
            size_line = await self._read(reader.readuntil(b"\r\n"))
            size_text = size_line.split(b";", 1)[0].strip()
            if not size_text or size_text.strip(_HEX_DIGITS) or len(size_text) > 16:
                raise httpx.RemoteProtocolError("malformed chunk size", request=self._request)
            size = int(size_text, 16)
            if size == 0:
                await self._skip_trailers(reader)
                return
            async for piece in self._sized(reader, size):
                yield piece
            if await self._read(reader.readexactly(2)) != b"\r\n":
                raise httpx.RemoteProtocolError("malformed chunked body", request=self._request)

    async def _skip_trailers(self, reader: asyncio.StreamReader) -> None:
        """Read past the trailer section (ignored): its bytes are counted, and more than a
        head may hold (:data:`MAX_HEAD_BYTES`) is a protocol error, not an endless loop."""
        counted = 0
        while (line := await self._read(reader.readuntil(b"\r\n"))) != b"\r\n":
            counted += len(line)
            if counted > MAX_HEAD_BYTES:
                raise httpx.RemoteProtocolError(
                    "chunked body's trailers over the size of a head", request=self._request
                )
