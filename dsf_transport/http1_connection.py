"""One connection of :mod:`dsf_transport.http1`'s pool: an asyncio protocol keeping what
arrived in one buffer until it is read.

Reading stops while more than :data:`HIGH_WATER` bytes wait unread; writing waits while
the socket's buffer is full, and a big body goes in pieces so that the transport never
holds a second copy of it. What ended a connection early is told apart
(:class:`Incomplete`, :class:`Overrun`, :class:`StaleConnectionError`) so that the pool
can name the failure as httpx would.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

#: Largest response head (status line and headers) accepted, and largest chunk-size line.
MAX_HEAD_BYTES = 64 * 1024
#: Largest piece of body read at once.
READ_CHUNK = 64 * 1024
#: Largest piece of a request body handed to the socket at once.
WRITE_PIECE = 256 * 1024
#: Bytes held unread before the connection stops reading from its socket.
HIGH_WATER = 2 * READ_CHUNK
_T = TypeVar("_T")


class Incomplete(Exception):
    """The connection ended before what was being read; ``partial``: some of it came."""

    def __init__(self, partial: bool) -> None:
        super().__init__("connection ended")
        self.partial = partial


class Overrun(Exception):
    """A line (a head, a chunk size) longer than it may be."""


class StaleConnectionError(Exception):
    """The connection broke before any byte of the response arrived."""


class Connection(asyncio.Protocol):
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
        """Raise what ended the connection: its error, else :class:`Incomplete`."""
        if self.error is not None:
            raise self.error
        raise Incomplete(partial)

    async def read_until(self, separator: bytes, limit: int) -> bytes:
        """The bytes up to and including ``separator``, at most ``limit`` of them."""
        start = 0
        while True:
            found = self.buffer.find(separator, start)
            if found >= 0:
                if found + len(separator) > limit:
                    raise Overrun
                return self.take(found + len(separator))
            if len(self.buffer) > limit:
                raise Overrun
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
                await within(timeout, self._drain())
            return
        self._write(head)
        view = memoryview(body)
        for offset in range(0, len(body), WRITE_PIECE):
            self._write(view[offset : offset + WRITE_PIECE])
            await within(timeout, self._drain())

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


async def within(timeout: float | None, call: Awaitable[_T]) -> _T:
    """``call`` awaited within ``timeout`` seconds; None: no limit, and no timer set up (the
    agent sends 400 requests a second under a deadline of their own)."""
    if timeout is None:
        return await call
    async with asyncio.timeout(timeout):
        return await call
