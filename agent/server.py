"""``/metrics``, ``/healthz`` and ``/readyz`` on a minimal asyncio HTTP/1.1 server.

Three read-only GET endpoints do not justify a web framework; one request per connection
keeps the parser trivial (Prometheus and the kubelet open a connection per scrape/probe
or cope with ``Connection: close``).

The server runs in its own thread with its own event loop (:class:`EndpointServer`):
the liveness probe must be answered however busy the scoring loop is (thousands of
scorers, a slow parse), or the kubelet restarts an agent that is merely loaded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from agent.logs import fields
from agent.textformat import CONTENT_TYPE

log = logging.getLogger("dsf.agent.server")
_MAX_HEADER_BYTES = 16 * 1024
_READ_TIMEOUT = 10.0


def _response(status: str, body: bytes, content_type: str = "text/plain; charset=utf-8") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode() + body


def route(path: str, method: str, metrics: Callable[[], bytes], ready: Callable[[], bool]) -> bytes:
    """The full HTTP response for one request (pure apart from ``metrics``, the exposition)."""
    path = path.split("?", 1)[0]
    if method not in ("GET", "HEAD"):
        return _response("405 Method Not Allowed", b"method not allowed\n")
    if path == "/metrics":
        return _response("200 OK", metrics(), CONTENT_TYPE)
    if path == "/healthz":
        return _response("200 OK", b"ok\n")
    if path == "/readyz":
        if ready():
            return _response("200 OK", b"ready\n")
        return _response("503 Service Unavailable", b"configuration not loaded yet\n")
    return _response("404 Not Found", b"not found\n")


async def start_server(
    host: str, port: int, metrics: Callable[[], bytes], ready: Callable[[], bool]
) -> asyncio.Server:
    """Listen on ``host:port`` (port 0 picks a free one) and serve the three endpoints."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with asyncio.timeout(_READ_TIMEOUT):
                head = await reader.readuntil(b"\r\n\r\n")
            if len(head) > _MAX_HEADER_BYTES:
                raise ValueError("headers too large")
            method, path, _ = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
            response = route(path, method, metrics, ready)
            if method == "HEAD":
                response = response.split(b"\r\n\r\n", 1)[0] + b"\r\n\r\n"
            writer.write(response)
            await writer.drain()
        except (
            TimeoutError,
            ValueError,
            asyncio.IncompleteReadError,
            asyncio.LimitOverrunError,
            OSError,
        ):
            with contextlib.suppress(OSError):
                writer.write(_response("400 Bad Request", b"bad request\n"))
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    server = await asyncio.start_server(handle, host, port, limit=_MAX_HEADER_BYTES)
    log.info("http_listening", extra=fields(address=f"{host}:{server_port(server)}"))
    return server


def server_port(server: asyncio.Server) -> int:
    """The port a started server listens on."""
    return int(server.sockets[0].getsockname()[1])


class EndpointServer:
    """:func:`start_server` on a daemon thread with its own event loop."""

    def __init__(
        self, host: str, port: int, metrics: Callable[[], bytes], ready: Callable[[], bool]
    ) -> None:
        self._address = (host, port)
        self._metrics = metrics
        self._ready = ready
        self._started = threading.Event()
        self._error: OSError | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = threading.Thread(target=self._serve, name="endpoints", daemon=True)
        self.port = 0

    def start(self) -> EndpointServer:
        """Listen, then return; ``OSError`` when the address cannot be bound."""
        self._thread.start()
        self._started.wait()
        if self._error is not None:
            raise self._error
        return self

    def close(self) -> None:
        """Stop listening and end the thread."""
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # already stopped
                loop.call_soon_threadsafe(loop.stop)
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            host, port = self._address
            server = loop.run_until_complete(start_server(host, port, self._metrics, self._ready))
        except OSError as err:
            self._error = err
            self._started.set()
            loop.close()
            return
        self.port = server_port(server)
        self._loop = loop
        self._started.set()
        try:
            loop.run_forever()
        finally:
            server.close()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.wait_for(server.wait_closed(), 2))
            loop.close()
