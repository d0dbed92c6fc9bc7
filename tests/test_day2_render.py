"""Agent settings through GitOps (aggregation, pull secrets, a CA bundle) and ExternalSecrets.

The per-cluster values reach the agent as OCM would deliver them: the AddOnTemplate's
``{{VARIABLE}}``s filled from the cluster's AddOnDeploymentConfig (empty when it sets none,
as OCM does), then the agent's own argument parser reads the environment.
"""

from __future__ import annotations

import io
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.settings import parse_settings
from dsf_compile.commands.cli import run
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.manifests import render_manifests
from tests.day2_fleet import DAY2_SETTINGS, TEST_CA, day2_fleet
from tests.fleet_repo import EXAMPLE_FLEET

CLUSTERS = ("edge01", "worker01", "worker02")


@cache
def day2_files(tmp: Path) -> dict[str, str]:
    return render_manifests(plan_fleet(day2_fleet(tmp / "fleet")))


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return day2_files(tmp_path_factory.mktemp("day2"))


def render_with(tmp_path: Path, settings: str) -> dict[str, str]:
    return render_manifests(plan_fleet(day2_fleet(tmp_path / "fleet", settings)))


def ocm_fill(text: str, variables: dict[str, str]) -> str:
    """What OCM's template addon does: every ``{{NAME}}`` replaced, unknown ones by ''."""
    return re.sub(r"\{\{(.*?)\}\}", lambda m: variables.get(m.group(1), ""), text)


def deployment_for(files: dict[str, str], cluster: str) -> dict[str, Any]:
    """The agent Deployment as OCM renders it for ``cluster``."""
    variables = {"CLUSTER_NAME": cluster, "HUB_KUBECONFIG": "/managed/hub-kubeconfig/kubeconfig"}
    config = files.get(f"clusters/{cluster}/addondeploymentconfig.yaml")
    if config is not None:
        for item in yaml.safe_load(config)["spec"].get("customizedVariables", []):
            variables[item["name"]] = item["value"]
    template = yaml.safe_load(ocm_fill(files["hub/addon/addontemplate.yaml"], variables))
    manifests = template["spec"]["agentSpec"]["workload"]["manifests"]
    return next(m for m in manifests if m["kind"] == "Deployment")


def env_of(deployment: dict[str, Any]) -> dict[str, str]:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value", "") for e in container["env"] if "value" in e}


def agent_settings(deployment: dict[str, Any]) -> Any:
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return parse_settings(container["args"], env_of(deployment))


def work_manifests(files: dict[str, str], cluster: str) -> list[dict[str, Any]]:
    work = yaml.safe_load(files[f"clusters/{cluster}/manifestwork.yaml"])
    manifests: list[dict[str, Any]] = work["spec"]["workload"]["manifests"]
    return manifests


# ---------------------------------------------------------------- aggregation


def test_aggregations_reach_the_agent_fleet_wide_and_per_cluster(files: dict[str, str]) -> None:
    fleet = {"example_powerconsumption_score": "avg", "sample_my_score": "max"}
    for cluster in CLUSTERS:
        settings = agent_settings(deployment_for(files, cluster))
        expected = {**fleet, "sample_my_score": "min"} if cluster == "edge01" else fleet
        assert dict(settings.aggregations) == expected, cluster


def test_without_aggregations_the_agent_gets_no_variable(tmp_path: Path) -> None:
    files = render_manifests(plan_fleet(EXAMPLE_FLEET))
    assert "DSF_AGGREGATE" not in files["hub/addon/addontemplate.yaml"]
    only_override = DAY2_SETTINGS.replace(
        "  aggregate:\n    sample_my_score: max\n    example_powerconsumption_score: avg\n", ""
    )
    files = render_with(tmp_path, only_override)
    for cluster in CLUSTERS:
        settings = agent_settings(deployment_for(files, cluster))
        expected = {"sample_my_score": "min"} if cluster == "edge01" else {}
        assert dict(settings.aggregations) == expected, cluster


# ------------------------------------------------------------- pull secrets, CA


def test_image_pull_secrets_are_in_the_pod(files: dict[str, str]) -> None:
    pod = deployment_for(files, "worker01")["spec"]["template"]["spec"]
    assert pod["imagePullSecrets"] == [{"name": "dsf-pull"}]
    assert (
        "imagePullSecrets"
        not in render_manifests(plan_fleet(EXAMPLE_FLEET))["hub/addon/addontemplate.yaml"]
    )


