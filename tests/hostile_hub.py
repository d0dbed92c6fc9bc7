"""A hostile hub: an HTTP server on 127.0.0.1 that the real ``kubernetes`` client talks to.

Each test sets :attr:`HostileHub.answer`, a function of the request that yields the bytes
to send, each after a pause: so one server gives a repeated or ever-new ``continue``
token, a drip (in the status line, the headers or the body), a flood, or malformed
objects. It counts what it served (requests, bytes), so tests assert on counters: a
client that stopped reading stops the flood, whatever the machine's speed.
"""

from __future__ import annotations

import json
import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class HubRequest:
    method: str
    path: str
    query: dict[str, list[str]]


#: What to send for a request: (pause before, bytes) pairs.
Answer = Callable[[HubRequest], Iterator[tuple[float, bytes]]]


def json_answer(document: Any, status: int = 200) -> Iterator[tuple[float, bytes]]:
    """A whole answer at once, with its length."""
    body = document if isinstance(document, bytes) else json.dumps(document).encode()
    head = (
        f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    yield 0.0, head.encode() + body


def list_of(items: list[Any], token: str = "", kind: str = "List") -> dict[str, Any]:
    """A list answer as the API server shapes it."""
    metadata: dict[str, Any] = {"resourceVersion": "7"}
    if token:
        metadata["continue"] = token
    return {"apiVersion": "v1", "kind": kind, "metadata": metadata, "items": items}


class HostileHub:
    """Serves :attr:`answer` to every request, one thread per connection."""

    def __init__(self) -> None:
        self.answer: Answer = lambda request: json_answer(list_of([]))
        #: Set to answer before any request is read (a TLS handshake that drips).
        self.greeting: Iterator[tuple[float, bytes]] | None = None
        self.requests: list[HubRequest] = []
        self.bytes_sent = 0
        #: Answers cut because the client hung up (a send refused: reset, broken pipe).
        self.hung_up = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        hub = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                hub._serve(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # clients hanging up is what these tests are about

        self._server = Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def kubeconfig(self) -> str:
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "hub", "cluster": {"server": self.url}}],
                "users": [{"name": "reader", "user": {"token": "hub-reader-token"}}],
                "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "reader"}}],
                "current-context": "hub",
            }
        )

    def start(self) -> HostileHub:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def _serve(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        if self.greeting is not None:
            self._send(conn, self.greeting)
            return
        head = b""
        while b"\r\n\r\n" not in head and len(head) < 65536:
            data = conn.recv(4096)
            if not data:
                return
            head += data
        method, target = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
        parts = urlsplit(target)
        request = HubRequest(method, parts.path, parse_qs(parts.query))
        with self._lock:
            self.requests.append(request)
        self._send(conn, self.answer(request))

    def _send(self, conn: socket.socket, parts: Iterator[tuple[float, bytes]]) -> None:
        try:
            for pause, data in parts:
                if pause and self._stop.wait(pause):
                    return
                conn.sendall(data)
                with self._lock:
                    self.bytes_sent += len(data)
        except TimeoutError:
            return  # the client stopped reading without hanging up
        except OSError:
            with self._lock:
                self.hung_up += 1  # the client hung up: it stopped reading, as it should


def drip(data: bytes, every: float) -> Iterator[tuple[float, bytes]]:
    """``data`` one byte at a time, ``every`` seconds apart."""
    for index in range(len(data)):
        yield every, data[index : index + 1]


def endless_body(chunk: bytes = b" " * 65536) -> Iterator[tuple[float, bytes]]:
    """A 200 whose chunked body never ends, as fast as the client reads it."""
    yield (
        0.0,
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
    )
    frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n"
    while True:
        yield 0.0, frame
