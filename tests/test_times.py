"""Any RFC 3339 time that parses is handled at every use: clamped to what Python can hold.

``0001-01-01T00:00:00+14:00`` is in year 0 in UTC and ``9999-12-31T23:59:59-14:00`` in
year 10000: both parse, neither converts. They are clamped to the first and last moment
Python holds (still long expired, or valid for ever), in ``--at``, in a snapshot's
``validUntil`` and conditions, and in a taint's ``timeAdded``; toleration arithmetic
saturates. Whole commands run in a subprocess, as the pull-request check runs them.
"""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dsf_compile.inputs.placements import AddOnPlacementScore
from dsf_contract.fields import EARLIEST, INT64_MAX, LATEST, add_seconds, parse_time
from tests.fleet_repo import copy_fleet, run_command

FIRST = "0001-01-01T00:00:00+14:00"
LAST = "9999-12-31T23:59:59-14:00"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (FIRST, EARLIEST),
        (LAST, LATEST),
        ("0001-01-01T00:00:00-01:00", datetime(1, 1, 1, 1, tzinfo=UTC)),
        ("2026-11-22T12:00:00+02:00", datetime(2026, 11, 22, 10, tzinfo=UTC)),
    ],
)
def test_parse_time_gives_utc_clamped_to_the_range_python_holds(
    text: str, expected: datetime
) -> None:
    moment = parse_time(text)
    assert moment == expected and moment.utcoffset() is not None and not moment.utcoffset()
    assert moment.astimezone(UTC).isoformat()  # converts and prints without overflowing


def test_a_yaml_timestamp_is_clamped_like_a_string() -> None:
    import yaml

    status = yaml.safe_load(f"validUntil: {FIRST}")  # unquoted: YAML reads a datetime
    assert isinstance(status["validUntil"], datetime)
    score = AddOnPlacementScore.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": "s", "namespace": "c"},
            "status": status,
        }
    )
    assert score.status.validUntil == EARLIEST


@pytest.mark.parametrize(
    ("start", "seconds", "expected"),
    [
        (LATEST, 1, LATEST),
        (EARLIEST, -1, EARLIEST),
        (datetime(2026, 1, 1, tzinfo=UTC), INT64_MAX, LATEST),
        (datetime(2026, 1, 1, tzinfo=UTC), -INT64_MAX - 1, EARLIEST),
        (datetime(2026, 1, 1, tzinfo=UTC), 60, datetime(2026, 1, 1, 0, 1, tzinfo=UTC)),
    ],
)
def test_adding_seconds_saturates(start: datetime, seconds: int, expected: datetime) -> None:
    assert add_seconds(start, seconds) == expected


# ------------------------------------------------------------ whole commands


def command(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = run_command(root, *argv)
    assert "OverflowError" not in result.stderr, result.stderr
    return result


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = copy_fleet(tmp_path / "fleet")
    snapshot = root / "snapshots/addonplacementscores.yaml"
    # worker01's performance score expired in year 0; worker02's is failing since year 10000
    edit(snapshot, 'validUntil: "2026-11-24T00:00:00Z"', f'validUntil: "{FIRST}"')
    edit(
        snapshot,
        'validUntil: "2026-11-24T00:00:00Z"',
        'validUntil: "2026-11-24T00:00:00Z"\n      conditions: [{type: ScoresAvailable, '
        f'status: "False", reason: Down, lastTransitionTime: "{LAST}"}}]',
    )
    return root


@pytest.mark.parametrize("style", ["text", "markdown", "json"])
def test_explain_judges_a_year_zero_valid_until_as_expired(fleet: Path, style: str) -> None:
    scores = str(fleet / "snapshots")
    result = command(
        fleet, "explain", "--scores", scores, "--at", "2026-11-22T10:00:00Z", "--format", style
    )
    assert result.returncode == 0, result.stderr
    shown = result.stdout.replace("\\", "")  # markdown escapes the colons
    assert "expired at 0001-01-01T00:00:00Z" in shown
    assert "since 9999-12-31T23:59:59.999999Z" in shown


def test_diff_with_scores_handles_the_same_snapshot(fleet: Path) -> None:
    edit(fleet / "placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    result = command(fleet, "diff", "--scores", str(fleet / "snapshots"), "--format", "markdown")
    assert result.returncode == 1, result.stderr  # rendered/ is stale: the Placement changed
    assert "### Placement decisions" in result.stdout


@pytest.mark.parametrize("at", [LAST, FIRST])
def test_an_at_beyond_the_range_is_clamped(fleet: Path, at: str) -> None:
    result = command(
        fleet, "explain", "--scores", str(fleet / "snapshots"), "--at", at, "--format", "json"
    )
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)["at"]
    assert shown == ("9999-12-31T23:59:59.999999Z" if at == LAST else "0001-01-01T00:00:00Z")


def test_toleration_times_at_the_ends_of_the_range(fleet: Path) -> None:
    inventory = fleet / "clusters/inventory.yaml"
    text = inventory.read_text(encoding="utf-8")
    taint = f'spec:\n  taints:\n    - {{key: maintenance, effect: NoSelect, timeAdded: "{LAST}"}}\n'
    assert text.index("  name: worker01\n") < text.index("---\n")
    inventory.write_text(text.replace("---\n", f"{taint}---\n", 1), encoding="utf-8")  # worker01
    edit(
        fleet / "placements/gpu-inference.yaml",
        "  numberOfClusters: 1\n",
        "  numberOfClusters: 1\n  tolerations:\n    - {key: maintenance, operator: Exists, "
        f"tolerationSeconds: {INT64_MAX}}}\n",
    )
    result = command(
        fleet,
        "explain",
        "default/gpu-inference",
        "--scores",
        str(fleet / "snapshots"),
        "--at",
        LAST,
    )
    assert result.returncode == 0, result.stderr
