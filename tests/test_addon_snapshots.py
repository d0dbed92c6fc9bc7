"""Snapshots of the addon objects (example fleet and an override case); template variables."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from syrupy.assertion import SnapshotAssertion

from dsf_compile.errors import InputError
from dsf_compile.inputs.agent_settings import AgentOverride, AgentSettings
from dsf_compile.inputs.settings import Settings
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.addon import render_addon
from dsf_compile.render.manifests import render_manifests
from dsf_compile.render.template_variables import TEMPLATE_VARIABLES, check_template_variables
from tests.fleet_repo import EXAMPLE_FLEET, copy_fleet

OVERRIDES = """\
agent:
  image: quay.io/dynamic-scoring/dsf-agent:0.2.0
  logLevel: debug
  serviceMonitor: true
  overrides:
    # every cluster in eu-west pulls from the regional mirror
    - clusterSelector:
        matchLabels: {region: eu-west}
      image: registry.eu.example/dsf/dsf-agent:0.2.0
    # edge clusters: dedicated nodes, behind a proxy, less memory
    - clusterName: "edge*"
      nodeSelector:
        node-role.kubernetes.io/edge: ""
      tolerations:
        - {key: edge, operator: Exists, effect: NoSchedule}
      resources:
        limits: {memory: 128Mi}
      proxy:
        httpProxy: http://proxy.edge.example:3128
        httpsProxy: http://proxy.edge.example:3128
        noProxy: .svc,.cluster.local,10.0.0.0/8
"""


def addon_files(files: dict[str, str]) -> dict[str, str]:
    """The addon's files: hub/addon/ and each cluster's ManagedClusterAddOn and overrides."""
    return {
        path: text
        for path, text in files.items()
        if (path.startswith("hub/addon/") and not path.endswith("kustomization.yaml"))
        or path.endswith(("/managedclusteraddon.yaml", "/addondeploymentconfig.yaml"))
    }


@pytest.fixture
def override_root(tmp_path: Path) -> Path:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    (root / "dsf.yaml").write_text(OVERRIDES, encoding="utf-8")
    return root


def test_addon_objects_of_the_example_fleet(snapshot: SnapshotAssertion) -> None:
    assert addon_files(render_manifests(plan_fleet(EXAMPLE_FLEET))) == snapshot


def test_addon_objects_with_overrides(snapshot: SnapshotAssertion, override_root: Path) -> None:
    files = addon_files(render_manifests(plan_fleet(override_root)))
    assert files == snapshot
    edge = yaml.safe_load(files["clusters/edge01/addondeploymentconfig.yaml"])["spec"]
    # edge01 is in eu-west and an edge cluster: both overrides apply, merged.
    assert edge["registries"] == [
        {
            "source": "quay.io/dynamic-scoring/dsf-agent:0.2.0",
            "mirror": "registry.eu.example/dsf/dsf-agent:0.2.0",
        }
    ]
    assert edge["resourceRequirements"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "50m", "memory": "64Mi"},
    }
    assert edge["agentInstallNamespace"] == "dynamic-scoring"
    assert "clusters/worker02/addondeploymentconfig.yaml" not in files
    worker02 = yaml.safe_load(files["clusters/worker02/managedclusteraddon.yaml"])
    assert "configs" not in worker02["spec"]
    edge_addon = yaml.safe_load(files["clusters/edge01/managedclusteraddon.yaml"])
    assert edge_addon["spec"]["configs"] == [
        {
            "group": "addon.open-cluster-management.io",
            "resource": "addondeploymentconfigs",
            "name": "dynamic-scoring-framework",
            "namespace": "edge01",
        }
    ]


def test_later_overrides_win_field_by_field(override_root: Path) -> None:
    (override_root / "dsf.yaml").write_text(
        OVERRIDES
        + """\
    - clusterName: edge01
      nodeSelector: {pool: edge-b}
      proxy: {noProxy: .svc}
      resources:
        requests: {cpu: 10m}
