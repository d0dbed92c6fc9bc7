"""Loopback fakes for the agent tests: HTTP services and an emulated Kubernetes API.

Everything listens on 127.0.0.1 on a free port, runs in daemon threads, and is stopped by
the fixture that started it.
"""

from __future__ import annotations

import base64
import copy
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.agent.kube_rbac import Identity, Rbac, request_attributes


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    delay: float = 0.0
    # Announce more bytes than are sent, then close: a response cut in the middle.
    truncate: bool = False
    # stream with chunked encoding instead of Content-Length (a generator: as it yields)
    chunks: Iterable[bytes] | None = None
    drip: float = 0.0  # pause before each chunk: a server that answers, but slowly

    @classmethod
    def json(cls, document: Any, status: int = 200) -> Reply:
        return cls(status=status, body=json.dumps(document).encode())


Handler = Callable[[Request], Reply]


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hanging up mid-request are what the fault tests are about


class FakeServer:
    """A threaded HTTP/1.1 server whose answers come from ``handler`` (replaceable live)."""

    def __init__(
        self, handler: Handler, port: int = 0, *, tls: ssl.SSLContext | None = None
    ) -> None:
        self.handler = handler
        self.scheme = "https" if tls is not None else "http"
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        fake = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                request = Request(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    time.monotonic(),
                )
                with fake._lock:
                    fake.requests.append(request)
                reply = fake.handler(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status == 0:  # drop the connection without an answer
                    self.close_connection = True
                    return
                try:
                    self._write(reply)
                except OSError:
                    self.close_connection = True

            def _write(self, reply: Reply) -> None:
                reason = self.responses.get(reply.status, ("",))[0]
                head = f"HTTP/1.1 {reply.status} {reason}\r\nContent-Type: {reply.content_type}\r\n"
                if reply.chunks is not None:
                    self.wfile.write(f"{head}Transfer-Encoding: chunked\r\n\r\n".encode())
                    for chunk in reply.chunks:
                        time.sleep(reply.drip)
                        self.wfile.flush()
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                    return
                length = len(reply.body) * 2 + 10 if reply.truncate else len(reply.body)
                # Header and body in one write: separate small writes meet Nagle's algorithm.
                self.wfile.write(f"{head}Content-Length: {length}\r\n\r\n".encode() + reply.body)
                if reply.truncate:
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        self._server = _QuietServer(("127.0.0.1", port), _Handler)
        self._server.daemon_threads = True
        if tls is not None:  # the handshake runs in the request's thread, not in accept()
            self._server.socket = tls.wrap_socket(
                self._server.socket, server_side=True, do_handshake_on_connect=False
            )
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def taken(self, path: str | None = None) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if path is None or r.path == path]


# ------------------------------------------------------------------ Prometheus


def prometheus_matrix(series: list[dict[str, Any]]) -> dict[str, Any]:
    return {"status": "success", "data": {"resultType": "matrix", "result": series}}


def sample_series(count: int = 2) -> list[dict[str, Any]]:
    return [
        {
            "metric": {"node": f"n{i}", "namespace": "ns", "pod": f"p{i}"},
            "values": [[1718600000, f"{i}.5"]],
        }
        for i in range(count)
    ]


#: A healthy Prometheus answer: two series.
GOOD_PROMETHEUS = json.dumps(prometheus_matrix(sample_series(2))).encode()


def good_prometheus(request: Request) -> Reply:
    return Reply(body=GOOD_PROMETHEUS)


# ---------------------------------------------------------------- Scoring API


def average_scorer(request: Request) -> Reply:
    """A Scoring API: one result per series, the mean of its values; ``meta`` is added."""
    data = request.json()["data"]
    results = []
    for series in data:
        values = [float(v) for _, v in series["values"]] or [0.0]
        results.append(
            {"metric": {**series["metric"], "meta": "avg"}, "score": sum(values) / len(values)}
        )
    return Reply.json({"results": results})


# ----------------------------------------------------------------- Kubernetes


def _status(code: int, reason: str, message: str) -> Reply:
    return Reply.json(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": reason,
            "message": message,
            "code": code,
        },
        code,
    )


@dataclass
class KubeState:
    objects: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    version: int = 100
    events: list[tuple[int, str, dict[str, Any]]] = field(default_factory=list)


#: Resources the fake serves without a namespace.
CLUSTER_SCOPED = frozenset({"clusterclaims"})


