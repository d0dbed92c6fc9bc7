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
