"""Start a sample as a subprocess on 127.0.0.1 and find its port (for tests and scripts).

``with sample_process("samples.sample_scorer") as address: ...`` runs
``python -m samples.sample_scorer --host 127.0.0.1 --port 0``, reads the ``host:port``
the sample prints first, yields it, and stops the process on exit.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent


class SampleStartError(RuntimeError):
    """The sample exited or printed nothing before the deadline."""


@contextlib.contextmanager
def sample_process(
    module: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    startup_timeout: float = 30.0,
    output: list[str] | None = None,
    pids: list[int] | None = None,
) -> Iterator[str]:
    """Run ``python -m MODULE --host 127.0.0.1 --port 0 ARGS``; yield its ``host:port``.

    When ``output`` is a list, what the process wrote to stdout (after the address) and
    stderr is appended to it once the process has stopped; when ``pids`` is, the
    process's id is appended to it once started.
    """
    environ = dict(os.environ if env is None else env)
    # The samples import as a package from the repository root, installed or not.
    environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPOSITORY), environ.get("PYTHONPATH", "")) if p
    )
    command = [sys.executable, "-m", module, "--host", "127.0.0.1", "--port", "0", *args]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=environ,
        cwd=REPOSITORY,
        text=True,
    )
    if pids is not None:
        pids.append(process.pid)
    try:
        yield _read_address(process, startup_timeout)
    finally:
        process.terminate()
        try:
            stdout, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
        if output is not None:
            output += [stdout, stderr]


def _read_address(process: subprocess.Popen[str], timeout: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if selector.select(timeout=max(0.0, deadline - time.monotonic())):
                line = process.stdout.readline().strip()
                if line:
                    return line
                break  # end of file: the process exited
    raise SampleStartError(f"{process.args!r} printed no address (exit code {process.poll()})")
