"""Exit codes of the comparing commands, and ``--format json`` on every failure.

``render --check``, ``diff`` and ``explain --verify`` exit 0 when what they compare is the
same, 1 when it differs, 2 when they could not compare (invalid inputs, an unreadable
``--scores`` or ``--decisions``, an unreachable hub), as ``kubectl diff`` does. With
``--format json`` every run prints one document on stdout, ``ok`` true only with exit 0;
every error, usage errors included, is a problem record there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_repo import cli

RECORD_KEYS = ["path", "line", "column", "severity", "field", "message"]


def document(out: str) -> dict[str, Any]:
    """The one JSON document of a run; each problem a full record."""
    parsed: dict[str, Any] = json.loads(out)
    for problem in parsed["problems"]:
        assert list(problem) == RECORD_KEYS
    return parsed


def make_stale(fleet: Path) -> None:
    """The README's example change, not rendered."""
    placement = fleet / "placements/gpu-inference.yaml"
    placement.write_text(placement.read_text().replace("app01;3g.48gb", "app01;2g.24gb"))


def break_a_scorer(fleet: Path) -> None:
    scorer = fleet / "scorers/sample-scorer.yaml"
    scorer.write_text(scorer.read_text().replace("description:", "descripton:", 1))


def test_diff_of_an_unreadable_scores_snapshot_could_not_compare(fleet: Path) -> None:
    missing = str(fleet / "nonexistent")
    code, out, err = cli("--root", str(fleet), "diff", "--scores", missing)
    assert (code, out) == (2, "")
    assert err.startswith(f"{missing}:0:0: error: cannot read file: ")
    code, out, err = cli("--root", str(fleet), "diff", "--scores", missing, "--format", "json")
    assert (code, err) == (2, "")
    found = document(out)
    assert found["ok"] is False
    assert [p["path"] for p in found["problems"]] == [missing]


@pytest.mark.parametrize(
    "argv", [("diff",), ("render", "--check"), ("diff", "--scores", "{fleet}/snapshots")]
)
def test_invalid_inputs_mean_the_comparison_could_not_be_made(
    fleet: Path, argv: tuple[str, ...]
) -> None:
    break_a_scorer(fleet)
    code, _, err = cli("--root", str(fleet), *(a.format(fleet=fleet) for a in argv))
    assert code == 2, err
    assert "scorers/sample-scorer.yaml:" in err
    # validate is no comparison: invalid inputs stay 1
    assert cli("--root", str(fleet), "validate")[0] == 1


def test_explain_verify_with_invalid_inputs_could_not_compare(fleet: Path) -> None:
    break_a_scorer(fleet)
    kubeconfig = fleet / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    code, _, err = cli(
        "--root", str(fleet), "explain", "--verify", "--hub-kubeconfig", str(kubeconfig)
    )
    assert code == 2, err


@pytest.mark.parametrize("argv", [("diff",), ("render", "--check")])
def test_json_ok_only_with_exit_0_and_the_changes_always_there(
    fleet: Path, argv: tuple[str, ...]
) -> None:
    code, out, _ = cli("--root", str(fleet), *argv, "--format", "json")
    assert code == 0
    assert (document(out)["ok"], document(out)["changes"]) == (True, [])
    make_stale(fleet)
    code, out, err = cli("--root", str(fleet), *argv, "--format", "json")
    assert (code, err) == (1, "")
    found = document(out)
    assert (found["ok"], found["stale"]) == (False, True)
    assert [c["path"] for c in found["changes"]] == [
        "rendered/hub/placements/default/placement-gpu-inference.yaml"
    ]


def test_a_runtime_error_is_a_problem_record_in_the_document(fleet: Path) -> None:
    code, out, err = cli(
        "--root", str(fleet), "explain", "--hub-kubeconfig", "/nonexistent", "--format", "json"
    )
    assert (code, err) == (2, "")
    found = document(out)
    assert found["ok"] is False
    (problem,) = found["problems"]
    assert problem["severity"] == "error"
    assert problem["message"].startswith("hub: --hub-kubeconfig /nonexistent is not usable")


@pytest.mark.parametrize(
    "argv",
    [
        ("diff", "--format", "json", "--bogus"),
        ("--format=json", "diff", "--at", "yesterday"),
        ("--format", "json", "no-such-command"),
        ("render", "--scores", "snapshots", "--format", "json"),
        ("validate", "--format", "json", "extra"),
    ],
)
def test_usage_errors_with_format_json_are_one_document(fleet: Path, argv: tuple[str, ...]) -> None:
    code, out, _ = cli("--root", str(fleet), *argv)
    assert code == 2
    found = document(out)
    assert found["ok"] is False
    (problem,) = found["problems"]
    assert problem["severity"] == "error" and problem["message"]


def test_usage_errors_without_json_stay_on_stderr(fleet: Path) -> None:
    code, out, err = cli("--root", str(fleet), "diff", "--bogus")
    assert (code, out) == (2, "")
    assert err.endswith("dsf-compile: error: unrecognized arguments: --bogus\n")
