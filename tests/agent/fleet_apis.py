"""A managed cluster's API and the hub's, emulated over TLS with bearer tokens and the
rendered RBAC enforced, and the scorer the agent runs against them.

Both APIs are :class:`FakeKube` instances serving HTTPS with a throwaway CA's certificate
for 127.0.0.1. The managed cluster knows the agent's service account token and authorizes
it against the Role and RoleBinding of the rendered AddOnTemplate; the hub knows the
agent's hub token and authorizes it against the rendered ClusterRole bound in the
cluster's namespace, as OCM's addon framework binds it (:mod:`tests.agent.kube_rbac`).
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from samples.sample_scorer import config as sample_config
from samples.sample_scorer import score as sample_score
from samples.service import RunningServer, ScoringApp
from tests.agent.agent_fakes import FakeKube
from tests.agent.conftest import METRIC, make_summary
from tests.agent.kube_rbac import (
    addon_agent,
    hub_rbac,
    managed_cluster_rbac,
    service_account,
)
from tests.agent.pki import make_pki

CLUSTER = "worker01"
SA_TOKEN = "sa-token-of-the-agent-0123456789"
HUB_TOKEN = "hub-token-of-the-agent-0123456789"
SCORER_TOKEN = "scorer-token-0123456789"
SCORE_NAME = "sample_my_score"


def manifests(template: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [m for m in template["spec"]["agentSpec"]["workload"]["manifests"] if m["kind"] == kind]


def deployment(template: dict[str, Any]) -> dict[str, Any]:
    (found,) = manifests(template, "Deployment")
    return found


def secret_names(template: dict[str, Any]) -> list[str]:
    """The Secrets the rendered Role lets the agent read."""
    return [
        name
        for role in manifests(template, "Role")
        for rule in role["rules"]
        if "secrets" in rule["resources"]
        for name in rule.get("resourceNames", [])
    ]


@dataclass
class FleetApis:
    """The two emulated APIs, their CA, and who the agent is to each."""

    managed: FakeKube
    hub: FakeKube
    ca_pem: str
    namespace: str  # the agent's namespace on the managed cluster
    service_account: str
    addon: str

    def denied(self) -> list[str]:
        return [*self.managed.denied, *self.hub.denied]


def _tls(pki: Path) -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    return context


@contextmanager
def fleet_apis(
    template: dict[str, Any], cluster_roles: list[dict[str, Any]], folder: Path
) -> Iterator[FleetApis]:
    """Both APIs for :data:`CLUSTER`, authorizing by the AddOnTemplate and the hub's
    ClusterRoles (``kube_rbac.rendered_cluster_roles``)."""
    pki = make_pki(folder / "pki", "IP:127.0.0.1")
    ca_pem = (pki / "ca.crt").read_text()
    pod = deployment(template)["spec"]["template"]["spec"]
    (namespace,) = [m["metadata"]["name"] for m in manifests(template, "Namespace")]
    account = pod["serviceAccountName"]
    addon = template["spec"]["addonName"]
    managed = FakeKube(
        tls=_tls(pki),
        ca_pem=ca_pem,
        tokens={SA_TOKEN: service_account(namespace, account)},
        rbac=managed_cluster_rbac(template),
    ).start()
    hub = FakeKube(
        tls=_tls(pki),
        ca_pem=ca_pem,
        tokens={HUB_TOKEN: addon_agent(CLUSTER, addon)},
        rbac=hub_rbac(template, cluster_roles, CLUSTER),
    ).start()
    try:
        yield FleetApis(managed, hub, ca_pem, namespace, account, addon)
    finally:
        managed.stop()
        hub.stop()


@contextmanager
def sample_scorer() -> Iterator[str]:
    """The reference sample scorer, requiring :data:`SCORER_TOKEN`; yields its base URL."""
    app = ScoringApp(
        documents={"/config": sample_config()},
        scorers={"/scoring": sample_score},
        token=SCORER_TOKEN,
        # a test peer, not a pod under its memory limit: the image test sends it the
        # agent's 20 MB answer, past the 6 MiB a sample's Deployment accepts
        max_body_bytes=64 * 1024 * 1024,
    )
    with RunningServer(app) as server:
        yield f"http://{server.address}"


def serve_configuration(
    apis: FleetApis, template: dict[str, Any], summaries: list[dict[str, Any]]
) -> None:
    """Put the agent's ConfigMap and the Secret its scorers name on the managed cluster."""
    apis.managed.set_configmap(
        apis.namespace, "dynamic-scoring-config", {"summaries": json.dumps(summaries)}
    )
    for name in secret_names(template):
        apis.managed.set_secret(apis.namespace, name, {"token": SCORER_TOKEN})


def scorer_summary(
    template: dict[str, Any], prometheus: str, scorer: str, **changes: Any
) -> dict[str, Any]:
    """A summary scoring the test series of real Prometheus with the sample scorer, whose
    token is in the first Secret the rendered Role names."""
    return make_summary(
        sourceEndpoint=f"{prometheus}/api/v1/query_range",
        sourceQuery=METRIC,
        scoringEndpoint=f"{scorer}/scoring",
        scoringEndpointAuthName=secret_names(template)[0],
        scoringEndpointAuthKey="token",
        **{"scoreName": SCORE_NAME, **changes},
    )


def poll_until(
    predicate: Callable[[], Any],
    what: str,
    explain: Callable[[], str] = lambda: "",
    timeout: float = 120.0,
) -> Any:
    """``predicate()``'s first true value; fails the test with ``explain()`` (the agent's
    log) after ``timeout`` seconds (generous: a loaded 2-core CI machine)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.2)
    pytest.fail(f"timed out waiting for {what}\n{explain()[-4000:]}")
