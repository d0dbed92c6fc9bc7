"""The rendered RBAC, enforced: the agent needs every verb it is granted and no other.

``dsf-agent`` runs as a process against emulated managed-cluster and hub APIs over TLS
that authorize each request as Kubernetes does (:mod:`tests.agent.kube_rbac`): the
managed cluster by the Role of the committed ``rendered/`` AddOnTemplate, the hub by the
rendered ClusterRole bound in the cluster's namespace. A whole run is denied nothing and
uses exactly what is granted; with any one verb taken away, the agent's failure is
visible and named in a counter.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.agent_probes import value
from tests.agent.conftest import AgentProcess, agent_env
from tests.agent.fleet_apis import (
    CLUSTER,
    HUB_TOKEN,
    SA_TOKEN,
    SCORE_NAME,
    FleetApis,
    fleet_apis,
    poll_until,
    sample_scorer,
    scorer_summary,
    serve_configuration,
)
from tests.agent.kube_rbac import addon_template, rendered_cluster_roles
from tests.fleet_repo import EXAMPLE_FLEET

pytestmark = pytest.mark.integration

RENDERED = EXAMPLE_FLEET / "rendered"
OBJECT = SCORE_NAME.replace("_", "-")  # the AddOnPlacementScore's name


def granted(template: dict[str, Any], cluster_roles: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """Every (verb, resource) the rendered Role and ClusterRole grant."""
    roles = [
        m for m in template["spec"]["agentSpec"]["workload"]["manifests"] if m["kind"] == "Role"
    ]
    return {
        (verb, resource)
        for role in [*roles, *cluster_roles]
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }


def without(
    template: dict[str, Any], cluster_roles: list[dict[str, Any]], verb: str, resource: str
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Copies of the Role and ClusterRole with ``verb`` on ``resource`` taken away."""
    template, cluster_roles = copy.deepcopy(template), copy.deepcopy(cluster_roles)
    roles = [
        m for m in template["spec"]["agentSpec"]["workload"]["manifests"] if m["kind"] == "Role"
    ]
    for role in [*roles, *cluster_roles]:
        for rule in role["rules"]:
            if rule["resources"] == [resource] and verb in rule["verbs"]:
                rule["verbs"].remove(verb)
                return template, cluster_roles
    raise AssertionError(f"no rule grants {verb} on {resource} alone")


def start_agent(
    apis: FleetApis, folder: Path, agent_process: Callable[..., AgentProcess]
) -> AgentProcess:
    """The agent with the managed cluster's kubeconfig (``KUBECONFIG``: the service
    account's token) and the hub's (its token in a file beside it, as OCM writes it)."""
    folder.mkdir(exist_ok=True)
    (folder / "managed.kubeconfig").write_text(apis.managed.kubeconfig(SA_TOKEN))
    (folder / "token").write_text(HUB_TOKEN)
    (folder / "kubeconfig").write_text(apis.hub.kubeconfig(token_file="token"))
    env = agent_env(KUBECONFIG=str(folder / "managed.kubeconfig"), DSF_NAMESPACE=apis.namespace)
    return agent_process(
        "--cluster-name", CLUSTER, "--hub-kubeconfig", str(folder / "kubeconfig"), env=env
    )


@pytest.fixture(scope="module")
def scorer() -> Iterator[str]:
    with sample_scorer() as url:
        yield url


@pytest.fixture(scope="module")
def rendered() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    return addon_template(RENDERED), rendered_cluster_roles(RENDERED)


def test_the_agent_uses_exactly_what_the_rendered_rbac_grants(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
    prometheus: str,
    scorer: str,
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    template, cluster_roles = rendered
    with fleet_apis(template, cluster_roles, tmp_path) as apis:
        serve_configuration(apis, template, [scorer_summary(template, prometheus, scorer)])
        agent = start_agent(apis, tmp_path / "agent", agent_process)
        poll_until(
            lambda: (
                value(
                    agent, "dynamic_scoring_requests_total", score_name=SCORE_NAME, status="success"
                )
                >= 2
            ),
            "two successful cycles",
            agent.log,
        )
        stored = apis.hub.get("addonplacementscores", CLUSTER, OBJECT)
        assert stored is not None and stored["status"]["scores"]
        assert apis.denied() == []
        # every granted (verb, resource) was used, and nothing else was asked for
        assert apis.managed.used | apis.hub.used == granted(template, cluster_roles)


# (verb, resource) taken away -> the counter that names the failure, with its labels
NEEDED = {
    ("list", "configmaps"): ("dynamic_scoring_config_api_errors_total", {"request": "list", "reason": "forbidden"}),
    ("watch", "configmaps"): ("dynamic_scoring_config_api_errors_total", {"request": "watch", "reason": "forbidden"}),
    ("get", "secrets"): ("dynamic_scoring_failures_total", {"score_name": SCORE_NAME, "stage": "secret", "reason": "forbidden"}),
    ("get", "addonplacementscores"): ("dynamic_scoring_failures_total", {"score_name": SCORE_NAME, "stage": "publish", "reason": "forbidden"}),
    ("create", "addonplacementscores"): ("dynamic_scoring_failures_total", {"score_name": SCORE_NAME, "stage": "publish", "reason": "forbidden"}),
    ("update", "addonplacementscores/status"): ("dynamic_scoring_failures_total", {"score_name": SCORE_NAME, "stage": "publish", "reason": "forbidden"}),
}  # fmt: skip


def test_every_granted_verb_is_listed_here(
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
) -> None:
    assert granted(*rendered) == set(NEEDED)


@pytest.mark.parametrize(("verb", "resource"), sorted(NEEDED))
def test_each_granted_verb_is_needed(
    verb: str,
    resource: str,
    rendered: tuple[dict[str, Any], list[dict[str, Any]]],
    prometheus: str,
    scorer: str,
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    template, cluster_roles = without(*rendered, verb, resource)
    counter, labels = NEEDED[(verb, resource)]
    with fleet_apis(template, cluster_roles, tmp_path) as apis:
        serve_configuration(apis, rendered[0], [scorer_summary(template, prometheus, scorer)])
        agent = start_agent(apis, tmp_path / "agent", agent_process)
        poll_until(lambda: value(agent, counter, **labels) >= 1, f"{counter}{labels}", agent.log)
        assert apis.denied()
        if resource == "secrets":  # the hub is told, in the object's condition
            # the object is created before its status is written: wait for the status
            conditions = poll_until(
                lambda: (
                    (apis.hub.get("addonplacementscores", CLUSTER, OBJECT) or {})
                    .get("status", {})
                    .get("conditions")
                ),
                "the object's status conditions",
                agent.log,
            )
            (condition,) = conditions
            assert (condition["status"], condition["reason"]) == ("False", "SecretMissing")
