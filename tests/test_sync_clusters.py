"""``dsf-compile sync --clusters``: the hub's ManagedClusters, read through the real
``kubernetes`` client from the emulated API, written to ``clusters/discovered.yaml``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.cli import run
from dsf_compile.pipeline import plan_fleet
from dsf_compile.render.manifests import render_manifests
from tests.agent.agent_fakes import FakeKube, Reply, Request
from tests.fleet_repo import copy_fleet

PREFIX = "/apis/cluster.open-cluster-management.io/v1/managedclusters"


class HubKube(FakeKube):
    """The emulated API, plus the cluster-scoped ManagedCluster list of a hub."""

    def _handle(self, request: Request) -> Reply:
        if request.path.rstrip("/") == PREFIX and request.method == "GET":
            with self.cond:
                items = [
                    obj
                    for (kind, _, _), obj in sorted(self.state.objects.items())
                    if kind == "managedclusters"
                ]
                return Reply.json(
                    {
                        "apiVersion": "cluster.open-cluster-management.io/v1",
                        "kind": "ManagedClusterList",
                        "metadata": {"resourceVersion": str(self.state.version)},
                        "items": items,
                    }
                )
        if request.path.startswith(PREFIX) and request.method != "GET":
            raise AssertionError(f"sync --clusters must only read, it sent {request.method}")
        return super()._handle(request)

    def add_cluster(self, name: str, **extra: Any) -> None:
        """A ManagedCluster as the hub stores it, server-set fields and all."""
        obj = {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": name,
                "creationTimestamp": "2026-01-02T03:04:05Z",
                "generation": 3,
                "finalizers": ["cluster.open-cluster-management.io/api-resource-cleanup"],
                "managedFields": [{"manager": "registration", "operation": "Update"}],
                "labels": {
                    "cluster.open-cluster-management.io/clusterset": "default",
                    f"feature.open-cluster-management.io/addon-{name}": "available",
                    "name": name,
                    **extra.pop("labels", {}),
                },
            },
            "spec": {
                "hubAcceptsClient": True,
                "leaseDurationSeconds": 60,
                "managedClusterClientConfigs": [
                    {"url": f"https://{name}.example:6443", "caBundle": "LS0tLS1CRUdJTi=="}
                ],
                **extra.pop("spec", {}),
            },
            "status": {
                "conditions": [
                    {
                        "type": "ManagedClusterConditionAvailable",
                        "status": "True",
                        "lastTransitionTime": "2026-01-02T03:05:00Z",
                        "reason": "ManagedClusterAvailable",
                        "message": "Managed cluster is available",
                    }
                ],
                "version": {"kubernetes": "v1.30.2"},
                **extra.pop("status", {}),
            },
        }
        assert not extra
        self.put("managedclusters", "", obj)


@pytest.fixture
def hub() -> Iterator[HubKube]:
    fake = HubKube()
    fake.start()
    yield fake
    fake.stop()


def sync_clusters(root: Path, kubeconfig: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--root", str(root), "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig)], out, err
    )
    return code, err.getvalue()


@pytest.fixture
def fleet(tmp_path: Path, hub: HubKube) -> tuple[Path, Path]:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    # The hub now lists the clusters: the discovered file replaces the hand-written one.
    (root / "clusters" / "inventory.yaml").unlink()
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(hub.kubeconfig("HUB-TOKEN"), encoding="utf-8")
    hub.add_cluster("worker02", labels={"region": "us-east", "gpu": "false"})
    hub.add_cluster(
        "worker01",
        labels={"region": "eu-west", "gpu": "true"},
        spec={
            "taints": [
                {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
            ]
        },
        status={
            "clusterClaims": [
                {"name": "platform.open-cluster-management.io", "value": "AWS"},
                {"name": "id.k8s.io", "value": "c0ffee"},
            ],
            "allocatable": {"memory": "64Gi", "cpu": "16"},
            "capacity": {"cpu": "16", "memory": "64Gi"},
        },
    )
    hub.add_cluster("edge01", labels={"region": "eu-west", "gpu": "false"})
    return root, kubeconfig


def test_discovered_clusters_are_written_clean_and_sorted(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    root, kubeconfig = fleet
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0, err
    assert "3 cluster(s) on the hub (joined: edge01, worker01, worker02)" in err
    text = (root / "clusters" / "discovered.yaml").read_text(encoding="utf-8")
    documents = [d for d in yaml.safe_load_all(text) if d]
    assert [d["metadata"]["name"] for d in documents] == ["edge01", "worker01", "worker02"]
    worker01 = documents[1]
    assert worker01 == {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": "worker01",
            "labels": {
                "cluster.open-cluster-management.io/clusterset": "default",
                "gpu": "true",
                "name": "worker01",
                "region": "eu-west",
            },
        },
        "spec": {
            "hubAcceptsClient": True,
            "taints": [{"key": "maintenance", "effect": "NoSelect"}],
        },
        "status": {
            "clusterClaims": [
                {"name": "id.k8s.io", "value": "c0ffee"},
                {"name": "platform.open-cluster-management.io", "value": "AWS"},
            ],
            "allocatable": {"cpu": "16", "memory": "64Gi"},
            "capacity": {"cpu": "16", "memory": "64Gi"},
        },
    }
    for noise in ("uid", "resourceVersion", "managedFields", "conditions", "caBundle", "addon-"):
        assert noise not in text
    # The inventory loader reads it, and the fleet renders from it as it did before.
    files = render_manifests(plan_fleet(root))
    assert {p.split("/")[1] for p in files if p.startswith("clusters/")} == {
        "edge01",
        "worker01",
        "worker02",
        "kustomization.yaml",
    }
    # Read-only: the only requests were GETs (HubKube refuses anything else).
    assert {r.method for r in hub.server.taken()} == {"GET"}
    assert {r.headers["authorization"] for r in hub.server.taken()} == {"Bearer HUB-TOKEN"}


def test_a_joining_cluster_changes_the_file_and_nothing_else_does(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    root, kubeconfig = fleet
    assert sync_clusters(root, kubeconfig)[0] == 0
    path = root / "clusters" / "discovered.yaml"
    first = path.read_bytes()
    # Server-side churn (a new resourceVersion, conditions, addon labels): same bytes.
    hub.add_cluster("edge01", labels={"region": "eu-west", "gpu": "false"})
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0 and "unchanged" in err
    assert path.read_bytes() == first
    # A new cluster joins: the file changes, and says so.
    hub.add_cluster("worker03", labels={"region": "us-east", "gpu": "false"})
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0
    assert "4 cluster(s) on the hub (joined: worker03)" in err and "updated" in err
    assert "name: worker03" in path.read_text(encoding="utf-8")
    plan = plan_fleet(root)
    assert "worker03" in {c.name for c in plan.clusters}
    # It leaves again.
    hub.delete("managedclusters", "", "worker03")
    code, err = sync_clusters(root, kubeconfig)
    assert "(left: worker03)" in err
    assert path.read_bytes() == first


def test_an_unreachable_hub_is_a_clean_error(tmp_path: Path, fleet: tuple[Path, Path]) -> None:
    root, _ = fleet
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("not: a kubeconfig\n", encoding="utf-8")
    code, err = sync_clusters(root, broken)
    assert code == 2 and "error: hub: --hub-kubeconfig" in err and "Traceback" not in err
    assert not (root / "clusters" / "discovered.yaml").exists()
    out, err_stream = io.StringIO(), io.StringIO()
    assert run(["--root", str(root), "sync", "--clusters"], out, err_stream) == 2
    assert "needs --hub-kubeconfig" in err_stream.getvalue()
