"""A non-default ``agentNamespace``: the rendered Deployment tells the agent where it runs."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.commands.cli import run
from tests.agent.agent_fakes import FakeKube
from tests.agent.conftest import CLUSTER, AgentProcess, agent_env
from tests.agent.fleet_apis import poll_until
from tests.fleet_repo import copy_fleet

NAMESPACE = "scoring-agent"


def _rendered(root: Path, relative: str) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((root / "rendered" / relative).read_text())
    return loaded


def _env_of(container: dict[str, Any], namespace: str) -> dict[str, str]:
    """The container's environment as the kubelet resolves it (downward API included)."""
    env = {}
    for variable in container.get("env", []):
        if "value" in variable:
            env[variable["name"]] = variable["value"]
        elif variable.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == (
            "metadata.namespace"
        ):
            env[variable["name"]] = namespace
        else:
            raise AssertionError(f"unexpected env source {variable}")
    return env


@pytest.mark.integration
def test_the_agent_reads_its_config_in_a_non_default_namespace(
    tmp_path: Path, kube: FakeKube, agent_process: Callable[..., AgentProcess]
) -> None:
    root = copy_fleet(tmp_path / "fleet")
    settings = root / "dsf.yaml"
    text = settings.read_text()
    assert "agentNamespace: dynamic-scoring\n" in text
    settings.write_text(
        text.replace("agentNamespace: dynamic-scoring\n", f"agentNamespace: {NAMESPACE}\n")
    )
    assert run(["--root", str(root), "render"], io.StringIO(), io.StringIO()) == 0

    # What OCM applies on the managed cluster: the ManifestWork's ConfigMap ...
    work = _rendered(root, f"clusters/{CLUSTER}/manifestwork.yaml")
    (configmap,) = work["spec"]["workload"]["manifests"]
    assert configmap["metadata"]["namespace"] == NAMESPACE
    kube.set_configmap(NAMESPACE, configmap["metadata"]["name"], configmap["data"])
    # ... and the addon's Deployment, with its environment resolved in that namespace.
    template = _rendered(root, "hub/addon/addontemplate.yaml")
    deployment = next(
        m
        for m in template["spec"]["agentSpec"]["workload"]["manifests"]
        if m["kind"] == "Deployment"
    )
    assert deployment["metadata"]["namespace"] == NAMESPACE
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    env = _env_of(container, NAMESPACE)
    assert env == {"DSF_NAMESPACE": NAMESPACE}

    (tmp_path / "managed.kubeconfig").write_text(kube.kubeconfig())
    agent = agent_process(
        "--cluster-name",
        CLUSTER,
        env=agent_env(KUBECONFIG=str(tmp_path / "managed.kubeconfig"), **env),
    )
    expected = len(json.loads(configmap["data"]["summaries"]))
    poll_until(
        lambda: f"dynamic_scoring_scorers {float(expected)}" in agent.metrics(),
        f"{expected} scorers",
        agent.metrics,
    )
    assert agent.status("/readyz") == 200
