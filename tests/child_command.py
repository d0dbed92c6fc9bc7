"""``dsf-compile`` in a fresh interpreter, as a user runs it, with its own peak memory.

The peak is the child's own high-water mark (``VmHWM`` of ``/proc/self/status``, read as it
exits), not ``wait4``'s ``ru_maxrss``: Linux carries the parent's high-water mark into a
child across ``fork``/``vfork`` and ``exec``, so a child of a large pytest process would
report the test process's memory, not its own.
"""

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

#: Runs ``python -m dsf_compile ARGV…`` and writes its peak RSS (KiB) to the inherited fd.
_PEAK_WRAPPER = """\
import atexit, os, runpy, sys

def _peak():
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                os.write(int(os.environ["DSF_TEST_PEAK_FD"]), line.split()[1].encode())

atexit.register(_peak)
sys.argv[0] = "dsf-compile"
runpy.run_module("dsf_compile", run_name="__main__", alter_sys=True)
"""


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
    readable, writable = os.pipe()
    env["DSF_TEST_PEAK_FD"] = str(writable)
    command = [sys.executable, "-c", _PEAK_WRAPPER, "--root", str(root), *argv]
    try:
        with (
            subprocess.Popen(
                command,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                pass_fds=(writable,),
            ) as proc,
            ThreadPoolExecutor(2) as pool,
        ):
            os.close(writable)
            writable = -1
            guard = threading.Timer(hang_guard, proc.kill)
            guard.start()
            assert proc.stdout is not None and proc.stderr is not None
            stdout, stderr = pool.submit(proc.stdout.read), pool.submit(proc.stderr.read)
            proc.wait()
            out, err = (f.result().decode("utf-8", "replace") for f in (stdout, stderr))
            guard.cancel()
        peak_kib = os.read(readable, 64).decode("ascii")
    finally:
        os.close(readable)
        if writable >= 0:
            os.close(writable)
    assert proc.returncode != -signal.SIGKILL, f"hung past {hang_guard} s: {err}"
    assert "Traceback" not in err, err
    assert peak_kib, f"no peak memory reported (exit {proc.returncode}): {err}"
    return Run(proc.returncode, out, err, int(peak_kib) / 1024)