def _ca_of(files: dict[str, str], cluster: str) -> str | None:
    found = [
        m
        for m in work_manifests(files, cluster)
        if m["metadata"]["name"] == "dynamic-scoring-agent-ca"
    ]
    return found[0]["data"]["ca.crt"] if found else None


def test_a_fleet_wide_ca_bundle_is_mounted_everywhere(files: dict[str, str]) -> None:
    for cluster in CLUSTERS:
        deployment = deployment_for(files, cluster)
        assert env_of(deployment)["SSL_CERT_FILE"] == "/etc/dsf/ca/ca.crt"
        pod = deployment["spec"]["template"]["spec"]
        mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "ca-bundle")
        volume = next(v for v in pod["volumes"] if v["name"] == "ca-bundle")
        assert mount["mountPath"] + "/ca.crt" == "/etc/dsf/ca/ca.crt"
        assert volume["configMap"]["name"] == "dynamic-scoring-agent-ca"
        assert _ca_of(files, cluster) == TEST_CA


def test_a_ca_bundle_of_some_clusters_only(tmp_path: Path) -> None:
    settings = re.sub(r"  caBundle: \|\n(    .*\n)+", "", DAY2_SETTINGS, count=1)
    assert settings.count("caBundle") == 1
    files = render_with(tmp_path, settings)
    assert _ca_of(files, "edge01") == TEST_CA
    assert _ca_of(files, "worker01") is None
    assert env_of(deployment_for(files, "edge01"))["SSL_CERT_FILE"] == "/etc/dsf/ca/ca.crt"
    # Elsewhere the variable is empty: httpx then uses its own trust store.
    assert env_of(deployment_for(files, "worker02"))["SSL_CERT_FILE"] == ""


def test_defaults_render_no_ca_bundle() -> None:
    files = render_manifests(plan_fleet(EXAMPLE_FLEET))
    assert "SSL_CERT_FILE" not in files["hub/addon/addontemplate.yaml"]
    assert all(_ca_of(files, c) is None for c in CLUSTERS)


# ------------------------------------------------------------ ExternalSecrets


def test_an_external_secret_per_secret_of_the_cluster(files: dict[str, str]) -> None:
    def secrets(cluster: str) -> dict[str, dict[str, Any]]:
        return {
            m["metadata"]["name"]: m
            for m in work_manifests(files, cluster)
            if m["kind"] == "ExternalSecret"
        }

    # worker02 runs no scorer with a token: only the pull secret.
    assert sorted(secrets("worker02")) == ["dsf-pull"]
    edge = secrets("edge01")
    assert sorted(edge) == ["api-auth-secret", "dsf-pull"]
    api = edge["api-auth-secret"]
    assert api["metadata"]["namespace"] == "scoring-agent"
    assert api["spec"]["secretStoreRef"] == {"kind": "ClusterSecretStore", "name": "vault-backend"}
    assert api["spec"]["refreshInterval"] == "30m"
    assert api["spec"]["data"] == [
        {"secretKey": "token", "remoteRef": {"key": "dsf/edge01/llm", "property": "token"}}
    ]
    assert secrets("worker01")["api-auth-secret"]["spec"]["data"][0]["remoteRef"]["key"] == (
        "dsf/worker01/llm"
    )
    pull = edge["dsf-pull"]["spec"]
    assert pull["target"]["template"] == {"type": "kubernetes.io/dockerconfigjson"}
    assert pull["dataFrom"] == [{"extract": {"key": "dsf/registry-pull"}}]


def test_no_external_secret_without_the_setting() -> None:
    files = render_manifests(plan_fleet(EXAMPLE_FLEET))
    assert "ExternalSecret" not in "".join(files.values())


# ------------------------------------------------------------------- errors


