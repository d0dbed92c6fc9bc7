"""A Placement as an OCM v1.3 hub serves it carries the CRD's defaults (``sortBy:
ClusterName``, ``scoreRateLimit: 1m``): ``explain`` warns only on values that would change
a decision if OCM's scheduler read them."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from tests.fleet_repo import copy_fleet

AT = "2026-11-22T10:00:00Z"
GREEN_BATCH = "placements/green-batch.yaml"


def explain_warnings(root: Path, spec_lines: str) -> list[str]:
    path = root / GREEN_BATCH
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("spec:\n", f"spec:\n{spec_lines}", 1), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    argv = ["--root", str(root), "explain", "default/green-batch", "--at", AT]
    code = run([*argv, "--scores", str(root / "snapshots"), "--format", "json"], out, err)
    assert code == 0, err.getvalue()
    (placement,) = json.loads(out.getvalue())["placements"]
    return [w for w in placement["warnings"] if "has no effect" in w]


@pytest.mark.parametrize(
    "spec_lines",
    [
        "  sortBy: ClusterName\n  scoreRateLimit: 1m\n",  # what a v1.3 hub serves
        "  scoreRateLimit: 60s\n",  # the same duration, spelled otherwise
        "",
    ],
)
def test_the_crd_defaults_are_not_warned_about(tmp_path: Path, spec_lines: str) -> None:
    assert explain_warnings(copy_fleet(tmp_path / "fleet"), spec_lines) == []


@pytest.mark.parametrize(
    ("spec_lines", "field"),
    [
        ("  sortBy: Score\n", "spec.sortBy"),
        ("  scoreRateLimit: 5m\n", "spec.scoreRateLimit"),
        ("  sortBy: Score\n  scoreRateLimit: 1m\n", "spec.sortBy"),
    ],
)
def test_a_value_that_would_change_a_decision_is_warned_about(
    tmp_path: Path, spec_lines: str, field: str
) -> None:
    said = explain_warnings(copy_fleet(tmp_path / "fleet"), spec_lines)
    assert len(said) == 1 and said[0].startswith(f"{field} ") and "has no effect" in said[0]