""",
        encoding="utf-8",
    )
    files = render_manifests(plan_fleet(override_root))
    spec = yaml.safe_load(files["clusters/edge01/addondeploymentconfig.yaml"])["spec"]
    assert spec["nodePlacement"]["nodeSelector"] == {"pool": "edge-b"}
    assert spec["nodePlacement"]["tolerations"] == [
        {"key": "edge", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert spec["proxyConfig"] == {
        "httpProxy": "http://proxy.edge.example:3128",
        "httpsProxy": "http://proxy.edge.example:3128",
        "noProxy": ".svc",
    }
    assert spec["resourceRequirements"][0]["resources"] == {
        "limits": {"cpu": "500m", "memory": "128Mi"},
        "requests": {"cpu": "10m", "memory": "64Mi"},
    }


def test_an_override_that_selects_no_cluster_is_an_error(override_root: Path) -> None:
    (override_root / "dsf.yaml").write_text(
        "agent:\n  overrides:\n    - clusterName: worker99\n      nodeSelector: {a: b}\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as caught:
        render_manifests(plan_fleet(override_root))
    errors = [p.format() for p in caught.value.problems if p.severity == "error"]
    assert errors == [
        "dsf.yaml:3:7: error: agent.overrides[0].clusterName: selects no cluster of the inventory (a typo?)"
    ]


def test_the_service_monitor_is_off_by_default() -> None:
    text = render_manifests(plan_fleet(EXAMPLE_FLEET))["hub/addon/addontemplate.yaml"]
    assert "ServiceMonitor" not in text
    assert "monitoring.coreos.com" not in text


# ------------------------------------------------------- template variables


def test_the_template_uses_only_ocm_variables() -> None:
    text = render_manifests(plan_fleet(EXAMPLE_FLEET))["hub/addon/addontemplate.yaml"]
    used = set(re.findall(r"\{\{(.*?)\}\}", text))
    assert used == {"CLUSTER_NAME", "HUB_KUBECONFIG"}
    assert used <= set(TEMPLATE_VARIABLES)


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ("agent:\n  image: quay.io/dsf/agent:{{IMAGE_TAG}}\n", "agent.image"),
        (
            "agent:\n  resources:\n    limits: {memory: '{{MEM}}'}\n",
            "agent.resources.limits.memory",
        ),
        (
            "agent:\n  overrides:\n    - clusterName: edge01\n      image: 'x/{{ REGISTRY }}/agent'\n",
            "agent.overrides[0].image",
        ),
        (
            "agent:\n  overrides:\n    - clusterName: edge01\n      proxy: {httpProxy: 'http://{{PROXY}}:3128'}\n",
            "agent.overrides[0].proxy.httpProxy",
        ),
        (
            "agent:\n  overrides:\n    - clusterName: edge01\n      nodeSelector: {pool: '{{POOL}}'}\n",
            "agent.overrides[0].nodeSelector.pool",
        ),
    ],
)
def test_a_template_variable_in_the_settings_is_refused(
    override_root: Path, settings: str, field: str
) -> None:
    (override_root / "dsf.yaml").write_text(settings, encoding="utf-8")
    before = sorted(p.name for p in override_root.iterdir())
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dsf_compile.commands.cli import main; main()",
            "--root",
            str(override_root),
            "render",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if ": error: " in line]
    assert line.startswith("dsf.yaml:")
    assert f": error: {field}: " in line
    assert "looks like an OCM template variable" in line
    assert sorted(p.name for p in override_root.iterdir()) == before  # nothing rendered


def test_the_render_stage_refuses_what_bypassed_validation() -> None:
    # Settings built in code (model_copy skips validation) still cannot smuggle a variable.
    plan = plan_fleet(EXAMPLE_FLEET)
    agent = plan.inputs.settings.agent.model_copy(update={"image": "quay.io/dsf/agent:{{TAG}}"})
    settings = plan.inputs.settings.model_copy(update={"agent": agent})
    inputs = type(plan.inputs)(
        settings, plan.inputs.scorers, plan.inputs.config, plan.inputs.clusters
    )
    broken = type(plan)(inputs, plan.health, plan.resolved, plan.clusters, plan.warnings)
    with pytest.raises(InputError) as caught:
        render_addon(broken)
    assert [(p.path, p.field) for p in caught.value.problems] == [("dsf.yaml", "agent.image")]
    assert "{{TAG}}" in caught.value.problems[0].message


def test_a_variable_of_unknown_origin_is_named_by_its_template_field() -> None:
    template = {
        "metadata": {"name": "dynamic-scoring-framework"},
        "spec": {
            "agentSpec": {
                "workload": {"manifests": [{"data": {"x": "{{CLUSTER_NAME}} {{OTHER}}"}}]}
            }
        },
    }
    (problem,) = check_template_variables(template, Settings())
    assert (
        problem.field
        == "AddOnTemplate dynamic-scoring-framework: spec.agentSpec.workload.manifests[0].data.x"
    )
    assert "{{OTHER}}" in problem.message


def test_the_models_refuse_template_variables_in_every_agent_string() -> None:
    with pytest.raises(ValueError, match="template variable"):
        AgentSettings(image="{{X}}")
    with pytest.raises(ValueError, match="template variable"):
        AgentOverride.model_validate({"clusterName": "a", "tolerations": [{"key": "{{K}}"}]})
