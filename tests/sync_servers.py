"""Loopback HTTP servers for the sync tests and benchmark: one fault or answer per path.

A :class:`LoopbackServer` listens on ``127.0.0.1`` on a free port and runs its own event
loop in a thread, so the code under test (its own loop) and the server never share a
scheduler. Behaviours are small coroutines registered per path; the server counts what
it saw (requests, simultaneous requests in flight, body bytes handed to the socket) so
tests assert on counters instead of timings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import ssl
import struct
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

_REASONS = {
    200: "OK",
    204: "No Content",
    301: "Moved Permanently",
    302: "Found",
    307: "Temporary Redirect",
    404: "Not Found",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Request:
    """What the server received: method, path (with query) and lower-cased headers; ``head``
    is the request's head as it came on the wire."""

    method: str
    path: str
    headers: dict[str, str]
    head: bytes = b""


Handler = Callable[["LoopbackServer", Request, asyncio.StreamWriter], Awaitable[None]]


@dataclass
class _Counters:
    requests: list[Request] = field(default_factory=list)
    in_flight: int = 0
    max_in_flight: int = 0
    body_bytes_sent: dict[str, int] = field(default_factory=dict)


class LoopbackServer:
    """An HTTP/1.1 server on 127.0.0.1 with one behaviour per path (``Connection: close``)."""

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self._routes: dict[str, Handler] = {}
        self._ssl = ssl_context
        self._counters = _Counters()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="loopback-server", daemon=True
        )
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self.port = 0

    # -------------------------------------------------------------- lifecycle

    def start(self) -> LoopbackServer:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._start(), self._loop)
        future.result(timeout=10)
        return self

    async def _start(self) -> None:
        self._stopping = asyncio.Event()
        self._server = await asyncio.start_server(
            self._on_connection, host="127.0.0.1", port=0, ssl=self._ssl, backlog=1024
        )
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    async def _stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
        # Let the transports run their close callbacks before the loop stops.
        await asyncio.sleep(0)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # ------------------------------------------------------------------ routes

    def route(self, path: str, handler: Handler) -> str:
        """Serve ``handler`` at ``path``; return its URL."""
        self._routes[path] = handler
        return self.url(path)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        scheme = "https" if self._ssl is not None else "http"
        return f"{scheme}://{host}:{self.port}{path}"

    # ---------------------------------------------------------------- counters

    @property
    def requests(self) -> list[Request]:
        return list(self._counters.requests)

    def hits(self, path: str) -> int:
        return sum(1 for r in self._counters.requests if r.path == path)

    @property
    def max_in_flight(self) -> int:
        return self._counters.max_in_flight

    def body_bytes_sent(self, path: str) -> int:
        return self._counters.body_bytes_sent.get(path, 0)

    def add_body_bytes(self, path: str, count: int) -> None:
        self._counters.body_bytes_sent[path] = self._counters.body_bytes_sent.get(path, 0) + count

    async def wait_stopping(self) -> None:
        await self._stopping.wait()

    # ---------------------------------------------------------------- serving

    async def _on_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        counters = self._counters
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request = _parse_head(head)
            counters.requests.append(request)
            counters.in_flight += 1
            counters.max_in_flight = max(counters.max_in_flight, counters.in_flight)
            try:
                handler = self._routes.get(request.path.split("?", 1)[0], not_found)
                await handler(self, request, writer)
            finally:
                counters.in_flight -= 1
        except (
            asyncio.CancelledError,
            asyncio.IncompleteReadError,
            ConnectionError,
            ssl.SSLError,
            OSError,
        ):
            pass
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            writer.close()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await writer.wait_closed()


def _parse_head(head: bytes) -> Request:
    lines = head.decode("latin-1").split("\r\n")
    method, path, _version = lines[0].split(" ", 2)
    headers: dict[str, str] = {}
    for line in lines[1:]:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return Request(method, path, headers, head)


async def _send(
    writer: asyncio.StreamWriter,
    status: int,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
) -> None:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}"]
    all_headers = {"Content-Length": str(len(body)), "Connection": "close", **(headers or {})}
    lines += [f"{k}: {v}" for k, v in all_headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
    await writer.drain()


# ------------------------------------------------------------------- behaviours


async def not_found(server: LoopbackServer, request: Request, writer: asyncio.StreamWriter) -> None:
    await _send(writer, 404, b"not found\n", {"Content-Type": "text/plain"})


def respond(
    status: int = 200,
    body: bytes = b"",
    *,
    content_type: str = "application/json",
    delay: float = 0.0,
    headers: dict[str, str] | None = None,
) -> Handler:
    """Answer ``status`` with ``body`` after ``delay`` seconds."""

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        if delay:
            await asyncio.sleep(delay)
        await _send(writer, status, body, {"Content-Type": content_type, **(headers or {})})

    return handler


def json_body(document: Any, *, status: int = 200, delay: float = 0.0) -> Handler:
    """Answer a JSON document."""
    return respond(status, json.dumps(document).encode(), delay=delay)


def hang() -> Handler:
    """Accept the request and never answer (until the server stops)."""

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        await server.wait_stopping()

    return handler


def reset() -> Handler:
    """Read the request, then reset the connection (RST, no response)."""

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        sock = writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        writer.transport.abort()

    return handler


def redirect(location: str, status: int = 302) -> Handler:
    """Answer a redirect to ``location``."""
    return respond(status, b"", content_type="text/plain", headers={"Location": location})


def flaky(failures: int, then: Handler, status: int = 500) -> Handler:
    """Answer ``status`` the first ``failures`` times, then behave like ``then``."""
    seen = 0

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        nonlocal seen
        seen += 1
        if seen <= failures:
            await _send(writer, status, b"try again\n", {"Content-Type": "text/plain"})
        else:
            await then(server, request, writer)

    return handler


def huge_body(size: int, *, declare_length: bool, chunk: int = 64 * 1024) -> Handler:
    """Stream ``size`` bytes of JSON-looking filler, counting what reaches the socket.

    With ``declare_length`` the size is announced in ``Content-Length``; without it the
    body is sent chunked, so the client can only find out by reading.
    """

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        sock = writer.get_extra_info("socket")
        # A small send buffer keeps the counter close to what the client actually took.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 * 1024)
        path = request.path
        framing = (
            {"Content-Length": str(size)} if declare_length else {"Transfer-Encoding": "chunked"}
        )
        head = ["HTTP/1.1 200 OK", "Content-Type: application/json", "Connection: close"]
        head += [f"{k}: {v}" for k, v in framing.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await writer.drain()
        block = b" " * chunk
        sent = 0
        while sent < size:
            part = block[: min(chunk, size - sent)]
            writer.write(part if declare_length else b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            sent += len(part)
            server.add_body_bytes(path, len(part))
        if not declare_length:
            writer.write(b"0\r\n\r\n")
            await writer.drain()

    return handler


def free_port() -> int:
    """A port on 127.0.0.1 with nothing listening (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port
