"""A whole ``dsf-compile`` command's own peak memory.

``wait4``'s and ``RUSAGE_CHILDREN``'s ``ru_maxrss`` do not give it: Linux carries the
parent's high-water mark into a child across ``fork``/``vfork`` and ``exec``, so a command
started by a process holding a generated fleet (a benchmark, a test) would report that
process's memory. The command instead runs under a few lines that write its own
``VmHWM`` (``/proc/self/status``) to an inherited pipe as it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager

#: The variable naming the pipe the peak (KiB) is written to.
PEAK_FD_VARIABLE = "DSF_PEAK_FD"

_WRAPPER = f"""\
import atexit, os, runpy, sys

def _peak():
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                os.write(int(os.environ["{PEAK_FD_VARIABLE}"]), line.split()[1].encode())

atexit.register(_peak)
sys.argv[0] = "dsf-compile"
runpy.run_module("dsf_compile", run_name="__main__", alter_sys=True)
"""


@contextmanager
def measured_dsf_compile(
    argv: Sequence[str], env: Mapping[str, str], **popen: object
) -> Iterator[tuple[subprocess.Popen[bytes], list[float]]]:
    """``python -m dsf_compile ARGV…`` started with ``popen``'s arguments; once the block
    has waited for it, the list holds its peak RSS in MiB (empty if it died unmeasured)."""
    readable, writable = os.pipe()
    peak: list[float] = []
    try:
        with subprocess.Popen(  # type: ignore[call-overload]
            [sys.executable, "-c", _WRAPPER, *argv],
            env={**env, PEAK_FD_VARIABLE: str(writable)},
            pass_fds=(writable,),
            **popen,
        ) as process:
            os.close(writable)
            writable = -1
            yield process, peak
            process.wait()
            answer = os.read(readable, 64).decode("ascii")
            if answer:
                peak.append(int(answer) / 1024)
    finally:
        os.close(readable)
        if writable >= 0:
            os.close(writable)
