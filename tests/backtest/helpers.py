"""``dsf-compile backtest`` as the tests run it: in this process, or in a child process
with its own peak memory; a local HTTP server for hostile history APIs."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from dsf_compile.commands.cli import run
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT

#: A run is killed past this many seconds: a hang fails the test instead of the suite.
HANG_GUARD = 600


@dataclass(frozen=True)
class Run:
    """What one command left: its exit code, stdout, stderr and peak RSS in MiB."""

    code: int
    out: str
    err: str
    rss_mib: float


def dsf_backtest(*argv: str, root: Path = EXAMPLE_FLEET) -> Run:
    """``dsf-compile --root ROOT backtest ARGV…`` in a fresh interpreter; its peak memory
    is its own (from ``wait4``), not the test process's nor another child's."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("GITHUB_ACTIONS", None)
    command = [sys.executable, "-m", "dsf_compile", "--root", str(root), "backtest", *argv]
    with (
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as proc,
        ThreadPoolExecutor(2) as pool,
    ):
        guard = threading.Timer(HANG_GUARD, proc.kill)
        guard.start()
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = pool.submit(proc.stdout.read), pool.submit(proc.stderr.read)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out, err = (f.result().decode("utf-8", "replace") for f in (stdout, stderr))
        guard.cancel()
    assert proc.returncode != -signal.SIGKILL, f"hung past {HANG_GUARD} s: {err}"
    assert "Traceback" not in err, err
    return Run(proc.returncode, out, err, usage.ru_maxrss / 1024)


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
