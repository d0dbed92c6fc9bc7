"""A fleet in a real git repository with a pull request open on it, and ``dsf-compile ci``
run as the GitHub Action runs it (its own process, GitHub's variables)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fleet.github_fake import TOKEN
from tests.fleet_repo import REPO_ROOT, copy_fleet

#: The moment the example's scores snapshot is judged at (its scores are valid then).
SNAPSHOT_MOMENT = "2026-11-22T10:00:00Z"
NUMBER = 7


def git(root: Path, *argv: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "dev",
        "GIT_AUTHOR_EMAIL": "dev@example.com",
        "GIT_COMMITTER_NAME": "dev",
        "GIT_COMMITTER_EMAIL": "dev@example.com",
        "GIT_AUTHOR_DATE": "2026-11-22T10:00:00Z",
        "GIT_COMMITTER_DATE": "2026-11-22T10:00:00Z",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(
        ["git", "-C", str(root), *argv], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def example_repository(target: Path) -> Path:
    """The example fleet committed on ``main``, the pull request's branch checked out."""
    repo = copy_fleet(target)
    shutil.copy2(REPO_ROOT / ".gitignore", repo / ".gitignore")  # the render cache stays out
    shutil.copytree(REPO_ROOT / "schemas", repo / "schemas")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fleet")
    git(repo, "checkout", "-q", "-b", "change")
    return repo


def commit(repo: Path, message: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def pull_request_event(repo: Path, folder: Path) -> dict[str, str]:
    """GitHub's variables of a ``pull_request`` run against ``main``."""
    event = folder / "event.json"
    base = git(repo, "rev-parse", "main").strip()
    document = {"pull_request": {"number": NUMBER, "base": {"ref": "main", "sha": base}}}
    event.write_text(json.dumps(document), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REPOSITORY": "acme/fleet",
        "GITHUB_RUN_ID": "42",
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_STEP_SUMMARY": str(folder / "summary.md"),
        "GITHUB_OUTPUT": str(folder / "output.txt"),
        "RUNNER_TEMP": str(folder),
        "GITHUB_TOKEN": TOKEN,
    }


def ci(repo: Path, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """``dsf-compile ci --format github …`` in ``repo``, as the action's step runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "ci", "--format", "github", *argv],
        cwd=repo, env={**os.environ, **env}, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert "Traceback" not in done.stderr + done.stdout, done.stderr
    assert TOKEN not in done.stdout + done.stderr
    return done
