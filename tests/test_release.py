"""The release: one version everywhere, names the repository's owner controls, and the
rendered default image is what the release workflow of the fleet's repository publishes."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from dsf_compile import __version__
from dsf_compile.commands.cli import run
from dsf_compile.inputs.agent_image import LOCAL_IMAGE, published_image
from dsf_compile.inputs.agent_settings import AgentSettings
from dsf_compile.inputs.settings import Settings
from tests.fleet_repo import REPO_ROOT, copy_fleet

WORKFLOWS = REPO_ROOT / ".github" / "workflows"
RELEASE = WORKFLOWS / "release.yaml"


def pyproject() -> dict:
    with (REPO_ROOT / "pyproject.toml").open("rb") as stream:
        return tomllib.load(stream)["project"]


def test_one_version_and_a_distribution_name_of_our_own() -> None:
    project = pyproject()
    assert project["version"] == __version__
    assert project["name"] == "ocm-dynamic-scoring"  # "dsf" is another project's
    assert set(project["scripts"]) == {"dsf-compile", "dsf-agent", "dsf-mcp"}


def test_every_install_hint_names_the_distribution_and_an_extra_it_has() -> None:
    project = pyproject()
    hint = re.compile(r"pip install '([A-Za-z0-9._-]+)\[([a-z,]+)\]'")
    texts = [
        *REPO_ROOT.joinpath("docs").glob("*.md"),
        REPO_ROOT / "README.md",
        *REPO_ROOT.joinpath("dsf_compile").rglob("*.py"),
    ]
    found = []
    for path in texts:
        for name, extras in hint.findall(path.read_text(encoding="utf-8")):
            found.append(path.name)
            assert name == project["name"], f"{path}: pip install '{name}[…]'"
            assert set(extras.split(",")) <= set(project["optional-dependencies"])
    assert {"optimize.md", "mcp_server.py", "optimize.py"} <= set(found)


@pytest.mark.parametrize(
    ("url", "image"),
    [
        ("https://github.com/Acme/Fleet.git", f"ghcr.io/acme/fleet-agent:{__version__}"),
        ("https://github.com/acme/my.fleet", f"ghcr.io/acme/my.fleet-agent:{__version__}"),
        ("ssh://git@github.com/acme/fleet.git", f"ghcr.io/acme/fleet-agent:{__version__}"),
        ("https://gitlab.com/acme/fleet.git", None),
        ("https://github.com/acme/fleet/tree/main", None),
        ("https://github.com/acme/.fleet", None),  # no image name starts with a dot
    ],
)
def test_the_image_a_repository_publishes(url: str, image: str | None) -> None:
    assert published_image(url) == image
    derived = Settings.model_validate({"repository": {"url": url}}).agent.image
    assert derived == (image or LOCAL_IMAGE)


def test_an_image_the_user_sets_is_kept() -> None:
    settings = Settings.model_validate(
        {
            "repository": {"url": "https://github.com/acme/fleet"},
            "agent": {"image": "r.example/a:1"},
        }
    )
    assert settings.agent.image == "r.example/a:1"
    assert AgentSettings().image == f"ghcr.io/example/dsf-fleet-agent:{__version__}"


def validate(root: Path, *args: str, style: str = "text") -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "--format", style, "validate", *args], out, err)
    return code, err.getvalue()


@pytest.mark.parametrize(
    ("settings", "warned"),
    [
        ("repository:\n  url: https://github.com/acme/fleet.git\n", None),
        ("agent:\n  image: r.example/dsf-agent:1\n", None),
        ("repository:\n  url: https://github.com/example/dsf-fleet.git\n", "dsf.yaml:2:3:"),
        ("sync:\n  retries: 1\n", "dsf.yaml:1:1:"),
        ("repository:\n  url: https://git.example/acme/fleet.git\n", "dsf.yaml:2:3:"),
    ],
    ids=["own-repository", "own-image", "example-url", "url-not-set", "not-github"],
)
def test_validate_warns_when_the_rendered_image_is_published_by_nothing(
    tmp_path: Path, settings: str, warned: str | None
) -> None:
    root = copy_fleet(tmp_path, with_rendered=False)
    (root / "dsf.yaml").write_text(settings, encoding="utf-8")
    code, err = validate(root, "--strict")
    lines = [x for x in err.splitlines() if x.startswith("dsf.yaml:")]
    if warned is None:
        assert (code, lines) == (0, []), err
        return
    assert code == 1
    (line,) = lines
    assert line.startswith(f"{warned} error: repository.url: ")
    assert "docs/install.md" in line


def test_a_url_that_is_not_one_is_an_error_not_also_a_warning(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path, with_rendered=False)
    (root / "dsf.yaml").write_text('repository:\n  url: "not a url"\n', encoding="utf-8")
    code, err = validate(root)
    assert code == 1
    assert [x.split(": ")[1] for x in err.splitlines() if x.startswith("dsf.yaml:")] == ["error"]


def test_the_kinds_that_need_more_than_ocm_core_are_noted_and_strict_ignores_it(
    tmp_path: Path,
) -> None:
    root = copy_fleet(tmp_path, with_rendered=False)
    (root / "dsf.yaml").write_text(
        "repository:\n  url: https://github.com/acme/fleet.git\n", encoding="utf-8"
    )
    code, err = validate(root, "--strict")
    assert code == 0, err
    notes = [x for x in err.splitlines() if ": info: " in x]
    assert len(notes) == 2, err
    assert notes[0].startswith(
        f"placements/gpu-apps/policies.yaml:4:1: info: kind: Policy {PREREQ_POLICY}"
    )
    assert notes[1].startswith(
        f"placements/gpu-apps/workloads.yaml:4:1: info: kind: ManifestWorkReplicaSet {PREREQ_MWRS}"
    )
    code, err = validate(root, style="github")
    assert "::notice file=placements/gpu-apps/policies.yaml,line=4,col=1::" in err
    # without those kinds, nothing is said
    for name in ("policies.yaml", "workloads.yaml", "optimization.yaml"):
        (root / "placements" / "gpu-apps" / name).unlink()
    shutil.rmtree(root / "placements" / "optimized")
    code, err = validate(root, "--strict")
    assert code == 0 and ": info: " not in err, err


PREREQ_POLICY = "needs the governance policy framework on the hub"
PREREQ_MWRS = "needs the hub's ManifestWorkReplicaSet feature gate"


def test_the_prerequisite_messages_say_what_the_test_expects() -> None:
    from dsf_compile.inputs.prerequisites import PREREQUISITES

    assert PREREQUISITES[0][1].startswith(PREREQ_POLICY)
    assert PREREQUISITES[1][1].startswith(PREREQ_MWRS)


# ------------------------------------------------------------------ the workflow


def release() -> dict:
    return yaml.safe_load(RELEASE.read_text(encoding="utf-8"))


def test_the_release_names_nothing_the_owner_does_not_control() -> None:
    text = RELEASE.read_text(encoding="utf-8")
    assert "quay.io" not in text and "secrets." not in text
    workflow = release()
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads "on" as True
    image = workflow["jobs"]["image"]
    assert image["permissions"]["packages"] == "write"
    runs = "\n".join(step.get("run", "") for step in image["steps"])
    assert 'agent/build-image.sh --tag "$IMAGE"' in runs
    assert 'push "$IMAGE"' in runs
    assert image["strategy"]["matrix"]["include"] == "${{ fromJSON(needs.version.outputs.matrix) }}"
    (manifest,) = workflow["jobs"]["manifest"]["steps"]
    assert manifest["env"]["IMAGE"] == "${{ needs.version.outputs.image }}"
    assert manifest["env"]["ARCHES"] == "${{ needs.version.outputs.arches }}"
    assert "for arch in $ARCHES" in manifest["run"]
    assert 'manifest push --all "$IMAGE" "docker://$IMAGE"' in manifest["run"]
    python = workflow["jobs"]["python"]
    # a fork publishes its image; only the repository that holds the name on PyPI says so
    assert python["if"] == "vars.PUBLISH_TO_PYPI == 'true'"
    assert python["permissions"]["id-token"] == "write"
    assert any(
        s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in python["steps"]
    )


@pytest.mark.parametrize(
    ("private", "runner", "matrix", "arches"),
    [
        ("false", "", [("amd64", "ubuntu-24.04"), ("arm64", "ubuntu-24.04-arm")], "amd64 arm64"),
        ("true", "", [("amd64", "ubuntu-24.04")], "amd64"),
        ("true", "arm-big", [("amd64", "ubuntu-24.04"), ("arm64", "arm-big")], "amd64 arm64"),
    ],
    ids=["public", "private", "private-with-a-runner"],
)
def test_arm64_is_built_where_the_repository_has_a_runner_for_it(
    tmp_path: Path, private: str, runner: str, matrix: list[tuple[str, str]], arches: str
) -> None:
    (step,) = [s for s in release()["jobs"]["version"]["steps"] if s.get("id") == "arches"]
    output = tmp_path / "output"
    env = {"PATH": os.environ["PATH"], "PRIVATE": private, "ARM64_RUNNER": runner}
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        env={**env, "GITHUB_OUTPUT": str(output)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    values = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert [(e["arch"], e["runner"]) for e in json.loads(values["matrix"])] == matrix
    assert values["arches"] == arches


def version_step() -> str:
    (step,) = [s for s in release()["jobs"]["version"]["steps"] if s.get("id") == "version"]
    script: str = step["run"]
    return script


def run_version_step(tmp_path: Path, tag: str, repository: str) -> tuple[int, str, str]:
    """The workflow's step as the runner runs it (bash, GitHub's variables)."""
    output = tmp_path / "output"
    env = {**os.environ, "TAG": tag, "REPOSITORY": repository, "GITHUB_OUTPUT": str(output)}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    done = subprocess.run(
        ["bash", "-e", "-c", version_step()],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, output.read_text() if output.exists() else "", done.stderr


def test_the_release_publishes_what_a_fleet_of_that_repository_renders(tmp_path: Path) -> None:
    code, output, err = run_version_step(tmp_path, f"v{__version__}", "Acme/Fleet")
    assert code == 0, err
    assert output.splitlines() == [
        f"version={__version__}",
        f"image=ghcr.io/acme/fleet-agent:{__version__}",
    ]
    rendered = Settings.model_validate({"repository": {"url": "https://github.com/Acme/Fleet.git"}})
    assert f"image={rendered.agent.image}" in output


def test_a_tag_that_is_not_the_version_stops_the_release(tmp_path: Path) -> None:
    code, output, err = run_version_step(tmp_path, "v9.9.9", "acme/fleet")
    assert code != 0 and output == ""
    assert "differ" in err
