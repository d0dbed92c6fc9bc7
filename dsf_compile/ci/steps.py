"""Each check of ``dsf-compile ci``, run as its own ``dsf-compile`` process, and what it found.

A check is the command a user would type, run by the same Python as this one (the same
compiler, whatever is on the ``PATH``), its output read back with a cap. The problems it
reports become annotations located in the repository (the fleet's folder prefixed), and
a line of the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dsf_compile.edges.files import read_regular_file
from dsf_contract.bounded_json import load_json
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

#: What one check may print at the most (a large fleet's diff is a few MiB).
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
#: How long one check may take (a backtest over a large history is the longest).
CHECK_TIMEOUT_SECONDS = 1800.0
#: Annotations printed per check at the most (GitHub shows 10 errors per step, 50 per job).
MAX_ANNOTATIONS = 50


@dataclass
class Outcome:
    """One check: whether it passed, one line about it, its problems and its Markdown."""

    name: str
    state: str  # "passed", "failed" or "skipped"
    line: str
    problems: list[Problem] = field(default_factory=list)
    markdown: str = ""

    @property
    def failed(self) -> bool:
        return self.state == "failed"


@frozen
class Ran:
    """A finished ``dsf-compile`` process: its exit code and what it printed."""

    code: int
    out: str
    err: str

    def document(self) -> dict[str, Any]:
        """The JSON document a ``--format json`` run printed (empty when there is none)."""
        try:
            found = load_json(self.out)
        except ValueError:
            return {}
        return found if isinstance(found, dict) else {}

    def error_lines(self) -> list[str]:
        """What it said on stderr, one entry per non-empty line."""
        return [line for line in self.err.splitlines() if line.strip()][:MAX_ANNOTATIONS]


def dsf(root: Path, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: Path) -> Ran:
    """``dsf-compile --root ROOT ARGV…`` by this interpreter; never raises for its failure."""
    command = [sys.executable, "-m", "dsf_compile", "--root", str(root), *argv]
    environment = {k: v for k, v in os.environ.items() if k != "GITHUB_ACTIONS"}
    environment.update(env or {})
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            done = subprocess.run(
                command, stdout=out, stderr=err, env=environment, cwd=cwd,
                timeout=CHECK_TIMEOUT_SECONDS, check=False,
            )  # fmt: skip
            code = done.returncode
        except subprocess.TimeoutExpired:
            code = -1
        texts = [_read_back(stream) for stream in (out, err)]
    if code == -1:
        texts[1] += f"\ndsf-compile: error: did not finish within {CHECK_TIMEOUT_SECONDS:g} s"
        code = 2
    return Ran(code, texts[0], texts[1])


def _read_back(stream: Any) -> str:
    size = stream.seek(0, os.SEEK_END)
    stream.seek(0)
    data: bytes = stream.read(MAX_OUTPUT_BYTES)
    text = data.decode("utf-8", errors="replace")
    if size > MAX_OUTPUT_BYTES:
        text += f"\n[cut: more than {MAX_OUTPUT_BYTES} bytes]\n"
    return text


def problems_of(document: Mapping[str, Any], prefix: str) -> list[Problem]:
    """The ``problems`` records of a JSON document, located in the repository."""
    found = []
    for record in document.get("problems", ())[: MAX_ANNOTATIONS * 20]:
        if not isinstance(record, dict):
            continue
        found.append(
            Problem(
                prefix + str(record.get("path", "")),
                _number(record.get("line")),
                _number(record.get("column")),
                str(record.get("field", "")),
                str(record.get("message", "")),
                str(record.get("severity", "error")),
            )
        )
    return found


def _number(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def read_json_file(path: Path) -> dict[str, Any]:
    """A JSON document this command wrote itself (a backtest's report), bounded."""
    found = load_json(read_regular_file(path, max_bytes=MAX_OUTPUT_BYTES))
    return found if isinstance(found, dict) else {}
