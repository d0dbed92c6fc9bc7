"""The compliance claim (agent.md, "Compliance claim"): rendered only when a fleet needs it,
and kept by ``dsf-agent`` (run with its rendered args) against an emulated managed
cluster that enforces the rendered RBAC, with Policies and a ClusterClaim checked against
OCM's CRDs.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.compliance import COMPLIANT, EMPTY, NONCOMPLIANT, Debounce, policy_state
from tests.agent.agent_probes import value
from tests.agent.compliance_fleet import (
    CLAIM,
    STABLE,
    agent_args,
    agent_rbac,
    fleet,
    policy,
    processed,
    render,
    scored,
    start_agent,
)
from tests.agent.conftest import AgentProcess
from tests.agent.fleet_apis import (
    CLUSTER,
    FleetApis,
    fleet_apis,
    poll_until,
    sample_scorer,
    scorer_summary,
    serve_configuration,
)
from tests.fleet_repo import EXAMPLE_FLEET, OCM_CRDS, run_command

# ------------------------------------------------------------------ pure parts


def test_policy_state() -> None:
    compliant = {"status": {"compliant": "Compliant"}}
    assert policy_state([]) == EMPTY
    assert policy_state([compliant, compliant]) == COMPLIANT
    assert policy_state([compliant, {"status": {"compliant": "NonCompliant"}}]) == NONCOMPLIANT
    assert policy_state([compliant, {}]) == NONCOMPLIANT  # no status yet: not compliant
    assert policy_state(["junk"]) == NONCOMPLIANT


def test_debounce_writes_compliant_only_after_the_stable_time() -> None:
    debounce = Debounce(stable_seconds=120)
    assert debounce.claim(NONCOMPLIANT, 0) == NONCOMPLIANT
    assert debounce.claim(COMPLIANT, 10) is None  # compliant since 10
    assert debounce.wait(30, 100) == 30  # due at 130: a full poll first
    assert debounce.wait(30, 115) == 15  # then exactly when it is due
    assert debounce.claim(COMPLIANT, 129) is None
    assert debounce.claim(COMPLIANT, 130) == COMPLIANT
    assert debounce.claim(EMPTY, 131) == EMPTY  # at once, and the clock restarts
    assert debounce.claim(COMPLIANT, 200) is None
    assert debounce.claim(NONCOMPLIANT, 310) == NONCOMPLIANT  # a blip never reaches it
    assert debounce.claim(COMPLIANT, 320) is None


# ------------------------------------------------------------------ rendering


def test_without_require_compliance_the_fleet_renders_as_committed(tmp_path: Path) -> None:
    root = fleet(tmp_path, require=False)
    run_command(root, "render")
    for path in sorted((EXAMPLE_FLEET / "rendered").rglob("*")):
        if path.is_file():
            assert (
                root / "rendered" / path.relative_to(EXAMPLE_FLEET / "rendered")
            ).read_bytes() == (path.read_bytes()), path


def test_require_compliance_adds_exactly_the_claims_rbac_and_args(tmp_path: Path) -> None:
    without, _ = render(fleet(tmp_path / "off", require=False))
    with_claim, _ = render(fleet(tmp_path / "on", require=True))
    before = {(m["kind"], m["metadata"]["name"]) for m in agent_rbac(without)}
    added = [m for m in agent_rbac(with_claim) if (m["kind"], m["metadata"]["name"]) not in before]
    assert [m for m in agent_rbac(with_claim) if m not in added] == agent_rbac(without)
    by_kind = {m["kind"]: m for m in added}
    assert sorted(by_kind) == ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"]
    assert by_kind["Role"]["metadata"]["namespace"] == "{{CLUSTER_NAME}}"
    assert by_kind["Role"]["rules"] == [
        {
            "apiGroups": ["policy.open-cluster-management.io"],
            "resources": ["policies"],
            "verbs": ["list", "watch"],
        }
    ]
    named, create = by_kind["ClusterRole"]["rules"]
    assert (named["resourceNames"], named["verbs"]) == ([CLAIM], ["get", "update", "patch"])
    assert ("resourceNames" not in create, create["verbs"]) == (True, ["create"])
    assert agent_args(with_claim)[len(agent_args(without)) :] == [
        f"--compliance-claim={CLAIM}",
        "--compliance-poll-seconds=30",
        "--compliance-stable-seconds=120",
    ]


def test_dsf_yaml_turns_the_claim_on_with_its_settings(tmp_path: Path) -> None:
    settings = (
        "  complianceClaim:\n    enabled: true\n    claimName: mig-ready\n    stableSeconds: 0\n"
    )
    template, _ = render(fleet(tmp_path, require=False, settings=settings))
    assert "--compliance-claim=mig-ready" in agent_args(template)
    assert "--compliance-stable-seconds=0" in agent_args(template)
    bad = fleet(
        tmp_path / "bad", require=False, settings="  complianceClaim:\n    pollSeconds: 0\n"
    )
    done = run_command(bad, "validate")
    assert done.returncode != 0 and "complianceClaim.pollSeconds" in done.stderr + done.stdout


@pytest.mark.parametrize(
    "name",
    [
        "id.k8s.io",
        "clusterset.k8s.io",
        "kubeversion.open-cluster-management.io",
        "mig.open-cluster-management.io",
        "node.kubernetes.io",
        "version.openshift.io",
    ],
)
def test_a_reserved_claim_name_is_refused_where_it_is_written(tmp_path: Path, name: str) -> None:
    settings = f"  complianceClaim:\n    enabled: true\n    claimName: {name}\n"
    root = fleet(tmp_path, require=False, settings=settings)
    done = run_command(root, "validate", "--strict", "--format", "json")
    assert done.returncode == 1, done.stdout + done.stderr
    (problem,) = json.loads(done.stdout)["problems"]
    line = root.joinpath("dsf.yaml").read_text().splitlines().index(f"    claimName: {name}") + 1
    assert (problem["path"], problem["line"], problem["field"]) == (
        "dsf.yaml",
        line,
        "agent.complianceClaim.claimName",
    )
    assert name in problem["message"] and "Traceback" not in done.stderr
    # nothing is rendered for it: the RBAC never names it
    assert run_command(root, "render").returncode != 0
    assert name not in "".join(p.read_text() for p in (root / "rendered").rglob("*.yaml"))


def test_the_agent_refuses_a_reserved_claim_name_too() -> None:
    from agent.settings import parse_settings

    with pytest.raises(SystemExit) as caught:
        parse_settings(["--cluster-name", "c1", "--compliance-claim", "id.k8s.io"], environ={})
    assert caught.value.code == 2
    assert parse_settings(["--cluster-name", "c1", "--compliance-claim", "mig-ready"], environ={})


# ------------------------------------------------------------------ the agent


def claim_values(apis: FleetApis) -> list[str]:
    """Every value the ClusterClaim was written with, in order."""
    with apis.managed.cond:
        events = list(apis.managed.state.events)
    return [
        obj["spec"]["value"]
        for _, _, obj in events
        if obj.get("kind") == "ClusterClaim" and obj["metadata"]["name"] == CLAIM
    ]


@pytest.fixture
def claim_fleet(tmp_path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    settings = f"  complianceClaim:\n    pollSeconds: 2\n    stableSeconds: {STABLE}\n"
    template, cluster_roles = render(fleet(tmp_path, require=True, settings=settings))
    return processed(template), cluster_roles


def crd_errors(obj: dict[str, Any]) -> list[str]:
    from tests.rendered_checks import ocm_validators

    if not OCM_CRDS.is_dir():
        pytest.skip(f"the upstream OCM CRDs are not here ({OCM_CRDS})")
    validator = ocm_validators()[obj["apiVersion"], obj["kind"]]
    return sorted(e.message for e in validator.iter_errors(obj))


@pytest.mark.integration
def test_the_claim_follows_the_policies_with_upstreams_debounce(
    claim_fleet: tuple[dict[str, Any], list[dict[str, Any]]],
    prometheus: str,
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    template, cluster_roles = claim_fleet
    assert f"--compliance-stable-seconds={STABLE}" in agent_args(template)
    with sample_scorer() as scorer, fleet_apis(template, cluster_roles, tmp_path) as apis:
        serve_configuration(apis, template, [scorer_summary(template, prometheus, scorer)])
        agent = start_agent(apis, template, tmp_path / "agent", agent_process)

        def current() -> str | None:
            stored = apis.managed.get("clusterclaims", "", CLAIM) or {}
            found: str | None = stored.get("spec", {}).get("value")
            return found

        poll_until(lambda: current() == EMPTY, "the claim: empty (no Policy)", agent.log)
        for obj in (policy("mig-layout", "NonCompliant"), policy("other", "Compliant")):
            assert crd_errors(obj) == []
            apis.managed.put("policies", CLUSTER, obj)
        poll_until(lambda: current() == NONCOMPLIANT, "the claim: noncompliant", agent.log)

        def seen(state: str) -> bool:
            return value(agent, "dynamic_scoring_compliance_state", state=state) == 1

        # A compliant blip shorter than the stable time: the agent sees it (its gauge),
        # and the claim never says it.
        apis.managed.put("policies", CLUSTER, policy("mig-layout", "Compliant"))
        poll_until(lambda: seen(COMPLIANT), "the agent sees the compliant blip", agent.log)
        assert current() == NONCOMPLIANT
        apis.managed.put("policies", CLUSTER, policy("mig-layout", "NonCompliant"))
        poll_until(lambda: seen(NONCOMPLIANT), "the agent sees the blip end", agent.log)
        assert claim_values(apis) == [EMPTY, NONCOMPLIANT]
        # Compliant for good: seen, not written at once, written once stable.
        apis.managed.put("policies", CLUSTER, policy("mig-layout", "Compliant"))
        poll_until(lambda: seen(COMPLIANT), "the agent sees compliant", agent.log)
        assert current() == NONCOMPLIANT
        poll_until(lambda: current() == COMPLIANT, "the claim: compliant", agent.log)
        assert claim_values(apis) == [EMPTY, NONCOMPLIANT, COMPLIANT]
        stored = apis.managed.get("clusterclaims", "", CLAIM)
        assert stored is not None and crd_errors(stored) == []
        scored(agent, 1)
        assert value(agent, "dynamic_scoring_compliance_state", state=COMPLIANT) == 1
        assert value(agent, "dynamic_scoring_compliance_state", state=NONCOMPLIANT) == 0
        assert apis.denied() == []
        used = apis.managed.used
        assert {("list", "policies"), ("watch", "policies"), ("get", "clusterclaims")} <= used
        assert {("create", "clusterclaims"), ("update", "clusterclaims")} <= used


@pytest.mark.integration
def test_a_claim_the_rbac_refuses_is_counted_and_scoring_goes_on(
    claim_fleet: tuple[dict[str, Any], list[dict[str, Any]]],
    prometheus: str,
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    template, cluster_roles = claim_fleet
    manifests = template["spec"]["agentSpec"]["workload"]["manifests"]
    template["spec"]["agentSpec"]["workload"]["manifests"] = [
        m for m in manifests if m["kind"] != "ClusterRoleBinding"
    ]
    with sample_scorer() as scorer, fleet_apis(template, cluster_roles, tmp_path) as apis:
        serve_configuration(apis, template, [scorer_summary(template, prometheus, scorer)])
        agent = start_agent(apis, template, tmp_path / "agent", agent_process)
        labels = {"score_name": "", "stage": "compliance", "reason": "forbidden"}
        poll_until(
            lambda: value(agent, "dynamic_scoring_failures_total", **labels) >= 1,
            "the compliance failure counted",
            agent.log,
        )
        scored(agent, 2)
        assert any("clusterclaims" in denied for denied in apis.denied())
        assert "compliance_claim_failed" in agent.log()
        assert json.dumps(apis.managed.get("clusterclaims", "", CLAIM)) == "null"


def test_optimize_selects_the_claim_dsf_yaml_names(tmp_path: Path) -> None:
    from tests.placement.placement_repo import AT, PLAN

    settings = "  complianceClaim:\n    claimName: mig-ready\n"
    root = fleet(tmp_path, require=True, settings=settings)
    done = run_command(root, "optimize", "--scores", str(root / "snapshots"), "--at", AT)
    assert done.returncode == 0, done.stderr
    selectors = [
        document["spec"]["predicates"][0]["requiredClusterSelector"].get("claimSelector")
        for document in yaml.safe_load_all((root / PLAN).read_text(encoding="utf-8"))
        if document["kind"] == "Placement"
    ]
    wanted = {"matchExpressions": [{"key": "mig-ready", "operator": "In", "values": ["compliant"]}]}
    assert wanted in selectors
    template, _ = render(root)
    assert "--compliance-claim=mig-ready" in agent_args(template)
