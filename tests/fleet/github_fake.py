"""A loopback stand-in for GitHub's REST API: the issue comments of pull requests.

Enough of the API for the report's comment: list (paginated, ``per_page``/``page``),
create, edit; every request recorded; ``refuse`` answers every request with that status
(a fork's read-only token: 403). Bound to 127.0.0.1, stopped by the ``with`` block.
:func:`install_gh` puts a stand-in for GitHub's ``gh`` CLI on a ``PATH`` folder.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

TOKEN = "ghs_fake-token-never-printed"
#: ``gh``, standing in for GitHub's CLI (not installed here): it records every call and
#: answers ``pr list`` from the pull request it was asked to create.
_GH = """#!/bin/sh
echo "$*" >> "$GH_LOG"
case "$1 $2" in
  "pr list") [ ! -f "$GH_STATE" ] || cat "$GH_STATE" ;;
  "pr create") echo 12 > "$GH_STATE" ;;
esac
"""
_LIST = re.compile(r"^/repos/([^/]+/[^/]+)/issues/(\d+)/comments$")
_EDIT = re.compile(r"^/repos/([^/]+/[^/]+)/issues/comments/(\d+)$")


@dataclass
class FakeGitHub:
    """What the fake holds: comments by pull request number, and every request seen."""

    url: str = ""
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    refuse: int = 0
    next_id: int = 1000
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, number: int, body: str, login: str = "someone") -> int:
        with self.lock:
            self.next_id += 1
            comment = {"id": self.next_id, "body": body, "user": {"login": login}}
            self.comments.setdefault(number, []).append(comment)
            return self.next_id


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: Any) -> None:
            pass

        def _answer(self, status: int, document: Any) -> None:
            body = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        #: Whom the token belongs to (a workflow's GITHUB_TOKEN).
        login = "github-actions[bot]"

        def _serve(self) -> None:
            parts = urlsplit(self.path)
            with fake.lock:
                fake.requests.append((self.command, self.path))
            length = int(self.headers.get("Content-Length") or 0)
            payload = json.loads(self.rfile.read(length) or b"null")
            if self.headers.get("Authorization") != f"Bearer {TOKEN}":
                return self._answer(401, {"message": "Bad credentials"})
            if fake.refuse:
                return self._answer(fake.refuse, {"message": "Resource not accessible"})
            listed, edited = _LIST.match(parts.path), _EDIT.match(parts.path)
            if listed and self.command == "GET":
                query = parse_qs(parts.query)
                size, page = int(query["per_page"][0]), int(query.get("page", ["1"])[0])
                found = fake.comments.get(int(listed[2]), [])
                return self._answer(200, found[(page - 1) * size : page * size])
            if listed and self.command == "POST":
                number = fake.add(int(listed[2]), payload["body"], "github-actions[bot]")
                return self._answer(201, {"id": number, "body": payload["body"]})
            if edited and self.command == "PATCH":
                for comment in (c for cs in fake.comments.values() for c in cs):
                    if comment["id"] == int(edited[2]) and comment["user"]["login"] != self.login:
                        return self._answer(403, {"message": "not the comment's author"})
                    if comment["id"] == int(edited[2]):
                        comment["body"] = payload["body"]
                        return self._answer(200, comment)
            return self._answer(404, {"message": "Not Found"})

        do_GET = do_POST = do_PATCH = _serve

    return Handler


@contextmanager
def fake_github() -> Iterator[FakeGitHub]:
    """A running fake on 127.0.0.1; its ``url`` is what ``$GITHUB_API_URL`` becomes."""
    fake = FakeGitHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def install_gh(bin_dir: Path) -> None:
    """``bin_dir/gh``: records every call in ``$GH_LOG``, answers ``pr list`` from
    ``$GH_STATE``, which ``pr create`` writes."""
    (bin_dir / "gh").write_text(_GH)
    (bin_dir / "gh").chmod(0o755)
