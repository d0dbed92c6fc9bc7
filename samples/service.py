"""Shared HTTP plumbing of the reference Scoring APIs (standard library only).

A sample is a :class:`ScoringApp`: public ``GET`` documents (``/config``) and bearer-
protected ``POST`` scoring functions, keyed by path. This module does the rest: the route
table (:data:`ROUTES`) and the handler that answers it, ``/healthz``, JSON bodies, the
``{"data": [...]}`` shape check, the body size cap, the constant-time token check, quiet
logging, and the servers (:class:`RunningServer` serves in a background thread). The
command line every sample shares is :mod:`samples.cli`.
"""

from __future__ import annotations

import hmac
import json
import sys
import threading
from collections.abc import Callable, Container
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

Json = Any
# A scoring function gets the validated ``data`` list and returns the ``results`` list.
ScoreFunction = Callable[[list[dict[str, Any]]], list[dict[str, Any]]]
# An action ignores the request body (which may be absent) and returns the JSON answer.
Action = Callable[[], "Json"]

# A body is parsed whole: its objects take up to ~26 times its bytes (measured, the worst
# shape: {"data": [{}, {}, ...]}), so 6 MiB stays under the 256Mi a sample's Deployment
# is given (samples/deploy; tests/test_samples_memory.py). A larger body gets a 413.
DEFAULT_MAX_BODY_BYTES = 6 * 1024 * 1024
HEALTH_PATH = "/healthz"


@dataclass(frozen=True)
class Reply:
    """A raw answer, for handlers (and test fakes) that need more than a JSON 200."""

    status: int
    body: bytes
    content_type: str = "application/json"
    headers: tuple[tuple[str, str], ...] = ()


class BadRequestError(ValueError):
    """The request body is not a ``/scoring`` request; answered with 400."""


