"""The compliance claim's fleet and agent, shared by its tests
(:mod:`tests.agent.test_agent_compliance`, :mod:`tests.agent.test_agent_compliance_bounds`):
the example fleet with ``requireCompliance`` set, rendered; the agent started with the
rendered Deployment's args against :mod:`tests.agent.fleet_apis`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.agent.agent_probes import value
from tests.agent.conftest import AgentProcess, agent_env
from tests.agent.fleet_apis import CLUSTER, HUB_TOKEN, SA_TOKEN, SCORE_NAME, FleetApis, poll_until
from tests.agent.kube_rbac import addon_template, rendered_cluster_roles
from tests.agent.kubelet import processed_manifests
from tests.fleet_repo import copy_fleet, run_command

OPTIMIZATION = "placements/gpu-apps/optimization.yaml"
CLAIM = "policy-watcher-claim"
#: Seconds, through dsf.yaml: while the agent has seen a compliant state for less than
#: this, the test reads the claim (a margin for a loaded machine, not a measure).
STABLE = 10


def render(root: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    done = run_command(root, "render")
    assert done.returncode == 0, done.stderr
    return addon_template(root / "rendered"), rendered_cluster_roles(root / "rendered")


def fleet(tmp_path: Path, *, require: bool, settings: str = "") -> Path:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    path = root / OPTIMIZATION
    text = path.read_text(encoding="utf-8")
    assert "requireCompliance: false" in text
    path.write_text(
        text.replace("requireCompliance: false", f"requireCompliance: {str(require).lower()}")
    )
    if settings:
        dsf = root / "dsf.yaml"
        dsf.write_text(dsf.read_text().replace("agent:\n", f"agent:\n{settings}", 1))
    return root


def agent_rbac(template: dict[str, Any]) -> list[dict[str, Any]]:
    kinds = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
    return [m for m in template["spec"]["agentSpec"]["workload"]["manifests"] if m["kind"] in kinds]


def agent_args(template: dict[str, Any]) -> list[str]:
    (deployment,) = [
        m
        for m in template["spec"]["agentSpec"]["workload"]["manifests"]
        if m["kind"] == "Deployment"
    ]
    args: list[str] = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    return args


def processed(template: dict[str, Any]) -> dict[str, Any]:
    """The template with OCM's variables substituted for :data:`CLUSTER` (the Role's namespace)."""
    out = copy.deepcopy(template)
    out["spec"]["agentSpec"]["workload"]["manifests"] = processed_manifests(template, CLUSTER)
    return out


def policy(name: str, compliant: str | None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "policy.open-cluster-management.io/v1",
        "kind": "Policy",
        "metadata": {"name": name, "namespace": CLUSTER},
        "spec": {"disabled": False, "remediationAction": "enforce", "policy-templates": []},
    }
    if compliant is not None:
        obj["status"] = {"compliant": compliant}
    return obj


def start_agent(
    apis: FleetApis,
    template: dict[str, Any],
    folder: Path,
    agent_process: Callable[..., AgentProcess],
) -> AgentProcess:
    """``dsf-agent`` with the rendered Deployment's args (the hub kubeconfig and the metrics
    port where this test has them)."""
    folder.mkdir(exist_ok=True)
    (folder / "managed.kubeconfig").write_text(apis.managed.kubeconfig(SA_TOKEN))
    (folder / "token").write_text(HUB_TOKEN)
    (folder / "kubeconfig").write_text(apis.hub.kubeconfig(token_file="token"))
    args = [
        f"--hub-kubeconfig={folder / 'kubeconfig'}" if a.startswith("--hub-kubeconfig=") else a
        for a in agent_args(template)
        if not a.startswith("--metrics-bind=")
    ]
    env = agent_env(KUBECONFIG=str(folder / "managed.kubeconfig"), DSF_NAMESPACE=apis.namespace)
    return agent_process(*args, env=env)


def scored(agent: AgentProcess, cycles: int) -> None:
    """Wait for ``cycles`` successful scoring cycles: the claim never stops scoring."""
    poll_until(
        lambda: (
            value(agent, "dynamic_scoring_requests_total", score_name=SCORE_NAME, status="success")
            >= cycles
        ),
        f"{cycles} successful scoring cycles",
        agent.log,
    )
