"""The emulated hub API with OCM's cluster-scoped ManagedClusters, for ``sync --clusters``
and the commands that read them."""

from __future__ import annotations

from typing import Any

from tests.agent.agent_fakes import FakeKube, Reply, Request

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
                "annotations": extra.pop("annotations", {}),
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
