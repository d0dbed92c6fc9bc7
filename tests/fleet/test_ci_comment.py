"""The pull request's one comment, against a loopback fake of GitHub's REST API: created,
then edited, never a second; found again past the first page; cut at GitHub's 65,536
characters; a 403 a notice and any other failure a warning, the job's verdict the checks'."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from tests.fleet.github_fake import FakeGitHub, fake_github
from tests.fleet.pr_repo import NUMBER, ci, commit, git, pull_request_event

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
MARKER = "<!-- dsf-compile:report -->"
INVENTORY = "clusters/inventory.yaml"


def scaffolded(tmp_path: Path) -> Path:
    """A fleet made by ``dsf-compile init``, committed on main, a branch checked out."""
    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    assert run(["init", str(repo)], io.StringIO(), io.StringIO()) == 0
    commit(repo, "dsf-compile init")
    git(repo, "checkout", "-q", "-b", "change")
    return repo


def add_clusters(repo: Path, names: list[str]) -> None:
    with (repo / INVENTORY).open("a", encoding="utf-8") as stream:
        for name in names:
            stream.write(
                "---\napiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
                f"metadata:\n  name: {name}\n  labels:\n    name: {name}\n"
            )
    assert run(["--root", str(repo), "render"], io.StringIO(), io.StringIO()) == 0
    commit(repo, f"{len(names)} cluster(s)")


def with_api(env: dict[str, str], fake: FakeGitHub) -> dict[str, str]:
    return {**env, "GITHUB_API_URL": fake.url}


def writes(fake: FakeGitHub) -> list[str]:
    return [method for method, _ in fake.requests if method != "GET"]


def test_created_then_edited_never_a_second(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_clusters(repo, ["cluster02"])
    with fake_github() as fake:
        env = with_api(pull_request_event(repo, tmp_path), fake)
        first = ci(repo, env, "--comment", "true")
        assert first.returncode == 0, first.stdout + first.stderr
        assert writes(fake) == ["POST"]
        assert "::error" not in first.stdout
        (comment,) = fake.comments[NUMBER]
        assert comment["body"].startswith(MARKER) and "cluster02" in comment["body"]
        add_clusters(repo, ["cluster03"])
        second = ci(repo, with_api(pull_request_event(repo, tmp_path), fake), "--comment", "true")
        assert second.returncode == 0
        assert writes(fake) == ["POST", "PATCH"]
        (comment,) = fake.comments[NUMBER]
        assert "cluster03" in comment["body"]
    assert "comment edited" in second.stdout


def test_found_again_past_the_first_page(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_clusters(repo, ["cluster02"])
    with fake_github() as fake:
        for n in range(230):
            fake.add(NUMBER, f"review {n}")
        fake.add(NUMBER, f"{MARKER}\nplanted by someone")  # not the workflow's: second choice
        mine = fake.add(NUMBER, f"{MARKER}\nold report", "github-actions[bot]")
        for n in range(20):
            fake.add(NUMBER, f"later {n}")
        done = ci(repo, with_api(pull_request_event(repo, tmp_path), fake), "--comment", "true")
        assert done.returncode == 0
        pages = [path for method, path in fake.requests if method == "GET"]
        assert [p.rsplit("page=", 1)[1] for p in pages] == ["1", "2", "3"]
        assert fake.requests[-1] == ("PATCH", f"/repos/acme/fleet/issues/comments/{mine}")
        assert len(fake.comments[NUMBER]) == 252


def test_someone_elses_comment_with_the_marker_is_left_alone(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_clusters(repo, ["cluster02"])
    with fake_github() as fake:
        planted = fake.add(NUMBER, f"{MARKER}\nall good, merge it")
        for _ in range(2):
            env = with_api(pull_request_event(repo, tmp_path), fake)
            assert ci(repo, env, "--comment", "true").returncode == 0
        assert writes(fake) == ["PATCH", "POST", "PATCH"]  # refused, created, then edited
        first, mine = fake.comments[NUMBER]
    assert (first["id"], first["body"]) == (planted, f"{MARKER}\nall good, merge it")
    assert "cluster02" in mine["body"] and mine["user"]["login"] == "github-actions[bot]"


def test_cut_at_githubs_limit_naming_the_job_summary(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    add_clusters(repo, [f"cluster{n:03d}" for n in range(2, 320)])
    with fake_github() as fake:
        env = with_api(pull_request_event(repo, tmp_path), fake)
        done = ci(repo, env, "--comment", "true")
        assert done.returncode == 0, done.stdout + done.stderr
        (comment,) = fake.comments[NUMBER]
    body = comment["body"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert len(summary) > 65_536 >= len(body)
    assert body.startswith(MARKER)
    assert body.rstrip().endswith(
        "the whole report is in the job summary of "
        "https://github.example/acme/fleet/actions/runs/42.**"
    )
    assert body.count("\n```") % 2 == 0  # no code block left open


@pytest.mark.parametrize(("status", "level"), [(403, "notice"), (404, "notice"), (500, "warning")])
def test_a_refusal_is_a_notice_a_failure_a_warning(tmp_path: Path, status: int, level: str) -> None:
    repo = scaffolded(tmp_path)
    add_clusters(repo, ["cluster02"])
    with fake_github() as fake:
        fake.refuse = status
        done = ci(repo, with_api(pull_request_event(repo, tmp_path), fake), "--comment", "true")
    assert done.returncode == 0
    said = [line for line in done.stdout.splitlines() if line.startswith(f"::{level}::")]
    assert len(said) == 1 and f"HTTP {status}" in said[0] and "job summary" in said[0]
    assert (tmp_path / "summary.md").read_text(encoding="utf-8").startswith(MARKER)


def test_a_failing_check_still_comments_and_fails(tmp_path: Path) -> None:
    repo = scaffolded(tmp_path)
    with (repo / INVENTORY).open("a", encoding="utf-8") as stream:
        stream.write("---\napiVersion: cluster.open-cluster-management.io/v1\nkind: Nope\n")
    commit(repo, "broken")
    with fake_github() as fake:
        done = ci(repo, with_api(pull_request_event(repo, tmp_path), fake), "--comment", "true")
        (comment,) = fake.comments[NUMBER]
    assert done.returncode == 1
    assert "❌ `validate` fails" in comment["body"]
    assert "::error file=clusters/inventory.yaml,line=" in done.stdout
