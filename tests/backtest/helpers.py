"""``dsf-compile backtest`` as the tests run it: in this process, or in a child process
with its own peak memory; a local HTTP server for hostile history APIs."""

from __future__ import annotations

import contextlib
import io
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dsf_compile.commands.cli import run
from tests.child_command import Run, run_dsf_compile
from tests.fleet_repo import EXAMPLE_FLEET


def dsf_backtest(*argv: str, root: Path = EXAMPLE_FLEET) -> Run:
    """``dsf-compile --root ROOT backtest ARGV…`` in a fresh interpreter, with its own
    peak memory (:mod:`tests.child_command`)."""
    return run_dsf_compile(root, "backtest", *argv)


def backtest(*args: str, root: Path = EXAMPLE_FLEET) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "backtest", *args], out, err)
    return code, out.getvalue(), err.getvalue()


def window_args(day: Any) -> list[str]:
    from datetime import UTC, datetime

    start, end, _ = day
    iso = [datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for t in (start, end)]
    return ["--from", iso[0], "--to", iso[1], "--step", "5m"]


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