def validate(root: Path) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "--format", "text", "validate"], out, err)
    assert code == 1, out.getvalue() + err.getvalue()
    assert "Traceback" not in err.getvalue()
    return err.getvalue().splitlines()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            ("    sample_my_score: max\n", "    sample_my_score: median\n"),
            "dsf.yaml:6:5: error: agent.aggregate.sample_my_score: must be one of: last, max, min, avg, sum",
        ),
        (
            ("    sample_my_score: max\n", "    'a,b': max\n"),
            "dsf.yaml:5:3: error: agent.aggregate: score name 'a,b' cannot be passed",
        ),
        (
            ("-----BEGIN CERTIFICATE-----\n", "-----BEGIN CERTIFICATE\n"),
            "dsf.yaml:8:3: error: agent.caBundle: expected PEM certificates",
        ),
        # issue 25 row 5: one base64 line lost, in the fleet's bundle and in an override's
        (
            ("    FjEUMBIGA1UEAwwLZHNmIHRlc3QgQ0EwIBcNMjYxMTIyMjM0MjI5WhgPMjEyNjEw\n", ""),
            "dsf.yaml:8:3: error: agent.caBundle: the certificate is not an X.509 certificate "
            "OpenSSL can read (the agent would exit at start)",
        ),
        (
            ("        MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSQAwRgIhAJ1g4rzj3i3BiNPx\n", ""),
            "dsf.yaml:23:7: error: agent.overrides[0].caBundle: the certificate is not an X.509",
        ),
        (
            ("    dsf-pull: {remoteKey: dsf/registry-pull}\n", ""),
            "dsf.yaml:41:3: error: externalSecrets.secrets: no remote key for Secret 'dsf-pull' "
            "(agent.imagePullSecrets names it); add secrets.dsf-pull.remoteKey",
        ),
        (
            (
                "    dsf-pull: {remoteKey: dsf/registry-pull}\n",
                "    dsf-pull: {remoteKey: dsf/registry-pull}\n    dsf-pul: {remoteKey: x}\n",
            ),
            "dsf.yaml:44:5: error: externalSecrets.secrets.dsf-pul: no scorer's auth and no "
            "agent.imagePullSecrets names this Secret (a typo?)",
        ),
        (
            ('"dsf/${cluster}/llm"', '"dsf/${clusterName}/llm"'),
            "dsf.yaml:42:5: error: externalSecrets.secrets.api-auth-secret: remoteKey: unknown "
            "placeholder ${clusterName}; only ${cluster} is replaced",
        ),
        (
            ("  refreshInterval: 30m\n", "  refreshInterval: half an hour\n"),
            "dsf.yaml:40:3: error: externalSecrets.refreshInterval: does not match the pattern",
        ),
    ],
)
def test_bad_settings_are_located_errors(
    tmp_path: Path, change: tuple[str, str], expected: str
) -> None:
    old, new = change
    assert old in DAY2_SETTINGS
    root = day2_fleet(tmp_path / "fleet", DAY2_SETTINGS.replace(old, new, 1))
    lines = validate(root)
    assert any(line.startswith(expected) for line in lines), "\n".join(lines)


# ------------------------------------------------------- install by Placement


def _schedule(files: dict[str, str], clusters: list[Any]) -> tuple[str, ...]:
    from datetime import UTC, datetime

    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
    from dsf_compile.placement.scheduler import schedule

    placement = Placement.model_validate(yaml.safe_load(files["hub/addon/placement.yaml"]))
    bindings = [
        ManagedClusterSetBinding.model_validate(yaml.safe_load(text))
        for path, text in files.items()
        if path.startswith("hub/addon/managedclustersetbinding-")
    ]
    result = schedule(placement, clusters, bindings, None, [], datetime(2026, 1, 1, tzinfo=UTC))
    return result.decisions


def test_the_addon_installed_by_placement_reaches_a_new_cluster(tmp_path: Path) -> None:
    from dsf_compile.placement.scheduler import Cluster

    files = render_with(tmp_path / "a", DAY2_SETTINGS + "addon:\n  installStrategy: Placements\n")
    cma = yaml.safe_load(files["hub/addon/clustermanagementaddon.yaml"])["spec"]
    assert cma["installStrategy"] == {
        "type": "Placements",
        "placements": [
            {"name": "dynamic-scoring-framework-install", "namespace": "open-cluster-management"}
        ],
    }
    default = yaml.safe_load(files["hub/addon/addondeploymentconfig.yaml"])
    assert default["spec"] == {"agentInstallNamespace": "scoring-agent"}
    assert cma["supportedConfigs"][0]["defaultConfig"] == {
        "name": "dynamic-scoring-framework",
        "namespace": "open-cluster-management",
    }
    # The addon manager makes the plain clusters' ManagedClusterAddOns; the ones with
    # their own AddOnDeploymentConfig are still rendered, to reference it.
    assert "clusters/worker02/managedclusteraddon.yaml" not in files
    assert "clusters/edge01/managedclusteraddon.yaml" in files
    # OCM's scheduler, replayed: a cluster the inventory does not know yet is selected.
    inventory = [Cluster(name) for name in (*CLUSTERS, "worker03-new")]
    assert _schedule(files, inventory) == (*CLUSTERS, "worker03-new")

    selective = DAY2_SETTINGS + (
        "addon:\n  installStrategy: Placements\n  placement:\n    clusterSets: [edge]\n"
        "    labelSelector: {matchLabels: {dsf: enabled}}\n"
    )
    files = render_with(tmp_path / "b", selective)
    clusterset = "cluster.open-cluster-management.io/clusterset"
    inventory = [
        Cluster("a", {clusterset: "edge", "dsf": "enabled"}),
        Cluster("b", {clusterset: "edge"}),
        Cluster("c", {clusterset: "default", "dsf": "enabled"}),
    ]
    assert _schedule(files, inventory) == ("a",)


