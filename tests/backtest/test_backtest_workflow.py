"""The pull-request workflow's backtest step, run as CI runs it, in a real git repository:
the base branch and the pull request replayed on one saved history, the ``--baseline``
Markdown in the summary."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from dsf_compile.commands.cli import run
from tests.backtest import history_data
from tests.fleet_repo import REPO_ROOT, copy_fleet, git

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "pull-request.yaml"
STEP = "How often the Placements would have changed their decisions, base and head"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def step() -> dict[str, object]:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (found,) = [s for s in workflow["jobs"]["checks"]["steps"] if s.get("name") == STEP]
    return dict(found)


def run_step(
    repo: Path, tmp_path: Path, history_url: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "dsf-compile"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dsf_compile "$@"\n')
    shim.chmod(0o755)
    summary = tmp_path / "summary.md"
    runner = tmp_path / "runner"
    runner.mkdir(exist_ok=True)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO_ROOT),
        "BASE_REF": "main",
        "HISTORY_URL": history_url,
        "RUNNER_TEMP": str(runner),
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", str(step()["run"])],
        cwd=repo, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    return done, summary


def test_the_summary_compares_the_pull_request_with_its_base(tmp_path: Path) -> None:
    assert step()["env"] == {
        "BASE_REF": "${{ github.base_ref }}",
        "HISTORY_URL": "${{ secrets.DSF_HISTORY_URL }}",
        "DSF_HISTORY_TOKEN": "${{ secrets.DSF_HISTORY_TOKEN }}",
    }
    repo = copy_fleet(tmp_path / "repo")
    shutil.copy2(REPO_ROOT / ".gitignore", repo / ".gitignore")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fleet")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-q", "-b", "steady")
    placement = repo / "placements" / "gpu-inference.yaml"
    text = placement.read_text(encoding="utf-8")
    placement.write_text(
        text.replace(
            "        weight: 1\n",
            "        weight: 1\n      - scoreCoordinate:\n          type: BuiltIn\n"
            "          builtIn: Steady\n        weight: 3\n",
            1,
        ),
        encoding="utf-8",
    )
    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0
    git(repo, "commit", "-q", "-am", "gpu-inference holds on")
    start, end = history_data.window()
    history = tmp_path / "history.jsonl"
    history.write_text(history_data.export_text(history_data.series(start, end)))

    done, summary = run_step(repo, tmp_path, str(history))
    assert done.returncode == 0, done.stderr
    shown = summary.read_text(encoding="utf-8")
    row = next(line for line in shown.splitlines() if line.startswith("| `default/gpu-inference`"))
    before, after = (int(n) for n in row.split("|")[2].split("→"))
    assert after < before  # Steady 3 holds the decision the base flips
    assert "```mermaid\ngantt" in shown
    assert git(repo, "status", "--porcelain") == ""
    assert (tmp_path / "runner" / "history.jsonl.gz").exists()


def test_no_source_no_step(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    done, summary = run_step(repo, tmp_path, "")
    assert done.returncode == 0 and not summary.exists()
