"""A forward HTTP proxy on 127.0.0.1 that stands in for a managed cluster's DNS.

The rendered summaries name in-cluster services (``http://sample-scorer.dynamic-scoring.svc:8000``,
``http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090``) that do not resolve on a
test machine. Rather than rewrite those URLs in the ConfigMap the agent reads, the agent is
started with ``HTTP_PROXY`` pointing here (it honours the standard proxy variables, as it
does behind a site proxy in production) and this proxy connects each ``host:port`` to the
loopback address that serves it. The agent's requests are unchanged: same URL, same
``Host`` header, same body; only the TCP connection goes elsewhere, like ``sync --resolve``.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

# Headers that belong to one hop (RFC 9110 §7.6.1) and are not forwarded.
_HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client hanging up is not the proxy's problem


class FleetProxy:
    """Forwards absolute-form HTTP requests for the names in ``mapping`` to their loopback
    address (``"host:port" -> "127.0.0.1:port"``); any other name gets 502.

    ``mapping`` may be replaced while the proxy runs; ``seen`` lists the ``(method, url)``
    of every request received.
    """

    def __init__(self, mapping: Mapping[str, str] | None = None) -> None:
        self.mapping: dict[str, str] = dict(mapping or {})
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()
        proxy = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                url = urlsplit(self.path)
                with proxy._lock:
                    target = proxy.mapping.get(url.netloc)
                    proxy.seen.append((self.command, self.path))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if target is None or url.scheme != "http":
                    self._answer(502, [("Content-Type", "text/plain")], b"unknown host\n")
                    return
                host, _, port = target.rpartition(":")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                connection = http.client.HTTPConnection(host, int(port), timeout=60)
                try:
                    path = url.path + (f"?{url.query}" if url.query else "")
                    connection.request(self.command, path or "/", body=body, headers=headers)
                    response = connection.getresponse()
                    payload = response.read()
                    kept = [
                        (k, v) for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP
                    ]
                    self._answer(response.status, kept, payload)
                except OSError as err:
                    self._answer(502, [("Content-Type", "text/plain")], f"{err}\n".encode())
                finally:
                    connection.close()

            def _answer(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
                self.send_response_only(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_DELETE = _forward

        self._server = _QuietServer(("127.0.0.1", 0), _Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="fleet-proxy", daemon=True
        )

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``, the value for ``HTTP_PROXY``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def urls(self) -> list[str]:
        """The URL of every request received so far, in order."""
        with self._lock:
            return [url for _, url in self.seen]

    def hosts_seen(self) -> set[str]:
        """The ``host:port`` of every request received so far."""
        return {urlsplit(url).netloc for url in self.urls()}

    def __enter__(self) -> FleetProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
