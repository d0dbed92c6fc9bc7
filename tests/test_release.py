"""The release: the version of pyproject.toml is the tag of the agent image that rendered
Deployments use by default, and the release workflow publishes exactly that image."""

from __future__ import annotations

import tomllib

import yaml

from dsf_compile.inputs.settings import AgentSettings
from tests.fleet_repo import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "release.yaml"


def project_version() -> str:
    with (REPO_ROOT / "pyproject.toml").open("rb") as stream:
        version: str = tomllib.load(stream)["project"]["version"]
    return version


def test_the_default_agent_image_is_tagged_with_the_project_version() -> None:
    image, _, tag = AgentSettings().image.rpartition(":")
    assert tag == project_version()
    containerfile = (REPO_ROOT / "agent" / "Containerfile").read_text(encoding="utf-8")
    assert f"-t {image}:{tag} ." in containerfile


def test_the_release_workflow_builds_both_architectures_from_the_containerfile() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    # YAML 1.1 reads the key "on" as True.
    assert workflow[True]["push"]["tags"] == ["v*"]
    build = next(
        step
        for step in workflow["jobs"]["image"]["steps"]
        if step.get("uses", "").startswith("docker/build-push-action")
    )
    assert build["with"]["file"] == "agent/Containerfile"
    assert set(build["with"]["platforms"].split(",")) == {"linux/amd64", "linux/arm64"}
    assert build["with"]["tags"] == (
        "${{ needs.version.outputs.image }}:${{ needs.version.outputs.version }}"
    )
    python = workflow["jobs"]["python"]
    assert python["permissions"]["id-token"] == "write"
    assert any("python -m build" in step.get("run", "") for step in python["steps"])
