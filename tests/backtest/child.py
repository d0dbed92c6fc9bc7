"""``dsf-compile backtest`` in a child process, as a user runs it, with its own peak memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from tests.fleet_repo import REPO_ROOT

#: A run is killed past this many seconds: a hang fails the test instead of the suite.
HANG_GUARD = 600


@dataclass(frozen=True)
class Run:
    """What one command left: its exit code, stdout, stderr and peak RSS in MiB."""

    code: int
    out: str
    err: str
    rss_mib: float


def dsf_backtest(*argv: str, root: Path = REPO_ROOT) -> Run:
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
