"""The pull-request workflow's summary step, run as CI runs it, in a real git repository.

A pull request must carry a current ``rendered/`` (the workflow checks it first), so the
summary has to diff against the base branch's ``rendered/``: against the pull request's
own, a moved workload would never show.
"""

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
from tests.fleet_repo import REPO_ROOT, copy_fleet, git

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "pull-request.yaml"
STEP = "What this pull request changes in rendered/, and which Placements it moves"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def step_script() -> str:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    (step,) = [s for s in workflow["jobs"]["checks"]["steps"] if s.get("name") == STEP]
    assert step["env"] == {"BASE_REF": "${{ github.base_ref }}"}
    return str(step["run"])


def test_the_summary_shows_the_decision_a_pull_request_moves(tmp_path: Path) -> None:
    repo = copy_fleet(tmp_path / "repo")
    shutil.copy2(REPO_ROOT / ".gitignore", repo / ".gitignore")  # the render cache stays out
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fleet")
    # what actions/checkout (fetch-depth 0) leaves: the base branch as a remote ref
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    git(repo, "checkout", "-q", "-b", "app01-on-2g")
    placement = repo / "placements" / "gpu-inference.yaml"
    text = placement.read_text(encoding="utf-8")
    placement.write_text(text.replace("app01;3g.48gb", "app01;2g.24gb"), encoding="utf-8")
    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0
    git(repo, "commit", "-q", "-am", "gpu-inference ranks by the 2g slice")
    # the workflow's step before: rendered/ is current in the pull request
    assert run(["--root", str(repo), "render", "--check"], io.StringIO(), io.StringIO()) == 0

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dsf-compile"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m dsf_compile "$@"\n')
    shim.chmod(0o755)
    summary = tmp_path / "summary.md"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(REPO_ROOT),
        "BASE_REF": "main",
        "GITHUB_STEP_SUMMARY": str(summary),
    }
    done = subprocess.run(
        ["bash", "-e", "-c", step_script()],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr

    shown = summary.read_text(encoding="utf-8")
    assert "| default/gpu-inference | worker02 | worker01 |" in shown
    assert "placements/default/placement-gpu-inference.yaml" in shown
    # and the pull request's rendered/ is back, untouched, for the steps after
    assert git(repo, "status", "--porcelain") == ""
