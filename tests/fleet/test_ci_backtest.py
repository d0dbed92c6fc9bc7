"""``dsf-compile ci --history``: the pull request's backtest against the base branch's run
(``--baseline``) in the report, each branch's run reading the scores its own Placements
rank by (issue 35, row 10: a Placement moved to another score is replayed on that score)."""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest

from dsf_compile.commands.cli import run
from tests.agent.conftest import import_into_victoria_metrics, started_victoria_metrics
from tests.backtest import history_data
from tests.fleet.pr_repo import ci, commit, edit, example_repository, git, pull_request_event

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
PLACEMENT = "placements/gpu-inference.yaml"


def history() -> list[dict[str, Any]]:
    """A day of the performance score and, from another seed, of the power score."""
    start, end = history_data.window()
    power = history_data.series(start, end, seed=11)
    for line in power:
        line["metric"] = {**line["metric"], "ds_score_name": history_data.POWER}
    return [*history_data.series(start, end), *power]


def row(report: str, placement: str) -> tuple[int, int]:
    """The changes per day before → after of ``placement``'s row."""
    line = next(x for x in report.splitlines() if x.startswith(f"| `{placement}`"))
    before, after = (int(n) for n in line.split("|")[2].split("→"))
    return before, after


def render_and_commit(repo: Path, message: str) -> None:
    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0
    commit(repo, message)


def test_the_report_compares_the_pull_request_with_its_base(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    edit(
        repo / PLACEMENT,
        "        weight: 1\n",
        "        weight: 1\n      - scoreCoordinate:\n          type: BuiltIn\n"
        "          builtIn: Steady\n        weight: 3\n",
    )
    render_and_commit(repo, "gpu-inference holds on")
    saved = tmp_path / "history.jsonl"
    saved.write_text(history_data.export_text(history()), encoding="utf-8")
    done = ci(repo, pull_request_event(repo, tmp_path), "--history", str(saved))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    before, after = row(shown, "default/gpu-inference")
    assert after < before  # Steady 3 holds the decision the base flips
    assert "```mermaid\ngantt" in shown
    # the backtest after the diff, as the spec orders the report
    assert shown.index("### Placement decisions") < shown.index("```mermaid")
    assert git(repo, "status", "--porcelain") == ""


def test_over_the_limit_fails_after_the_report(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    saved = tmp_path / "history.jsonl"
    saved.write_text(history_data.export_text(history()), encoding="utf-8")
    env = pull_request_event(repo, tmp_path)
    done = ci(repo, env, "--history", str(saved), "--max-changes-per-day", "1")
    assert done.returncode == 1
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "❌ `backtest` fails" in shown and "```mermaid\ngantt" in shown
    assert "::error::backtest: " in done.stdout


def test_an_unreadable_history_fails_loudly(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    done = ci(repo, pull_request_event(repo, tmp_path), "--history", str(tmp_path / "none"))
    assert done.returncode == 1
    assert "::error::backtest: " in done.stdout
    assert "run failed" in (tmp_path / "summary.md").read_text(encoding="utf-8")


@pytest.mark.integration
def test_a_placement_moved_to_another_score_is_replayed_on_that_score(tmp_path: Path) -> None:
    """Both branches read the source for their own scores: the head's Placement, now ranked
    by the power score, is replayed on that score's samples, not on none of them."""
    repo = example_repository(tmp_path / "repo")
    edit(
        repo / PLACEMENT,
        "resourceName: example-performance-score",
        "resourceName: example-powerconsumption-score",
    )
    render_and_commit(repo, "gpu-inference ranks by power")
    (tmp_path / "vm").mkdir()
    with started_victoria_metrics(tmp_path / "vm") as url:
        body = history_data.export_text(history()).encode()
        import_into_victoria_metrics(url, "/api/v1/import", body)
        done = ci(repo, pull_request_event(repo, tmp_path), "--history", url)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    before, after = row(shown, "default/gpu-inference")
    assert before > 0 and after > 0, shown
