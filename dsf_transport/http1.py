"""A lean HTTP/1.1 keep-alive client for plain ``http://``, on asyncio alone.

At 400 requests a second httpx's default transport (httpcore over anyio) spent half of the
agent's CPU, rescanning its whole pool on every request, and httpx's request and response
objects most of the rest. Here one stack of idle connections per host is kept; each
connection is an asyncio protocol holding what arrived in one buffer; a request goes as
bytes (a head :func:`~dsf_transport.http1_heads.write_head` wrote, then a body) and its
:class:`Response` comes back with the body still on the connection, read piece by piece
or whole under a cap. Nothing here imports httpx: the agent and ``dsf-compile sync`` call
it directly, and :mod:`dsf_transport.plainhttp` puts it under httpx's transport API (sync's
requests that go through httpx's client).

A connection goes back to the pool only when its response was read to its end and no byte
beyond it arrived: bytes the server sent past its response would be read as the next
request's answer.
"""

from __future__ import annotations

import asyncio
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Iterable, Mapping

from dsf_transport.http import BodyTooLargeError, MemoryHook
from dsf_transport.http1_connection import (
    MAX_HEAD_BYTES,
    READ_CHUNK,
    Connection,
    Incomplete,
    Overrun,
    StaleConnectionError,
    within,
)
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

_NO_BODY_STATUS = frozenset({204, 304})
_HEX_DIGITS = b"0123456789abcdefABCDEF"
#: The timeout of each phase of a request (``connect``, ``write``, ``read``, as httpx names
#: them), in seconds; a phase that is absent or None has no limit.
Timeouts = Mapping[str, float | None]
#: Where a request goes: host and port.
Origin = tuple[str, int]


class Pool:
    """Kept-alive HTTP/1.1 connections, at most ``max_idle_per_host`` idle per host, each
    for at most ``keepalive_expiry`` seconds."""

    def __init__(self, *, max_idle_per_host: int = 64, keepalive_expiry: float = 30.0) -> None:
        self._max_idle = max_idle_per_host
        self._expiry = keepalive_expiry
        self._idle: dict[Origin, list[Connection]] = {}

    async def send(self, origin: Origin, head: bytes, body: bytes, timeouts: Timeouts) -> Response:
        """One exchange with ``origin`` on a kept-alive connection when one is idle: ``head``
        as :func:`~dsf_transport.http1_heads.write_head` wrote it, then ``body``; the
        response comes back with its body still to be read."""
        connection = self._take(origin)
        if connection is not None:
            try:
                return await self._exchange(origin, connection, head, body, timeouts)
            except StaleConnectionError:
                pass  # the server closed the kept-alive connection meanwhile: one fresh try
        connection = await self._connect(origin, timeouts)
        try:
            return await self._exchange(origin, connection, head, body, timeouts)
        except StaleConnectionError as err:
            raise RemoteProtocolError("server disconnected without sending a response") from err

    def close(self) -> None:
        """Close every idle connection."""
        for connections in self._idle.values():
            for connection in connections:
                connection.close()
        self._idle.clear()

    def _take(self, origin: Origin) -> Connection | None:
        idle = self._idle.get(origin)
        while idle:
            connection = idle.pop()
            if connection.reusable(self._expiry):
                return connection
            connection.close()
        return None

    def give_back(self, origin: Origin, connection: Connection) -> None:
        """Keep ``connection`` for a next request to ``origin`` (when there is room)."""
        idle = self._idle.setdefault(origin, [])
        if len(idle) >= self._max_idle:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        idle.append(connection)

    async def _connect(self, origin: Origin, timeouts: Timeouts) -> Connection:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(timeouts.get("connect")):
                _, connection = await loop.create_connection(Connection, origin[0], origin[1])
        except TimeoutError as err:
            raise ConnectTimeout("timed out connecting") from err
        except OSError as err:
            raise ConnectError(str(err) or type(err).__name__) from err
        return connection

    async def _exchange(
        self,
        origin: Origin,
        connection: Connection,
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
                raise StaleConnectionError from err
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
    connection: Connection, timeout: float | None
) -> tuple[int, bytes, list[tuple[bytes, bytes]], Framing]:
    """The status, reason, headers and framing of the next final (non-1xx) response."""
    first = True
    while True:
        try:
            reading = connection.read_until(b"\r\n\r\n", MAX_HEAD_BYTES)
            head = await (reading if timeout is None else within(timeout, reading))
        except TimeoutError as err:
            raise ReadTimeout("timed out waiting for the response") from err
        except Incomplete as err:
            if first and not err.partial:
                raise StaleConnectionError from err
            raise RemoteProtocolError(
                "server disconnected in the middle of the response head"
            ) from err
        except Overrun as err:
            raise RemoteProtocolError("response head too large") from err
        except OSError as err:
            if first:
                raise StaleConnectionError from err
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
        connection: Connection,
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
        self._connection: Connection | None = connection
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

    async def _piece(self, connection: Connection) -> bytes:
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
            return await within(self._timeout, call)
        except TimeoutError as err:
            raise ReadTimeout("timed out reading the body") from err
        except Incomplete as err:
            raise RemoteProtocolError("server disconnected in the middle of the body") from err
        except Overrun as err:
            raise RemoteProtocolError("malformed chunked body") from err
        except OSError as err:
            raise ReadError(str(err)) from err

    async def _chunk_size(self, connection: Connection) -> int:
        size_line = await self._read(connection.read_until(b"\r\n", MAX_HEAD_BYTES))
        size_text = size_line.split(b";", 1)[0].strip()
        if not size_text or size_text.strip(_HEX_DIGITS) or len(size_text) > 16:
            raise RemoteProtocolError("malformed chunk size")
        return int(size_text, 16)

    async def _skip_trailers(self, connection: Connection) -> None:
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
