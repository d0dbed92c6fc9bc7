"""The example fleet's repository as the Placement tests use it: the CLI run in-process,
edits to its Placements, a folder's digest."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

from dsf_compile.commands.cli import run

AT = "2026-11-22T10:00:00Z"
GPU_INFERENCE = "placements/gpu-inference.yaml"
GREEN_BATCH = "placements/green-batch.yaml"
#: What ``optimize`` writes for the example fleet's PlacementOptimization.
PLAN = "placements/optimized/default-gpu-apps.yaml"


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def digest(folder: Path) -> str:
    sha = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        sha.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            sha.update(path.read_bytes())
    return sha.hexdigest()


def edit(root: Path, relative: str, old: str, new: str) -> None:
    path = root / relative
    text = path.read_text(encoding="utf-8")
    assert old in text, (relative, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def add_cel(root: Path, expression: str) -> None:
    """A celSelector beside gpu-inference's label selector (its expression on line 19)."""
    edit(
        root,
        GPU_INFERENCE,
        '            gpu: "true"\n',
        '            gpu: "true"\n        celSelector:\n          celExpressions:\n'
        f"            - {json.dumps(expression)}\n",
    )


def write(root: Path, relative: str, text: str) -> None:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_text(text, encoding="utf-8")
