"""The action's metadata and the workflows around it: the fork's fleet workflow uses the
action, the compiler's development checks are a workflow of their own, the scheduled ones
end green with one notice without their secret and keep one pull request on a fixed branch."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.commands.cli import run
from tests.fleet.github_fake import install_gh
from tests.fleet_repo import REPO_ROOT

WORKFLOWS = REPO_ROOT / ".github" / "workflows"


def load(path: Path) -> dict[Any, Any]:
    found = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(found, dict)
    return found


def scaffold_workflows(tmp_path: Path) -> Path:
    assert run(["init", str(tmp_path / "fleet")], io.StringIO(), io.StringIO()) == 0
    return tmp_path / "fleet" / ".github" / "workflows"


def test_the_action_is_composite_with_the_specs_inputs_and_outputs() -> None:
    action = load(REPO_ROOT / "action.yml")
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    assert {"root", "scores", "history", "history-token", "max-changes-per-day", "comment"} <= set(
        inputs
    )
    assert (inputs["root"]["default"], inputs["comment"]["default"]) == (".", "true")
    assert set(action["outputs"]) == {"changed", "report"}
    text = (REPO_ROOT / "action.yml").read_text(encoding="utf-8")
    assert "|| true" not in text and "$RUNNER_TEMP/dsf-compile" in text
    assert "github.action_path" in text and "--format github" in text


def test_the_install_step_reuses_a_dsf_compile_of_its_version(tmp_path: Path) -> None:
    (install,) = [
        s for s in load(REPO_ROOT / "action.yml")["runs"]["steps"] if s["id"] == "install"
    ]
    output = tmp_path / "output"
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "ACTION_PATH": str(REPO_ROOT),
        "RUNNER_TEMP": str(tmp_path),
        "GITHUB_OUTPUT": str(output),
        "GITHUB_PATH": str(tmp_path / "path"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    done = subprocess.run(
        ["bash", "-e", "-c", install["run"]], env=env, capture_output=True, text=True, timeout=120
    )
    if "on the PATH already" not in done.stdout:
        pytest.skip("no dsf-compile of this version on the PATH (a virtual environment's bin)")
    assert done.returncode == 0, done.stderr
    assert output.read_text().startswith("program=") and not (tmp_path / "dsf-compile").exists()


def test_the_forks_fleet_workflow_uses_the_action_and_develop_holds_the_rest() -> None:
    fleet = load(WORKFLOWS / "pull-request.yaml")
    steps = fleet["jobs"]["fleet"]["steps"]
    assert [s.get("uses") for s in steps][-1] == "./"
    assert steps[0]["with"]["fetch-depth"] == 0
    assert not any("run" in s for s in steps)  # nothing but the action
    develop = (WORKFLOWS / "develop.yaml").read_text(encoding="utf-8")
    for check in ("ruff check", "mypy", "python -m pytest", "apt-get install", "actionlint"):
        assert check in develop
    assert "rendered/**" in develop  # a fleet-only change does not run them


@pytest.mark.parametrize("name", ["scheduled-sync.yaml", "scheduled-optimize.yaml", "scaffold"])
def test_scheduled_workflows_one_notice_one_branch(tmp_path: Path, name: str) -> None:
    path = (
        scaffold_workflows(tmp_path) / "scheduled.yaml" if name == "scaffold" else WORKFLOWS / name
    )
    text = path.read_text(encoding="utf-8")
    workflow = load(path)
    (job,) = workflow["jobs"].values()
    assert "|| true" not in text
    assert text.count("::notice") == 1 and "HUB_KUBECONFIG" in text
    assert 'git push --force origin "$BRANCH"' in text and job["env"]["BRANCH"].startswith("dsf/")
    assert 'gh pr list --head "$BRANCH"' in text and "date -u +%Y" not in text
    if name != "scheduled-optimize.yaml":
        assert job["runs-on"] == "${{ vars.DSF_SYNC_RUNNER || 'self-hosted' }}"
    # without the secret: green, the notice once, nothing else said about it
    secret_steps = [s for s in job["steps"] if "HUB_KUBECONFIG" in s.get("env", {})]
    step = secret_steps[0]
    env = {**os.environ, "HUB_KUBECONFIG": "", "GITHUB_OUTPUT": str(tmp_path / "out")}
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]], env=env, cwd=tmp_path,
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("::notice") == 1 and "HUB_KUBECONFIG" in done.stdout


PROPOSE = {
    "scheduled-sync.yaml": ("One pull request on the branch dsf/sync", "dsf.lock.json"),
    "scheduled-optimize.yaml": (
        "One pull request on the branch dsf/optimize",
        "placements/optimized/plan.yaml",
    ),
    "scaffold": ("One pull request on the branch dsf/scheduled", "dsf.lock.json"),
}


@pytest.mark.parametrize("name", sorted(PROPOSE))
def test_every_run_updates_the_one_pull_request(tmp_path: Path, name: str) -> None:
    from tests.fleet.pr_repo import git

    path = (
        scaffold_workflows(tmp_path) / "scheduled.yaml" if name == "scaffold" else WORKFLOWS / name
    )
    (job,) = load(path)["jobs"].values()
    title, changed = PROPOSE[name]
    (step,) = [s for s in job["steps"] if s.get("name", "").startswith(title)]
    remote, repo = tmp_path / "remote.git", tmp_path / "repo"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    git(tmp_path, "init", "-q", "-b", "main", str(repo))
    for folder in ("rendered", "clusters", "placements/optimized"):  # what a fleet holds
        (repo / folder).mkdir(parents=True)
        (repo / folder / "kustomization.yaml").write_text("resources: []\n")
    (repo / changed).write_text("0\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "fleet")
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    install_gh(bin_dir)
    (tmp_path / "body.md").write_text("what moves\n")
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GH_LOG": str(tmp_path / "gh.log"),
        "GH_STATE": str(tmp_path / "gh.state"),
        "GH_TOKEN": "x",
        "BASE": "main",
        "RUNNER_TEMP": str(tmp_path),
        "GIT_CONFIG_GLOBAL": os.devnull,
        **job["env"],
    }
    heads = []
    for run_number in (1, 2):
        git(repo, "checkout", "-q", "main")
        (repo / changed).write_text(f"{run_number}\n")
        done = subprocess.run(
            ["bash", "-e", "-c", step["run"]], cwd=repo, env=env,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        heads.append(git(remote, "rev-parse", job["env"]["BRANCH"]).strip())
    calls = (tmp_path / "gh.log").read_text().splitlines()
    assert [c.split()[1] for c in calls if c.startswith("pr ")].count("create") == 1, calls
    assert heads[0] != heads[1]  # the same branch, force-pushed with the second run's change
    branches = git(remote, "branch", "--format=%(refname:short)").split()
    assert sorted(branches) == sorted(["main", job["env"]["BRANCH"]])