class FakeKube:
    """An emulated Kubernetes API for the resources the agent uses.

    Semantics honoured: ``resourceVersion`` bumped on every write; POST answers 201 and
    drops ``status``; POST of an existing name is 409 AlreadyExists; PUT (main resource
    or ``/status``) with a stale ``resourceVersion`` is 409 Conflict; PUT on ``/status``
    changes only status, on the main resource everything but status; ConfigMap list with a
    field selector and watch (chunked event stream). Faults: ``fail`` queues statuses for
    the next matching requests, ``conflicts`` forces 409s on status writes, and ``down``
    closes every connection without an answer.

    With ``tls`` it serves HTTPS; with ``tokens`` every request needs one of those bearer
    tokens (401 otherwise), and with ``rbac`` as well its identity must be allowed the
    request (403 otherwise, recorded in ``denied``); ``used`` collects the (verb,
    resource) pairs of the allowed requests.
    """

    def __init__(
        self,
        *,
        tls: ssl.SSLContext | None = None,
        ca_pem: str | None = None,
        tokens: dict[str, Identity] | None = None,
        rbac: Rbac | None = None,
    ) -> None:
        self.ca_pem = ca_pem
        self.tokens = tokens
        self.rbac = rbac
        self.denied: list[str] = []
        self.used: set[tuple[str, str]] = set()
        self.state = KubeState()
        self.cond = threading.Condition()
        self.fail: list[tuple[str, str, int]] = []  # (method, path fragment, status)
        self.conflicts = 0
        self.down = False
        self.pages_served = 0  # answers to lists across namespaces
        #: A hostile answer to an authorized request (a flood, a drip), or None: as usual.
        self.hostile: Callable[[Request], Reply | None] = lambda request: None
        self.server = FakeServer(self._handle, tls=tls)

    # -- test helpers
    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> FakeKube:
        self.server.start()
        return self

    def stop(self) -> None:
        with self.cond:
            self.down = True
            self.cond.notify_all()
        self.server.stop()

    def kubeconfig(self, token: str = "kube-test-token-123", *, token_file: str = "") -> str:
        """A kubeconfig for this API: the token itself, or ``tokenFile`` (the file's path,
        relative to the kubeconfig's folder, as OCM's token registration writes it)."""
        cluster: dict[str, str] = {"server": self.url}
        if self.ca_pem is not None:
            cluster["certificate-authority-data"] = base64.b64encode(self.ca_pem.encode()).decode()
        user = {"tokenFile": token_file} if token_file else {"token": token}
        return json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "fake", "cluster": cluster}],
                "users": [{"name": "agent", "user": user}],
                "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "agent"}}],
                "current-context": "fake",
            }
        )

    def put(self, kind: str, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
        """Create or replace an object directly (as another client would)."""
        with self.cond:
            key = (kind, namespace, obj["metadata"]["name"])
            event = "MODIFIED" if key in self.state.objects else "ADDED"
            stored = self._store(key, copy.deepcopy(obj))
            self.state.events.append((self.state.version, event, copy.deepcopy(stored)))
            self.cond.notify_all()
            return stored

    def delete(self, kind: str, namespace: str, name: str) -> None:
        with self.cond:
            obj = self.state.objects.pop((kind, namespace, name))
            self.state.version += 1
            self.state.events.append((self.state.version, "DELETED", obj))
            self.cond.notify_all()

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self.cond:
            found = self.state.objects.get((kind, namespace, name))
            return copy.deepcopy(found) if found else None

    def set_configmap(self, namespace: str, name: str, data: dict[str, str]) -> None:
        self.put(
            "configmaps",
            namespace,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data},
        )

    def set_secret(self, namespace: str, name: str, data: dict[str, str]) -> None:
        encoded = {k: base64.b64encode(v.encode()).decode() for k, v in data.items()}
        self.put(
            "secrets",
            namespace,
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": encoded},
        )

    # -- server side
    def _store(self, key: tuple[str, str, str], obj: dict[str, Any]) -> dict[str, Any]:
        self.state.version += 1
        meta = obj.setdefault("metadata", {})
        meta["name"] = key[2]
        if key[1]:
            meta["namespace"] = key[1]
        else:  # cluster-scoped
            meta.pop("namespace", None)
        meta["resourceVersion"] = str(self.state.version)
        meta.setdefault("uid", f"uid-{key[2]}")
        self.state.objects[key] = obj
        return obj

    def _authorized(self, request: Request) -> Reply | None:
        """The 401 or 403 the request gets, or ``None`` when it may proceed."""
        if self.tokens is None:
            return None
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        who = self.tokens.get(token) if scheme.lower() == "bearer" else None
        if who is None:
            return _status(401, "Unauthorized", "Unauthorized")
        if self.rbac is None:
            return None
        attributes = request_attributes(request.method, request.path, request.query)
        if attributes is None or not self.rbac.allows(who, attributes):
            message = (
                attributes.describe(who)
                if attributes is not None
                else f'forbidden: User "{who.user}" cannot {request.method} path "{request.path}"'
            )
            with self.cond:
                self.denied.append(message)
            return _status(403, "Forbidden", message)
        resource = attributes.resource + (
            f"/{attributes.subresource}" if attributes.subresource else ""
        )
        with self.cond:
            self.used.add((attributes.verb, resource))
        return None

    def _handle(self, request: Request) -> Reply:
        if self.down:
            return Reply(status=0)
        refused = self._authorized(request)
        if refused is not None:
            return refused
        hostile = self.hostile(request)
        if hostile is not None:
            return hostile
        for index, (method, fragment, code) in enumerate(self.fail):
            if request.method == method and fragment in request.path:
                del self.fail[index]
                return _status(
                    code, "InternalError" if code >= 500 else "Injected", "injected fault"
                )
        parts = request.path.strip("/").split("/")
        # /api/v1/namespaces/NS/KIND[/NAME]  or  /apis/G/V/namespaces/NS/KIND[/NAME[/status]]
        if parts[:2] == ["api", "v1"]:
            rest = parts[2:]
        elif parts[0] == "apis" and len(parts) >= 3:
            rest = parts[3:]
        else:
            return _status(404, "NotFound", "unknown path")
        if rest and rest[0] in CLUSTER_SCOPED:
            with self.cond:
                return self._cluster_scoped(request, rest)
        if len(rest) == 1 and request.method == "GET":  # a list across namespaces
            with self.cond:
                return self._list_all(request, rest[0])
        if len(rest) < 3 or rest[0] != "namespaces":
            return _status(404, "NotFound", "unknown path")
        namespace, kind = rest[1], rest[2]
        name = rest[3] if len(rest) > 3 else None
        subresource = rest[4] if len(rest) > 4 else None
        with self.cond:
            if name is None and request.method == "GET":
                if request.query.get("watch", ["false"])[0] == "true":
                    return self._watch(request, kind, namespace)
                return self._list(request, kind, namespace)
            if name is None and request.method == "POST":
                return self._create(request, kind, namespace)
            if name is not None and request.method == "GET":
                found = self.state.objects.get((kind, namespace, name))
                if found is None:
                    return _status(404, "NotFound", f"{kind} {name} not found")
                return Reply.json(found)
            if name is not None and request.method == "PUT":
                return self._replace(request, kind, namespace, name, subresource)
        return _status(405, "MethodNotAllowed", "not supported by the fake")

    def _cluster_scoped(self, request: Request, rest: list[str]) -> Reply:
        """A cluster-scoped resource (``/apis/G/V/KIND[/NAME]``): get, create, replace."""
        kind, name = rest[0], rest[1] if len(rest) > 1 else None
        if name is None and request.method == "POST":
            return self._create(request, kind, "")
        if name is not None and request.method == "GET":
            found = self.state.objects.get((kind, "", name))
            return (
                Reply.json(found) if found else _status(404, "NotFound", f"{kind} {name} not found")
            )
        if name is not None and request.method == "PUT":
            return self._replace(request, kind, "", name, rest[2] if len(rest) > 2 else None)
        return _status(405, "MethodNotAllowed", "not supported by the fake")

    def _selected(self, request: Request, obj: dict[str, Any]) -> bool:
        selector = request.query.get("fieldSelector", [""])[0]
        if selector.startswith("metadata.name="):
            return bool(obj["metadata"]["name"] == selector.split("=", 1)[1])
        return True

    def _list_all(self, request: Request, kind: str) -> Reply:
        """A list across namespaces, in pages when asked (``limit``, then ``continue``)."""
        items = [obj for (k, _, _), obj in sorted(self.state.objects.items()) if k == kind]
        start = int(request.query.get("continue", ["0"])[0] or 0)
        limit = int(request.query.get("limit", ["0"])[0] or 0) or len(items) or 1
        page = items[start : start + limit]
        self.pages_served += 1
        metadata = {"resourceVersion": str(self.state.version)}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)  # real servers send an opaque token
        return Reply.json({"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": page})

    def _list(self, request: Request, kind: str, namespace: str) -> Reply:
        """A namespace's list, in pages when asked (``limit``, then ``continue``)."""
        items = [
            obj
            for (k, ns, _), obj in sorted(self.state.objects.items())
            if k == kind and ns == namespace and self._selected(request, obj)
        ]
        start = int(request.query.get("continue", ["0"])[0] or 0)
        limit = int(request.query.get("limit", ["0"])[0] or 0) or len(items) or 1
        metadata = {"resourceVersion": str(self.state.version)}
        if start + limit < len(items):
            metadata["continue"] = str(start + limit)  # real servers send an opaque token
        return Reply.json(
            {
                "kind": "List",
                "apiVersion": "v1",
                "metadata": metadata,
                "items": items[start : start + limit],
            }
        )

    def _watch(self, request: Request, kind: str, namespace: str) -> Reply:
        since = int(request.query.get("resourceVersion", ["0"])[0] or 0)
        timeout = float(request.query.get("timeoutSeconds", ["5"])[0])
        deadline = time.monotonic() + timeout
        sent: list[bytes] = []
        while not sent and not self.down:
            for version, event, obj in self.state.events:
                if (
                    version > since
                    and obj["metadata"].get("namespace") == namespace
                    and self._kind_of(obj) == kind
                    and self._selected(request, obj)
                ):
                    sent.append(json.dumps({"type": event, "object": obj}).encode() + b"\n")
            remaining = deadline - time.monotonic()
            if sent or remaining <= 0:
                break
            self.cond.wait(min(remaining, 0.2))
        # Answer with the events seen so far and end the watch; the client lists/watches again.
        return Reply(chunks=sent)

    @staticmethod
    def _kind_of(obj: dict[str, Any]) -> str:
        return {
            "ConfigMap": "configmaps",
            "Secret": "secrets",
            "Policy": "policies",
            "ClusterClaim": "clusterclaims",
        }.get(obj.get("kind", ""), "addonplacementscores")

    def _create(self, request: Request, kind: str, namespace: str) -> Reply:
        obj = request.json()
        key = (kind, namespace, obj["metadata"]["name"])
        if key in self.state.objects:
            return _status(409, "AlreadyExists", f"{kind} {key[2]} already exists")
        obj.pop("status", None)  # the API drops status on create when a status subresource exists
        stored = self._store(key, obj)
        self.state.events.append((self.state.version, "ADDED", copy.deepcopy(stored)))
        self.cond.notify_all()
        return Reply.json(stored, 201)

    def _replace(
        self, request: Request, kind: str, namespace: str, name: str, subresource: str | None
    ) -> Reply:
        key = (kind, namespace, name)
        current = self.state.objects.get(key)
        if current is None:
            return _status(404, "NotFound", f"{kind} {name} not found")
        body = request.json()
        if subresource == "status" and self.conflicts > 0:
            self.conflicts -= 1
            current["metadata"]["resourceVersion"] = str(self.state.version + 1)
            self.state.version += 1
            return _status(409, "Conflict", "the object has been modified (injected)")
        if (
            body.get("metadata", {}).get("resourceVersion")
            != current["metadata"]["resourceVersion"]
        ):
            return _status(
                409,
                "Conflict",
                "the object has been modified; please apply your changes to the latest version",
            )
        updated = copy.deepcopy(current)
        if subresource == "status":
            updated["status"] = body.get("status")
        else:
            status = updated.get("status")
            updated = body
            if status is not None:
                updated["status"] = status
        stored = self._store(key, updated)
        self.state.events.append((self.state.version, "MODIFIED", copy.deepcopy(stored)))
        self.cond.notify_all()
        return Reply.json(stored)


class HangingServer:
    """Accepts every connection on loopback and never answers: a Scoring API that hangs."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=4096)
        self._listener.settimeout(0.2)  # accept() wakes up to see stop()
        self._stopping = threading.Event()
        self._held: list[socket.socket] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, name="hanging", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @property
    def accepted(self) -> int:
        with self._lock:
            return len(self._held)

    def start(self) -> HangingServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        self._thread.join(5)
        self._listener.close()
        with self._lock:
            for connection in self._held:
                connection.close()
            self._held.clear()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            with self._lock:
                self._held.append(connection)
