"""``dsf-compile`` in a fresh interpreter, as a user runs it, with its own peak memory
(:mod:`bench.peak`: not ``wait4``'s, which a child of a large pytest process inherits)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from bench.peak import measured_dsf_compile
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


def run_dsf_compile(root: Path, *argv: str, hang_guard: float = HANG_GUARD) -> Run:
    """``dsf-compile --root ROOT ARGV…`` in a fresh interpreter: its output, exit code and
    peak memory; no traceback, and never a hang past ``hang_guard`` seconds."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("GITHUB_ACTIONS", None)
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with (
        measured_dsf_compile(["--root", str(root), *argv], env, **pipes) as (proc, peak),
        ThreadPoolExecutor(2) as pool,
    ):
        guard = threading.Timer(hang_guard, proc.kill)
        guard.start()
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = pool.submit(proc.stdout.read), pool.submit(proc.stderr.read)
        proc.wait()
        out, err = (f.result().decode("utf-8", "replace") for f in (stdout, stderr))
        guard.cancel()
    assert proc.returncode != -signal.SIGKILL, f"hung past {hang_guard} s: {err}"
    assert "Traceback" not in err, err
    assert peak, f"no peak memory reported (exit {proc.returncode}): {err}"
    return Run(proc.returncode, out, err, peak[0])