class UpstreamError(RuntimeError):
    """A service the scorer depends on failed or answered nonsense.

    Answered with ``status`` (502 bad answer, 503 unavailable, 504 timed out) and the
    message as the ``error`` text, so the agent's log says what went wrong upstream.
    """

    def __init__(self, status: HTTPStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class ScoringApp:
    """What one sample serves: public documents and protected scoring functions."""

    documents: dict[str, Json] = field(default_factory=dict)
    scorers: dict[str, ScoreFunction] = field(default_factory=dict)
    # Bearer-protected POST paths that take no body (upstream's curl examples send none).
    actions: dict[str, Action] = field(default_factory=dict)
    token: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    # Anything else a fake needs (raw replies for any method and path).
    raw: dict[tuple[str, str], Callable[[], Reply]] = field(default_factory=dict)


def parse_scoring_request(body: bytes) -> list[dict[str, Any]]:
    """Check that ``body`` is ``{"data": [series, ...]}`` and return the series list.

    A series is ``{"metric": {str: str}, "values": [[time, "value"], ...]}``; the
    values' text is not parsed here (Prometheus sends ``"NaN"`` and ``"+Inf"`` too).
    """
    try:
        document = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise BadRequestError(f"body is not JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), list):
        raise BadRequestError('body must be a JSON object {"data": [...]}')
    data: list[dict[str, Any]] = document["data"]
    for index, series in enumerate(data):
        _check_series(series, f"data[{index}]")
    return data


def _check_series(series: Any, where: str) -> None:
    if not isinstance(series, dict):
        raise BadRequestError(f"{where} must be an object")
    metric = series.get("metric", {})
    if not isinstance(metric, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in metric.items()
    ):
        raise BadRequestError(f"{where}.metric must map label names to strings")
    values = series.get("values", [])
    if not isinstance(values, list):
        raise BadRequestError(f"{where}.values must be a list")
    if not all(_is_point(point) for point in values):
        raise BadRequestError(f'{where}.values items must be [time, "value"]')


def _is_point(point: Any) -> bool:
    return (
        isinstance(point, list)
        and len(point) == 2
        and not isinstance(point[0], bool)
        and isinstance(point[0], int | float)
        and isinstance(point[1], str)
    )


def _json_bytes(document: Json) -> bytes:
    # allow_nan=False: a NaN would be invalid JSON for strict clients; fail loudly instead.
    return json.dumps(document, allow_nan=False, separators=(",", ":")).encode()


def _error(status: HTTPStatus, message: str, headers: tuple[tuple[str, str], ...] = ()) -> Reply:
    return Reply(status, _json_bytes({"error": message}), headers=headers)


class ScoringHandler(BaseHTTPRequestHandler):
    """Serves the :class:`ScoringApp` in ``app``; :func:`make_handler` makes one per app.

    :data:`ROUTES` says which method a path takes and which method here answers it.
    """

    app: ClassVar[ScoringApp]
    verbose: ClassVar[bool] = False
    protocol_version = "HTTP/1.1"  # keep-alive, so the agent's client can reuse connections
    server_version = "dsf-sample"
    sys_version = ""
    timeout = 60  # a client that stops sending must not hold a thread forever
    # Headers and body go out in two writes; with Nagle on, a keep-alive client waits
    # for the delayed ACK (about 40 ms) on every request.
    disable_nagle_algorithm = True
    # Whether the POST body was read: unread bytes would be taken for the next request.
    _body_read = False

    def do_GET(self) -> None:
        """Answer a GET: ``/healthz`` or a document."""
        self._answer(self._route("GET"))

    def do_POST(self) -> None:
        """Answer a POST: a scoring function or an action."""
        self._body_read = False
        reply = self._route("POST")
        if not self._body_read:
            # Unread body bytes would be taken for the next request on this connection.
            self.close_connection = True
        self._answer(reply)

    def _route(self, method: str) -> Reply:
        path = self.path.split("?", 1)[0]
        raw = self.app.raw.get((method, path))
        if raw is not None:
            return raw()
        route = next((route for route in ROUTES if path in route.paths(self.app)), None)
        if route is None:
            return _error(HTTPStatus.NOT_FOUND, f"no such path: {path}")
        if method != route.method:
            return _error(
                HTTPStatus.METHOD_NOT_ALLOWED, f"use {route.method}", (("Allow", route.method),)
            )
        return route.answer(self, path)

    def health(self, path: str) -> Reply:
        """``{"status": "ok"}``: the process serves."""
        return Reply(200, _json_bytes({"status": "ok"}))

    def document(self, path: str) -> Reply:
        """The public document at ``path``."""
        return Reply(200, _json_bytes(self.app.documents[path]))

    def act(self, path: str) -> Reply:
        """Run the action at ``path``; its body, if any, is read and dropped."""
        refused = self._unauthorized()
        if refused is not None:
            return refused
        length_text = self.headers.get("Content-Length", "0").strip()
        if length_text.isdigit() and int(length_text) <= self.app.max_body_bytes:
            self.rfile.read(int(length_text))  # read and dropped: the connection stays usable
            self._body_read = True
        return Reply(200, _json_bytes(self.app.actions[path]()))

    def score(self, path: str) -> Reply:
        """Run the scoring function at ``path`` on the request's series."""
        refused = self._unauthorized()
        if refused is not None:
            return refused
        body = self._read_body()
        if isinstance(body, Reply):
            return body
        try:
            results = self.app.scorers[path](parse_scoring_request(body))
        except BadRequestError as error:
            return _error(HTTPStatus.BAD_REQUEST, str(error))
        except UpstreamError as error:
            sys.stderr.write(f"scoring failed: {error.status.value}: {error}\n")
            return _error(error.status, str(error))
        except Exception as error:  # a scorer bug must answer 500, not drop the connection
            sys.stderr.write(f"scoring failed: {type(error).__name__}: {error}\n")
            return _error(HTTPStatus.INTERNAL_SERVER_ERROR, "scoring failed")
        return Reply(200, _json_bytes({"results": results}))

    def _read_body(self) -> bytes | Reply:
        """The request body, or the error answer when its length is missing, bad or too large."""
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            return _error(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
        try:
            length = int(length_text)
        except ValueError:
            length = -1
        if length < 0:
            return _error(HTTPStatus.BAD_REQUEST, "bad Content-Length")
        if length > self.app.max_body_bytes:
            return _error(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"body larger than {self.app.max_body_bytes} bytes",
            )
        body = self.rfile.read(length)
        self._body_read = True
        return body

    def _unauthorized(self) -> Reply | None:
        token = self.app.token
        if token is None or self._authorized(token):
            return None
        return _error(
            HTTPStatus.UNAUTHORIZED,
            "missing or wrong bearer token",
            (("WWW-Authenticate", "Bearer"),),
        )

    def _authorized(self, token: str) -> bool:
        scheme, _, given = self.headers.get("Authorization", "").partition(" ")
        # http.server decodes headers as Latin-1: encoding back gives the bytes sent,
        # compared in constant time against the token's UTF-8 bytes.
        return scheme.lower() == "bearer" and hmac.compare_digest(
            given.strip().encode("latin-1", "replace"), token.encode()
        )

    def _answer(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(reply.body)))
        for name, value in reply.headers:
            self.send_header(name, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet unless ``verbose``; the request line never holds the token (it is a header)."""
        if self.verbose:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


@dataclass(frozen=True)
class Route:
    """A kind of path: which paths of an app are of it, the method they take, their answer."""

    paths: Callable[[ScoringApp], Container[str]]
    method: str
    answer: Callable[[ScoringHandler, str], Reply]


# Looked up in order, after ScoringApp.raw; a path of none of them answers 404.
ROUTES: tuple[Route, ...] = (
    Route(lambda app: (HEALTH_PATH,), "GET", ScoringHandler.health),
    Route(lambda app: app.documents, "GET", ScoringHandler.document),
    Route(lambda app: app.scorers, "POST", ScoringHandler.score),
    Route(lambda app: app.actions, "POST", ScoringHandler.act),
)


def make_handler(app: ScoringApp, *, verbose: bool = False) -> type[BaseHTTPRequestHandler]:
    """The request handler class serving ``app`` (``verbose``: one stderr line a request)."""

    class Handler(ScoringHandler):
        pass

    Handler.app = app
    Handler.verbose = verbose
    return Handler


def listen_address(server: ThreadingHTTPServer) -> str:
    """``host:port`` of a bound server (``[host]:port`` for IPv6)."""
    host, port = server.socket.getsockname()[:2]
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class QuietServer(ThreadingHTTPServer):
    """A threading server that does not print a traceback when a client goes away."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        error = sys.exc_info()[1]
        # Clients closing idle keep-alive connections, or timing out, are routine.
        if isinstance(error, ConnectionError | TimeoutError):
            return
        sys.stderr.write(
            f"request from {client_address[0]} failed: {type(error).__name__}: {error}\n"
        )


class RunningServer:
    """A sample serving in a background thread; ``close()`` stops it."""

    def __init__(self, app: ScoringApp, host: str = "127.0.0.1", port: int = 0) -> None:
        self.server = QuietServer((host, port), make_handler(app))
        self._thread = threading.Thread(
            # A short poll interval: close() waits up to one interval for the loop to stop.
            target=self.server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="sample-scorer",
            daemon=True,
        )
        self._thread.start()

    @property
    def address(self) -> str:
        """``host:port`` the server listens on."""
        return listen_address(self.server)

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    def __enter__(self) -> RunningServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
