"""A lean HTTP/1.1 keep-alive client for plain ``http://``, on asyncio alone.

At 400 requests a second httpx's default transport (httpcore over anyio) spent half of the
agent's CPU, rescanning its whole pool on every request, and httpx's request and response
objects most of the rest. Here one stack of idle connections per host is kept; each
connection is an asyncio protocol holding what arrived in one buffer; a request goes as
bytes (a head :func:`~dsf_transport.http1_heads.write_head` wrote, then a body) and its
:class:`Response` comes back with the body still on the connection, read piece by piece
or whole under a cap. Nothing here imports httpx: :mod:`dsf_transport.plainhttp` puts this
under httpx's transport API (``dsf-compile sync``); the agent calls it directly.

A connection goes back to the pool only when its response was read to its end and no byte
beyond it arrived: bytes the server sent past its response would be read as the next
request's answer.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping
from typing import TypeVar

from dsf_transport.http import BodyTooLargeError, MemoryHook
from dsf_transport.http1_errors import (
    ConnectError,
    ConnectTimeout,
    DecodingError,
    ReadError,
    ReadTimeout,
    RemoteProtocolError,
    WriteTimeout,
)
from dsf_transport.http1_heads import Framing, parse_head

#: Largest response head (status line and headers) accepted, and largest chunk-size line.
MAX_HEAD_BYTES = 64 * 1024
#: Largest piece of body read at once.
READ_CHUNK = 64 * 1024
#: Largest piece of a request body handed to the socket at once.
WRITE_PIECE = 256 * 1024
#: Bytes held unread before the connection stops reading from its socket.
HIGH_WATER = 2 * READ_CHUNK
_NO_BODY_STATUS = frozenset({204, 304})
_HEX_DIGITS = b"0123456789abcdefABCDEF"
_T = TypeVar("_T")
#: The timeout of each phase of a request (``connect``, ``write``, ``read``, as httpx names
#: them), in seconds; a phase that is absent or None has no limit.
Timeouts = Mapping[str, float | None]
#: Where a request goes: host and port.
Origin = tuple[str, int]


class _Incomplete(Exception):
    """The connection ended before what was being read; ``partial``: some of it came."""

    def __init__(self, partial: bool) -> None:
        super().__init__("connection ended")
        self.partial = partial


class _Overrun(Exception):
    """A line (a head, a chunk size) longer than it may be."""


class _StaleConnectionError(Exception):
    """The connection broke before any byte of the response arrived."""


class _Connection(asyncio.Protocol):
    """One TCP connection: what arrived is kept in one buffer until read; reading stops
    while more than :data:`HIGH_WATER` bytes wait, writing waits while the socket's
    buffer is full."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        #: the server closed its side, or the connection broke
        self.ended = False
        self.error: Exception | None = None
        self.idle_since = 0.0
        self._waiter: asyncio.Future[None] | None = None
        self._reading_paused = False
        self._writing_paused = False
        self._drained: asyncio.Future[None] | None = None

    # ------------------------------------------------------- asyncio's callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        self._wake()
        if len(self.buffer) > HIGH_WATER and not self._reading_paused:
            self._reading_paused = True
            assert self.transport is not None
            self.transport.pause_reading()

    def eof_received(self) -> None:
        self.ended = True
        self._wake()

    def connection_lost(self, exc: Exception | None) -> None:
        self.ended = True
        self.error = exc
        self._wake()
        self.resume_writing()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    # ------------------------------------------------------------------ reading

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def _more(self) -> None:
        """Wait until more bytes arrive or the connection ends."""
        if self._reading_paused:
            self._reading_paused = False
            assert self.transport is not None
            self.transport.resume_reading()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    def take(self, size: int) -> bytes:
        """Up to ``size`` of the bytes that arrived (some must have)."""
        buffer = self.buffer
        data = bytes(buffer) if size >= len(buffer) else bytes(memoryview(buffer)[:size])
        del buffer[:size]
        return data

    def _check_ended(self, partial: bool) -> None:
        """Raise what ended the connection: its error, else :class:`_Incomplete`."""
        if self.error is not None:
            raise self.error
        raise _Incomplete(partial)

    async def read_until(self, separator: bytes, limit: int) -> bytes:
        """The bytes up to and including ``separator``, at most ``limit`` of them."""
        start = 0
        while True:
            found = self.buffer.find(separator, start)
            if found >= 0:
                if found + len(separator) > limit:
                    raise _Overrun
                return self.take(found + len(separator))
            if len(self.buffer) > limit:
                raise _Overrun
            if self.ended:
                self._check_ended(bool(self.buffer))
            start = max(0, len(self.buffer) - len(separator) + 1)
            await self._more()

    async def read_exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if self.ended:
                self._check_ended(bool(self.buffer))
            await self._more()
        return self.take(size)

    async def read_some(self, size: int) -> bytes:
        """Up to ``size`` bytes, as soon as some are there; ``b""`` when the server closed."""
        while not self.buffer:
            if self.ended:
                if self.error is not None:
                    raise self.error
                return b""
            await self._more()
        return self.take(size)

    # ------------------------------------------------------------------ writing

    async def send(self, head: bytes, body: bytes, timeout: float | None) -> None:
        """Write the head and body; a big body goes in pieces, so that the transport's
        buffer never holds a second copy of it."""
        if len(body) <= WRITE_PIECE:
            self._write(head + body)
            if self._writing_paused:
                await _within(timeout, self._drain())
            return
        self._write(head)
        view = memoryview(body)
        for offset in range(0, len(body), WRITE_PIECE):
            self._write(view[offset : offset + WRITE_PIECE])
            await _within(timeout, self._drain())

    def _write(self, data: bytes | memoryview) -> None:
        if self.ended:
            raise ConnectionResetError("connection lost")
        assert self.transport is not None
        self.transport.write(data)

    async def _drain(self) -> None:
        while self._writing_paused and not self.ended:
            self._drained = asyncio.get_running_loop().create_future()
            await self._drained
        if self.ended and self.error is not None:
            raise ConnectionResetError("connection lost")

    # ---------------------------------------------------------------- lifecycle

    def reusable(self, expiry: float) -> bool:
        """Whether an idle connection can carry another request: open, silent (nothing
        arrived unasked) and not kept too long."""
        return (
            not self.ended
            and not self.buffer
            and self.transport is not None
            and not self.transport.is_closing()
            and time.monotonic() - self.idle_since < expiry
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


async def _within(timeout: float | None, call: Awaitable[_T]) -> _T:
    """``call`` awaited within ``timeout`` seconds; None: no limit, and no timer set up (the
    agent sends 400 requests a second under a deadline of their own)."""
    if timeout is None:
        return await call
    async with asyncio.timeout(timeout):
        return await call


class Pool:
    """Kept-alive HTTP/1.1 connections, at most ``max_idle_per_host`` idle per host, each
    for at most ``keepalive_expiry`` seconds."""

    def __init__(self, *, max_idle_per_host: int = 64, keepalive_expiry: float = 30.0) -> None:
        self._max_idle = max_idle_per_host
        self._expiry = keepalive_expiry
        self._idle: dict[Origin, list[_Connection]] = {}

    async def send(self, origin: Origin, head: bytes, body: bytes, timeouts: Timeouts) -> Response:
        """One exchange with ``origin`` on a kept-alive connection when one is idle: ``head``
        as :func:`~dsf_transport.http1_heads.write_head` wrote it, then ``body``; the
        response comes back with its body still to be read."""
        connection = self._take(origin)
        if connection is not None:
            try:
                return await self._exchange(origin, connection, head, body, timeouts)
            except _StaleConnectionError:
                pass  # the server closed the kept-alive connection meanwhile: one fresh try
        connection = await self._connect(origin, timeouts)
        try:
            return await self._exchange(origin, connection, head, body, timeouts)
        except _StaleConnectionError as err:
            raise RemoteProtocolError("server disconnected without sending a response") from err

    def close(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _take(self, origin: Origin) -> _Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.reusable(self._expiry):
                return connection
            connection.close()
        return None

    def give_back(self, origin: Origin, connection: _Connection) -> None:
        """Keep ``connection`` for a next request to ``origin`` (when there is room)."""
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= self._max_idle:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def _connect(self, origin: Origin, timeouts: Timeouts) -> _Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                _, connection = await loop.create_connection(_Connection, origin[0], origin[1])
        except TimeoutError as err:
            raise ConnectTimeout("timed out connecting") from err
        except OSError as err:
            raise ConnectError(str(err) or type(err).__name__) from err
        return connection

    async def _exchange(
        self,
        origin: Origin,
        connection: _Connection,
        head: bytes,
        body: bytes,
        timeouts: Timeouts,
    ) -> Response:
        """Write the request and read the response head; the body is read by the caller."""
        try:
            try:
                await connection.send(head, body, timeouts.get("write"))
            except TimeoutError as err:
                raise WriteTimeout("timed out sending") from err
            except OSError as err:
                raise _StaleConnectionError from err
            status, reason, headers, framing = await _read_head(connection, timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        if head.startswith(b"HEAD ") or status in _NO_BODY_STATUS:
            framing = Framing(length=0, chunked=False, keep_alive=framing.keep_alive)
        return Response(
            self, origin, connection, status, reason, headers, framing, timeouts.get("read")
        )


async def _read_head(
    connection: _Connection, timeout: float | None
) -> tuple[int, bytes, list[tuple[bytes, bytes]], Framing]:
    """The status, reason, headers and framing of the next final (non-1xx) response."""
    first = True
    while True:
        try:
            reading = connection.read_until(b"\r\n\r\n", MAX_HEAD_BYTES)
            head = await (reading if timeout is None else _within(timeout, reading))
        except TimeoutError as err:
            raise ReadTimeout("timed out waiting for the response") from err
        except _Incomplete as err:
            if first and not err.partial:
                raise _StaleConnectionError from err
            raise RemoteProtocolError(
                "server disconnected in the middle of the response head"
            ) from err
        except _Overrun as err:
            raise RemoteProtocolError("response head too large") from err
        except OSError as err:
            if first:
                raise _StaleConnectionError from err
            raise ReadError(str(err)) from err
        first = False
        status, reason, headers, framing = parse_head(head)
        if status >= 200 or status == 101:
            return status, reason, headers, framing


class Response:
    """A response whose body is still on its connection. The connection goes back to the
    pool once the body has been read to its end; :meth:`close` closes it when the body
    was abandoned half-way."""

    def __init__(
        self,
        pool: Pool,
        origin: Origin,
        connection: _Connection,
        status: int,
        reason: bytes,
        headers: list[tuple[bytes, bytes]],
        framing: Framing,
        timeout: float | None,
    ) -> None:
        self.status_code = status
        self.reason = reason
        self.headers = headers
        self.framing = framing
        self._pool = pool
        self._origin = origin
        self._connection: _Connection | None = connection
        self._timeout = timeout
        #: bytes left of the sized body, or of the current chunk
        self._remaining = framing.length or 0
        self._ended = False

    def header(self, name: bytes) -> bytes | None:
        """Every value of header ``name`` (lower-case), joined by ``, ``; None when absent."""
        values = [value for key, value in self.headers if key.lower() == name]
        return b", ".join(values) if values else None

    @property
    def is_closed(self) -> bool:
        """Whether the connection was given back or closed."""
        return self._connection is None

    async def next_piece(self) -> bytes:
        """The next piece of the body as sent (``b""``: its end, when the connection goes
        back to the pool); any failure closes the connection."""
        connection = self._connection
        if connection is None:
            raise RuntimeError("the response was closed")
        try:
            piece = await self._piece(connection)
        except BaseException:
            self._drop()
            raise
        if not piece:
            self._release()
        return piece

    async def pieces(self) -> AsyncIterator[bytes]:
        """Every piece of the body as sent."""
        while piece := await self.next_piece():
            yield piece

    async def read(self, limit: int, *, memory: MemoryHook | None = None) -> bytes | bytearray:
        """The whole body, as :func:`dsf_transport.http.read_capped` reads an httpx
        response: :class:`BodyTooLargeError` past ``limit`` bytes (once a
        ``Content-Encoding`` is undone), each piece covered in ``memory`` first."""
        declared = self.header(b"content-length") or b""
        if declared.isdigit():
            if int(declared) > limit:
                raise BodyTooLargeError(limit)
            if memory is not None:
                await memory.grow_to(int(declared))
        decoder = _decoder(self.headers)
        # One growing buffer, not a list of pieces joined at the end: the body is held once.
        body = bytearray()
        while piece := await self.next_piece():
            if decoder is not None:
                piece = decoder.decode(piece)
            await _append(body, piece, limit, memory)
        if decoder is not None:
            await _append(body, decoder.flush(), limit, memory)
        # A small body as bytes; a big one is not copied again.
        return bytes(body) if len(body) < 65536 else body

    def close(self) -> None:
        """Give the connection back when the body was read entirely, else close it."""
        if self._ended:
            self._release()
        else:
            self._drop()

    async def _piece(self, connection: _Connection) -> bytes:
        if self._ended:
            return b""
        framing = self.framing
        if self._remaining > 0:
            if connection.buffer:  # the usual small answer came with its head
                data = connection.take(min(self._remaining, READ_CHUNK))
            else:
                data = await self._read(connection.read_some(min(self._remaining, READ_CHUNK)))
            if not data:
                raise RemoteProtocolError("server disconnected in the middle of the body")
            self._remaining -= len(data)
            if self._remaining == 0 and framing.chunked:
                if await self._read(connection.read_exactly(2)) != b"\r\n":
                    raise RemoteProtocolError("malformed chunked body")
            elif self._remaining == 0:
                self._ended = True
            return data
        if framing.chunked:
            self._remaining = await self._chunk_size(connection)
            if self._remaining == 0:
                await self._skip_trailers(connection)
                self._ended = True
                return b""
            return await self._piece(connection)
        if framing.length is None:  # until the server closes the connection
            data = await self._read(connection.read_some(READ_CHUNK))
            self._ended = not data
            return data
        self._ended = True  # an empty sized body
        return b""

    async def _read(self, call: Awaitable[bytes]) -> bytes:
        try:
            return await _within(self._timeout, call)
        except TimeoutError as err:
            raise ReadTimeout("timed out reading the body") from err
        except _Incomplete as err:
            raise RemoteProtocolError("server disconnected in the middle of the body") from err
        except _Overrun as err:
            raise RemoteProtocolError("malformed chunked body") from err
        except OSError as err:
            raise ReadError(str(err)) from err

    async def _chunk_size(self, connection: _Connection) -> int:
        size_line = await self._read(connection.read_until(b"\r\n", MAX_HEAD_BYTES))
        size_text = size_line.split(b";", 1)[0].strip()
        if not size_text or size_text.strip(_HEX_DIGITS) or len(size_text) > 16:
            raise RemoteProtocolError("malformed chunk size")
        return int(size_text, 16)

    async def _skip_trailers(self, connection: _Connection) -> None:
        """Read past the trailer section (ignored): its bytes are counted, and more than a
        head may hold (:data:`MAX_HEAD_BYTES`) is a protocol error, not an endless loop."""
        counted = 0
        while (line := await self._read(connection.read_until(b"\r\n", MAX_HEAD_BYTES))) != b"\r\n":
            counted += len(line)
            if counted > MAX_HEAD_BYTES:
                raise RemoteProtocolError("chunked body's trailers over the size of a head")

    def _release(self) -> None:
        """Back to the pool: the body was read to its end (and nothing past it came)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self.framing.keep_alive and not connection.buffer and not connection.ended:
            self._pool.give_back(self._origin, connection)
        else:
            connection.close()

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


async def _append(body: bytearray, piece: bytes, limit: int, memory: MemoryHook | None) -> None:
    if len(body) + len(piece) > limit:
        raise BodyTooLargeError(limit)
    if memory is not None and len(body) + len(piece) > memory.held:
        await memory.grow_to(len(body) + len(piece))
    body += piece


class _Decoder:
    """Undoes a body's ``Content-Encoding`` as httpx does: ``gzip`` and ``deflate`` (zlib
    or raw), ``identity``; other codings are passed over; several are undone last first."""

    def __init__(self, codings: list[str]) -> None:
        self._steps = [_Step(coding) for coding in reversed(codings)]

    def decode(self, data: bytes) -> bytes:
        for step in self._steps:
            data = step.decode(data)
        return data

    def flush(self) -> bytes:
        data = b""
        for step in self._steps:
            data = step.decode(data) + step.flush()
        return data


class _Step:
    def __init__(self, coding: str) -> None:
        self._first = coding == "deflate"
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16 if coding == "gzip" else zlib.MAX_WBITS)

    def decode(self, data: bytes) -> bytes:
        first, self._first = self._first, False
        try:
            return self._zlib.decompress(data)
        except zlib.error as err:
            if first:  # a raw deflate stream, without zlib's header
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                return self.decode(data)
            raise DecodingError(str(err)) from err

    def flush(self) -> bytes:
        try:
            return self._zlib.flush()
        except zlib.error as err:
            raise DecodingError(str(err)) from err


def _decoder(headers: Iterable[tuple[bytes, bytes]]) -> _Decoder | None:
    """The decoder of a ``Content-Encoding`` (None without one, or only ``identity``)."""
    codings = [
        coding.strip().lower().decode("latin-1")
        for name, value in headers
        if name.lower() == b"content-encoding"
        for coding in value.split(b",")
    ]
    known = [coding for coding in codings if coding in ("gzip", "deflate")]
    return _Decoder(known) if known else None