def test_manual_install_is_the_default() -> None:
    files = render_manifests(plan_fleet(EXAMPLE_FLEET))
    cma = yaml.safe_load(files["hub/addon/clustermanagementaddon.yaml"])["spec"]
    assert cma["installStrategy"] == {"type": "Manual"}
    assert "hub/addon/placement.yaml" not in files
    assert all(f"clusters/{c}/managedclusteraddon.yaml" in files for c in CLUSTERS)


def test_a_binding_placements_already_declares_is_rendered_once(tmp_path: Path) -> None:
    root = day2_fleet(tmp_path / "fleet", DAY2_SETTINGS + "addon:\n  installStrategy: Placements\n")
    (root / "placements" / "hub-binding.yaml").write_text(
        "apiVersion: cluster.open-cluster-management.io/v1beta2\n"
        "kind: ManagedClusterSetBinding\n"
        "metadata: {name: global, namespace: open-cluster-management}\n"
        "spec: {clusterSet: global}\n",
        encoding="utf-8",
    )
    files = render_manifests(plan_fleet(root))
    bindings = [
        path
        for path, text in files.items()
        if "kind: ManagedClusterSetBinding" in text
        and "namespace: open-cluster-management\n" in text
        and "name: global\n" in text
    ]
    assert len(bindings) == 1 and not bindings[0].startswith("hub/addon/")


# ------------------------------------------- resources as Kubernetes compares them

RESOURCES = """\
agent:
  image: ghcr.io/acme/fleet-agent:0.1.0
  resources:
    requests: {cpu: "0.5", memory: 1Gi}
    limits: {cpu: 500m, memory: 1024Mi}
  overrides:
    - clusterName: edge01
      resources:
        limits: {memory: 1000Mi}
    - clusterName: "worker*"
      resources:
        requests: {cpu: 100m}
"""


def test_requests_above_limits_are_refused_per_cluster_after_overrides(tmp_path: Path) -> None:
    """Issue 25 row 13: Kubernetes would refuse the Deployment; validate says so first."""
    # 0.5 = 500m and 1Gi = 1024Mi: equal is allowed (compared as quantities, not text)
    root = day2_fleet(tmp_path / "ok", RESOURCES.replace("1000Mi", "2Gi"))
    out, err = io.StringIO(), io.StringIO()
    assert run(["--root", str(root), "validate", "--strict"], out, err) == 0, err.getvalue()
    # edge01's override lowers the limit under the fleet's request (1Gi > 1000Mi)
    lines = validate(day2_fleet(tmp_path / "override", RESOURCES))
    assert lines[0] == (
        "dsf.yaml:9:18: error: agent.overrides[0].resources.limits.memory: the agent would "
        "request 1Gi of memory over its limit of 1000Mi on edge01 (after the overrides that "
        "select it): Kubernetes refuses a container whose request is above its limit, so "
        "the agent would not be deployed there"
    )
    # the fleet's own: once, at its field, whatever the clusters
    fleet = RESOURCES.replace('cpu: "0.5"', "cpu: 600m").replace("1000Mi", "2Gi")
    lines = validate(day2_fleet(tmp_path / "fleet", fleet))
    assert [line for line in lines if ": error: " in line] == [
        "dsf.yaml:4:16: error: agent.resources.requests.cpu: the agent would request 600m of "
        "cpu over its limit of 500m: Kubernetes refuses a container whose request is above "
        "its limit, so the agent would not be deployed there"
    ]
