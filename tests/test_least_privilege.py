"""Least privilege and no credentials in ``rendered/``."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.agent_manifests import secret_names
from dsf_compile.render.manifests import render_manifests
from tests.fleet_repo import EXAMPLE_FLEET, copy_fleet

RULE_FIELDS = ("verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs")


@cache
def example_files() -> dict[str, str]:
    return render_manifests(plan_fleet(EXAMPLE_FLEET))


def all_objects(files: dict[str, str]) -> list[dict[str, Any]]:
    """Every object, the ones nested in the AddOnTemplate and the ManifestWorks included."""
    out = []
    for path, text in files.items():
        if path.endswith("kustomization.yaml"):
            continue
        obj = yaml.safe_load(text)
        out.append(obj)
        spec = obj.get("spec", {})
        if obj["kind"] == "AddOnTemplate":
            out += spec["agentSpec"]["workload"]["manifests"]
        elif obj["kind"] == "ManifestWork":
            out += spec["workload"]["manifests"]
    return out


def roles(files: dict[str, str]) -> list[dict[str, Any]]:
    return [o for o in all_objects(files) if o["kind"] in ("Role", "ClusterRole")]


def test_there_are_roles_to_check() -> None:
    kinds = sorted(r["kind"] for r in roles(example_files()))
    assert kinds == ["ClusterRole", "Role"]


def test_no_wildcard_in_any_rule() -> None:
    for role in roles(example_files()):
        for rule in role["rules"]:
            for field in RULE_FIELDS:
                assert not any("*" in value for value in rule.get(field, ())), (
                    role["metadata"]["name"],
                    rule,
                )


def test_the_hub_cluster_role_covers_only_addonplacementscores() -> None:
    (cluster_role,) = [r for r in roles(example_files()) if r["kind"] == "ClusterRole"]
    # exactly what the agent uses (tests/agent/test_agent_rbac.py runs it against a hub
    # enforcing this role, and shows each verb is needed)
    assert cluster_role["rules"] == [
        {
            "apiGroups": ["cluster.open-cluster-management.io"],
            "resources": ["addonplacementscores"],
            "verbs": ["get", "create"],
        },
        {
            "apiGroups": ["cluster.open-cluster-management.io"],
            "resources": ["addonplacementscores/status"],
            "verbs": ["update"],
        },
    ]


def test_the_hub_permissions_are_the_agents_own_cluster_namespace_only() -> None:
    template = yaml.safe_load(example_files()["hub/addon/addontemplate.yaml"])
    (registration,) = template["spec"]["registration"]
    assert registration["type"] == "KubeClient"
    (permission,) = registration["kubeClient"]["hubPermissions"]
    assert permission["type"] == "CurrentCluster"  # a RoleBinding in <cluster>, never cluster-wide
    (cluster_role,) = [r for r in roles(example_files()) if r["kind"] == "ClusterRole"]
    assert permission["currentCluster"]["clusterRoleName"] == cluster_role["metadata"]["name"]


def test_the_addon_manager_is_granted_that_role_and_nothing_else() -> None:
    binding = yaml.safe_load(example_files()["hub/addon/clusterrolebinding.yaml"])
    (cluster_role,) = [r for r in roles(example_files()) if r["kind"] == "ClusterRole"]
    assert binding["roleRef"]["name"] == cluster_role["metadata"]["name"]
    assert binding["subjects"] == [
        {
            "kind": "ServiceAccount",
            "name": "addon-manager-controller-sa",
            "namespace": "open-cluster-management-hub",
        }
    ]
    bindings = [
        o
        for o in all_objects(example_files())
        if o["kind"] in ("RoleBinding", "ClusterRoleBinding")
    ]
    assert sorted(b["kind"] for b in bindings) == ["ClusterRoleBinding", "RoleBinding"]


def test_the_agent_role_names_its_configmap_and_secrets() -> None:
    plan = plan_fleet(EXAMPLE_FLEET)
    (role,) = [r for r in roles(render_manifests(plan)) if r["kind"] == "Role"]
    by_resource = {tuple(rule["resources"]): rule for rule in role["rules"]}
    assert set(by_resource) == {("configmaps",), ("secrets",)}
    assert by_resource[("configmaps",)]["resourceNames"] == ["dynamic-scoring-config"]
    # listed by name and watched, never read with get
    assert by_resource[("configmaps",)]["verbs"] == ["list", "watch"]
    assert by_resource[("secrets",)]["resourceNames"] == list(secret_names(plan))
    assert by_resource[("secrets",)]["verbs"] == ["get"]
    referenced = set()
    for resolved in plan.resolved.values():
        referenced |= {
            resolved.summary.sourceEndpointAuthName,
            resolved.summary.scoringEndpointAuthName,
        }
    assert set(secret_names(plan)) == referenced - {""}
    assert secret_names(plan)  # the example fleet references a Secret


def test_without_any_secret_reference_there_is_no_secret_rule(tmp_path: Path) -> None:
    # An empty resourceNames list would mean every Secret: the rule must go away instead.
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    for path in (root / "scorers").glob("*.yaml"):
        text = path.read_text(encoding="utf-8")
        text = re.sub(
            r"\n( *)auth:\n\1  tokenSecretRef:\n\1    name: [^\n]+\n\1    key: [^\n]+", "", text
        )
        path.write_text(text, encoding="utf-8")
    plan = plan_fleet(root)
    assert secret_names(plan) == ()
    (role,) = [r for r in roles(render_manifests(plan)) if r["kind"] == "Role"]
    assert [rule["resources"] for rule in role["rules"]] == [["configmaps"]]


def test_the_agent_pod_is_hardened() -> None:
    (deployment,) = [o for o in all_objects(example_files()) if o["kind"] == "Deployment"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["runAsNonRoot"] is True
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert set(container["resources"]) == {"requests", "limits"}
    assert {"cpu", "memory"} <= set(container["resources"]["limits"])
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"metrics": 8080}
    assert {
        container["livenessProbe"]["httpGet"]["port"],
        container["readinessProbe"]["httpGet"]["port"],
    } == {"metrics"}


# ------------------------------------------------------------- credentials

_CREDENTIAL_KEY = re.compile(
    r"^\s*-?\s*(token|password|passwd|secret|apiKey|clientSecret|privateKey|bearerToken)\s*:",
    re.I | re.M,
)
_CREDENTIAL_VALUE = re.compile(
    r"[A-Za-z][A-Za-z0-9+.-]*://[^/\s@]+:[^/\s@]+@"  # user:password@host
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|\bBearer\s+[A-Za-z0-9._~+/-]{8,}"
    r"|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # a JWT
)


@pytest.mark.parametrize("where", ["generated", "committed"])
def test_no_credential_anywhere_in_rendered(where: str) -> None:
    if where == "generated":
        texts = example_files()
    else:
        folder = EXAMPLE_FLEET / "rendered"
        if not folder.is_dir():
            pytest.skip("no rendered/ in this checkout")
        texts = {
            str(p.relative_to(folder)): p.read_text(encoding="utf-8")
            for p in folder.rglob("*")
            if p.is_file()
        }
    found = {
        path: [
            m.group(0) for m in (*_CREDENTIAL_KEY.finditer(text), *_CREDENTIAL_VALUE.finditer(text))
        ]
        for path, text in texts.items()
    }
    assert {p: f for p, f in found.items() if f} == {}
    kinds = {yaml.safe_load(t).get("kind") for p, t in texts.items() if p.endswith(".yaml")}
    assert "Secret" not in kinds
