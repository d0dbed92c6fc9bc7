"""``dsf-compile ci``, what the action runs, on a pull request of the example fleet: the
README's change moves gpu-inference, a stale tree and a broken input fail with
annotations at their file, a push runs the checks alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from tests.fleet.pr_repo import (
    SNAPSHOT_MOMENT,
    ci,
    commit,
    edit,
    example_repository,
    git,
    pull_request_event,
)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def render(repo: Path) -> None:
    import io

    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0


def test_the_report_shows_the_decision_a_pull_request_moves(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    edit(repo / "placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    render(repo)
    commit(repo, "gpu-inference ranks by the 2g slice")
    env = pull_request_event(repo, tmp_path)
    done = ci(repo, env, "--at", SNAPSHOT_MOMENT, "--report", str(tmp_path / "report.md"))
    assert done.returncode == 0, done.stdout + done.stderr
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert shown.startswith("<!-- dsf-compile:report -->\n## dsf-compile: ✅")
    assert "| default/gpu-inference | worker02 | worker01 |" in shown
    assert "rendered/hub/placements/default/placement-gpu-inference.yaml" in shown
    assert (tmp_path / "report.md").read_text(encoding="utf-8") == shown
    outputs = (tmp_path / "output.txt").read_text(encoding="utf-8")
    assert f"changed=true\nreport={tmp_path / 'report.md'}\n" == outputs
    assert "::error" not in done.stdout
    # the checkout is untouched: rendered/ never replaced in place
    assert git(repo, "status", "--porcelain") == ""


def test_a_stale_tree_fails_with_an_annotation_naming_render(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    edit(repo / "placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    commit(repo, "not rendered")
    done = ci(repo, pull_request_event(repo, tmp_path), "--at", SNAPSHOT_MOMENT)
    assert done.returncode == 1
    assert (
        "::error file=rendered/hub/placements/default/placement-gpu-inference.yaml,line=1,col=1"
        "::render --check: rendered/ is stale: this file would be changed; run 'dsf-compile "
        "render' and commit rendered/"
    ) in done.stdout.splitlines()
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "❌ `render --check` fails" in shown
    # the diff is still shown: the reviewers see what would move
    assert "| default/gpu-inference | worker02 | worker01 |" in shown


def test_a_broken_input_fails_with_an_annotation_at_its_place(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    edit(repo / "scorers/sample-scorer.yaml", "configSyncMode: Full", "configSyncMode: Sometimes")
    commit(repo, "broken")
    done = ci(repo, pull_request_event(repo, tmp_path))
    assert done.returncode == 1
    errors = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert errors and all(
        line.startswith("::error file=scorers/sample-scorer.yaml,line=") for line in errors
    ), errors
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "❌ `validate` fails" in shown and "not compared\\: the inputs are invalid" in shown


def test_a_push_runs_the_checks_alone(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    env = pull_request_event(repo, tmp_path)
    env["GITHUB_EVENT_NAME"] = "push"
    done = ci(repo, env)
    assert done.returncode == 0, done.stdout + done.stderr
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "`diff`" not in shown and "`schemas --check`" in shown
    assert (tmp_path / "output.txt").read_text() == "changed=false\n"


def test_a_fleet_in_a_folder_of_its_repository_is_annotated_there(tmp_path: Path) -> None:
    top = tmp_path / "top"
    example_repository(top / "fleet")
    shutil.rmtree(top / "fleet" / ".git")
    git(top, "init", "-q", "-b", "main")
    commit(top, "fleet in a folder")
    git(top, "checkout", "-q", "-b", "change")
    edit(top / "fleet/placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    commit(top, "not rendered")
    done = ci(top, pull_request_event(top, tmp_path), "--root", "fleet")
    assert done.returncode == 1
    assert "::error file=fleet/rendered/hub/placements/default/placement-gpu-inference.yaml" in (
        done.stdout
    )


def test_a_shard_move_fails_the_pull_request_loudly(tmp_path: Path) -> None:
    """Issue 35, row 19: a shard-budget change that would move clusters between
    Applications (a prune) is refused by ``render`` unless ``render.shards`` pins it; a
    pull request that commits it anyway fails with the reason at ``dsf.yaml``, never an
    empty green report."""
    import io

    from tests.rendered_checks import cluster_bytes

    repo = example_repository(tmp_path / "repo")
    budget = cluster_bytes(repo) - 1
    edit(repo / "dsf.yaml", "hubNamespace:", f"render:\n  shardBytes: {budget}\nhubNamespace:")
    shutil.rmtree(repo / "rendered")  # a fresh tree does not move the count either
    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 1
    git(repo, "checkout", "-q", "HEAD", "--", "rendered")
    commit(repo, "a smaller shard budget, committed without its render")
    done = ci(repo, pull_request_event(repo, tmp_path), "--at", SNAPSHOT_MOMENT)
    assert done.returncode == 1, done.stdout
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "`render --check` fails, `diff` fails" in shown and "render.shards" in shown, shown
    assert "::error file=dsf.yaml," in done.stdout and "render.shards" in done.stdout


def test_a_gate_without_a_history_is_a_usage_error(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    done = ci(repo, pull_request_event(repo, tmp_path), "--max-changes-per-day", "4")
    assert done.returncode == 2
    assert "--max-changes-per-day gates the backtest: give --history too" in done.stderr
    assert not (tmp_path / "summary.md").exists()


def test_a_base_the_checkout_lacks_fails_saying_how_to_check_out(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    done = ci(repo, pull_request_event(repo, tmp_path), "--base", "1" * 40)
    assert done.returncode == 1
    (error,) = [line for line in done.stdout.splitlines() if line.startswith("::error")]
    assert error.startswith("::error::diff: against 111111111111: the base branch cannot be read")
    assert "fetch-depth: 0" in error


def test_an_event_naming_only_the_base_branch(tmp_path: Path) -> None:
    repo = example_repository(tmp_path / "repo")
    edit(repo / "placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    render(repo)
    commit(repo, "gpu-inference ranks by the 2g slice")
    env = pull_request_event(repo, tmp_path)
    event = Path(env["GITHUB_EVENT_PATH"])
    event.write_text('{"pull_request": {"number": 7, "base": {"ref": "main"}}}')
    done = ci(repo, env, "--at", SNAPSHOT_MOMENT)
    assert done.returncode == 0, done.stdout
    shown = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "against main\\: changes" in shown
    assert "| default/gpu-inference | worker02 | worker01 |" in shown
    assert ci(repo, env, "--base=--upload-pack=touch x").returncode == 1
    assert not (repo / "x").exists()
