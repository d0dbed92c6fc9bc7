"""Decisions never without their evidence: ``diff``'s replay carries ``explain``'s warnings.

Every warning ``explain`` raises for a Placement (scores expired at ``--at``, a score no
cluster publishes, no scores at all) comes with it in every format, before its row; a
Placement whose scores all expired is said to be so, never "no change". With a scores
snapshot and no ``--at``, the moment judged is the snapshot's own: its newest write
(each object's ``validUntil`` less its scorer's validity window, 3 × its interval).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsf_compile.placement.decision_changes import ALL_ZERO
from dsf_contract.escaping import markdown
from tests.fleet_repo import cli

#: After every object of the example's snapshot expired (validUntil 2026-11-24T00:00:00Z).
LATE = "2026-11-28T00:00:00Z"
EXPIRED = "AddOnPlacementScore worker01/example-performance-score expired at 2026-11-24T00:00:00Z"
#: The snapshot's newest write: validUntil less 3 × 30 s (example-performance-scorer).
SNAPSHOT_MOMENT = "2026-11-23T23:58:30Z"


def readme_change(fleet: Path) -> None:
    """The README's example change: gpu-inference ranks by the 2g slice."""
    placement = fleet / "placements/gpu-inference.yaml"
    placement.write_text(placement.read_text().replace("app01;3g.48gb", "app01;2g.24gb"))


def test_the_workstation_recipe_shows_the_move_without_at(fleet: Path) -> None:
    readme_change(fleet)
    code, out, err = cli(
        "--root", str(fleet), "diff", "--format", "markdown", "--scores", str(fleet / "snapshots")
    )
    assert code == 1, err
    assert "| default/gpu-inference | worker02 | worker01 |" in out
    assert f"Replayed at {SNAPSHOT_MOMENT}" in out
    assert "expired" not in out
    code, out, _ = cli("--root", str(fleet), "diff", "--scores", str(fleet / "snapshots"))
    assert out.endswith("placement default/gpu-inference: worker02 -> worker01\n")


def test_explain_judges_a_snapshot_at_its_own_moment(fleet: Path) -> None:
    code, out, err = cli("--root", str(fleet), "explain", "--scores", str(fleet / "snapshots"))
    assert code == 0, err
    assert out.startswith(f"at {SNAPSHOT_MOMENT}\n")
    assert "expired" not in out
    # --at still wins
    code, out, _ = cli(
        "--root", str(fleet), "explain", "--scores", str(fleet / "snapshots"), "--at", LATE
    )
    assert out.startswith(f"at {LATE}\n") and EXPIRED in out


def test_expired_scores_come_before_the_row_in_text(fleet: Path) -> None:
    readme_change(fleet)
    argv = ("--root", str(fleet), "diff", "--scores", str(fleet / "snapshots"), "--at", LATE)
    code, out, _ = cli(*argv)
    assert code == 1
    lines = out.splitlines()
    # every score expired: both sides decide worker01 on name order, and say why
    row = lines.index("placement default/gpu-inference: worker01 (unchanged)")
    assert lines[row - 3 : row] == [
        f"  warning: {ALL_ZERO}",
        f"  warning: {EXPIRED}: it scores 0",
        f"  warning: {EXPIRED.replace('worker01', 'worker02')}: it scores 0",
    ]
    assert lines[row - 4] == "warnings of placement default/gpu-inference:"


def test_a_placement_whose_scores_expired_is_never_no_change(fleet: Path) -> None:
    code, out, _ = cli(
        "--root",
        str(fleet),
        "diff",
        "--format",
        "markdown",
        "--scores",
        str(fleet / "snapshots"),
        "--at",
        LATE,
    )
    assert code == 0  # rendered/ is current: the warnings are evidence, not a difference
    assert "No Placement changes its decisions." not in out
    section = out.split("### Placement decisions", 1)[1]
    warning = section.index(f"⚠️ default/gpu-inference: {markdown(EXPIRED)}")
    assert warning < section.index("| default/gpu-inference | worker01 | worker01 | unchanged |")


@pytest.mark.parametrize("style", ["json", "github"])
def test_every_format_carries_the_warnings(fleet: Path, style: str) -> None:
    readme_change(fleet)
    argv = ("--root", str(fleet), "diff", "--scores", str(fleet / "snapshots"), "--at", LATE)
    code, out, _ = cli(*argv, "--format", style)
    assert code == 1
    if style == "github":
        assert f"  warning: {EXPIRED}: it scores 0" in out
        return
    records = {d["placement"]: d for d in json.loads(out)["decisions"]}
    found = records["default/gpu-inference"]
    assert (found["before"], found["after"], found["changed"]) == (
        ["worker01"],
        ["worker01"],
        False,
    )
    assert f"{EXPIRED}: it scores 0" in found["warnings"]
    assert found["warnings"][0] == ALL_ZERO
    assert records["default/green-batch"]["changed"] is False
    assert records["default/green-batch"]["warnings"]


def test_a_new_placement_ranking_by_a_missing_score_says_so(fleet: Path) -> None:
    (fleet / "placements/ghost.yaml").write_text(
        (fleet / "placements/gpu-inference.yaml")
        .read_text()
        .replace("name: gpu-inference", "name: ghost")
        .replace("app01;3g.48gb", "app09;3g.48gb")
    )
    code, out, err = cli("--root", str(fleet), "diff", "--scores", str(fleet / "snapshots"))
    assert code == 1, err
    lines = out.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("placement default/ghost: "))
    assert any("no such score for" in line for line in lines[:row])
