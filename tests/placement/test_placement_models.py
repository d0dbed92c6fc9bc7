"""Models of placements/: upstream documents accepted as written, CRD rules enforced."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from pydantic import BaseModel, ValidationError

from dsf_compile.inputs.inventory import ManagedClusterSpec, ManagedClusterStatus
from dsf_compile.inputs.placements import (
    AddOnPlacementScore,
    AddOnPlacementScoreList,
    ManagedClusterSetBinding,
    ManifestWorkReplicaSet,
    Placement,
    PlacementBinding,
    PlacementDecision,
    PlacementDecisionList,
    Policy,
)

# As OCM's documentation writes them (open-cluster-management.io, "Placement").
UPSTREAM_PLACEMENTS = """
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement1
  namespace: ns1
spec:
  numberOfClusters: 3
  clusterSets:
    - prod
  predicates:
    - requiredClusterSelector:
        labelSelector:
          matchLabels:
            purpose: test
        claimSelector:
          matchExpressions:
            - key: platform.open-cluster-management.io
              operator: In
              values:
                - aws
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement2
  namespace: ns1
spec:
  numberOfClusters: 1
  prioritizerPolicy:
    mode: Exact
    configurations:
      - scoreCoordinate:
          builtIn: ResourceAllocatableCPU
        weight: 2
      - scoreCoordinate:
          builtIn: ResourceAllocatableMemory
        weight: 2
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: default
            scoreName: cpuratio
        weight: 1
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: placement3
  namespace: ns1
spec:
  tolerations:
    - key: gpu
      value: "true"
      operator: Equal
    - key: cluster.open-cluster-management.io/unreachable
      operator: Exists
      tolerationSeconds: 300
  decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 25%
      decisionGroups:
      - groupName: prod-canary-west
        groupClusterSelector:
          labelSelector:
            matchExpressions:
              - key: prod-canary-west
                operator: Exists
  spreadPolicy:
    spreadConstraints:
      - topologyKey: zone
        topologyKeyType: Label
        maxSkew: 1
        whenUnsatisfiable: ScheduleAnyway
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: app01-placement
  namespace: default
spec:
  predicates:
    - requiredClusterSelector:
        labelSelector:
          matchLabels:
            cluster-name: worker01
        claimSelector:
          matchExpressions:
            - key: policy-watcher-claim
              operator: In
              values: [compliant]
  tolerations:
    - key: cluster.open-cluster-management.io/unreachable
      operator: Exists
    - key: cluster.open-cluster-management.io/unavailable
      operator: Exists
"""


def upstream() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all(UPSTREAM_PLACEMENTS))


def with_spec(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1beta1",
        "kind": "Placement",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": spec,
    }


def errors(model: type[BaseModel], data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(data)
    return [(".".join(map(str, e["loc"])), e["msg"]) for e in caught.value.errors()]


@pytest.mark.parametrize("index", range(4))
def test_upstream_placements_are_accepted_as_written(index: int) -> None:
    document = upstream()[index]
    placement = Placement.model_validate(document)
    assert placement.metadata.name == document["metadata"]["name"]


def test_upstream_placement_reads_its_coordinates() -> None:
    placement = Placement.model_validate(upstream()[1])
    coordinates = [c.scoreCoordinate.name for c in placement.spec.prioritizerPolicy.configurations]
    assert coordinates == [
        "ResourceAllocatableCPU",
        "ResourceAllocatableMemory",
        "AddOn/default/cpuratio",
    ]
    assert placement.spec.prioritizerPolicy.configurations[0].scoreCoordinate.type == "BuiltIn"


def test_unknown_field_is_an_error() -> None:
    data = with_spec(numberOfCluster=3)
    assert errors(Placement, data) == [("spec.numberOfCluster", "Extra inputs are not permitted")]


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ({"prioritizerPolicy": {"mode": "Exakt"}}, "spec.prioritizerPolicy.mode"),
        (
            {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"type": "Addon"}}]}},
            "spec.prioritizerPolicy.configurations.0.scoreCoordinate.type",
        ),
        ({"tolerations": [{"key": "a", "effect": "NoSchedule"}]}, "spec.tolerations.0.effect"),
        ({"tolerations": [{"key": "a", "operator": "In"}]}, "spec.tolerations.0.operator"),
        ({"sortBy": "Name"}, "spec.sortBy"),
    ],
)
def test_bad_enumerations_are_errors(spec: dict[str, Any], where: str) -> None:
    assert [loc for loc, _ in errors(Placement, with_spec(**spec))] == [where]


@pytest.mark.parametrize("weight", [11, -11])
def test_weight_out_of_range_is_an_error(weight: int) -> None:
    data = with_spec(
        prioritizerPolicy={
            "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": weight}]
        }
    )
    ((loc, message),) = errors(Placement, data)
    assert loc == "spec.prioritizerPolicy.configurations.0.weight"
    assert "10" in message


@pytest.mark.parametrize("weight", [10, -10, 0])
def test_weight_in_range_is_fine(weight: int) -> None:
    data = with_spec(
        prioritizerPolicy={
            "configurations": [{"scoreCoordinate": {"builtIn": "Steady"}, "weight": weight}]
        }
    )
    assert Placement.model_validate(data).spec.prioritizerPolicy.configurations[0].weight == weight


def test_namespace_is_required() -> None:
    data = with_spec()
    del data["metadata"]["namespace"]
    assert errors(Placement, data) == [("metadata.namespace", "Field required")]


@pytest.mark.parametrize(
    ("coordinate", "message"),
    [
        ({"type": "AddOn"}, "type AddOn needs addOn"),
        ({"type": "BuiltIn"}, "type BuiltIn needs builtIn"),
        ({"type": "AddOn", "addOn": {"resourceName": "r"}}, "Field required"),
    ],
)
def test_coordinate_needs_its_source(coordinate: dict[str, Any], message: str) -> None:
    data = with_spec(prioritizerPolicy={"configurations": [{"scoreCoordinate": coordinate}]})
    assert any(message in m for _, m in errors(Placement, data))


@pytest.mark.parametrize(
    ("toleration", "message"),
    [
        ({"key": "bad key"}, "must be a qualified key"),
    ],
)
def test_tolerations_the_crd_refuses_are_errors(toleration: dict[str, Any], message: str) -> None:
    data = with_spec(tolerations=[toleration])
    assert any(message in m for _, m in errors(Placement, data))


def test_claim_selector_takes_no_match_labels() -> None:
    data = with_spec(
        predicates=[{"requiredClusterSelector": {"claimSelector": {"matchLabels": {"a": "b"}}}}]
    )
    assert errors(Placement, data)[0][0] == (
        "spec.predicates.0.requiredClusterSelector.claimSelector.matchLabels"
    )


def test_binding_follows_its_crd() -> None:
    data = {
        "apiVersion": "cluster.open-cluster-management.io/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "global", "namespace": "default"},
        "spec": {"clusterSet": "global"},
    }
    assert ManagedClusterSetBinding.model_validate(data).spec.clusterSet == "global"
    data["spec"] = {"clusterSet": "global", "extra": 1}
    assert errors(ManagedClusterSetBinding, data) == [
        ("spec.extra", "Extra inputs are not permitted")
    ]


UPSTREAM_APPLIED = """
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata:
  name: mwrs-app01
  namespace: default
  labels:
    app: "app01"
    resource-request-kind: "gpu"
    resource-request-amount: "2"
spec:
  placementRefs:
    - name: app01-placement
      rolloutStrategy:
        type: All
  manifestWorkTemplate:
    workload:
      manifests:
        - apiVersion: v1
          kind: ConfigMap
          metadata: {name: app01, namespace: default}
---
apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: policy-disable-mig-worker01
  namespace: default
  labels:
    resource-supply-kind: "gpu"
    resource-supply-amount: "1"
    resource-supply-device: "all"
spec:
  disabled: false
  remediationAction: enforce
  policy-templates: []
---
apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata:
  name: binding-worker01
  namespace: default
placementRef:
  name: placement-worker01
  kind: Placement
  apiGroup: cluster.open-cluster-management.io
subjects:
  - name: policy-enable-mig-3g-worker01
    kind: Policy
    apiGroup: policy.open-cluster-management.io
"""


def test_objects_applied_as_written_keep_every_field() -> None:
    mwrs_doc, policy_doc, binding_doc = yaml.safe_load_all(UPSTREAM_APPLIED)
    mwrs = ManifestWorkReplicaSet.model_validate(mwrs_doc)
    assert mwrs.spec.placementRefs[0].name == "app01-placement"
    assert mwrs.metadata.labels == {
        "app": "app01",
        "resource-request-kind": "gpu",
        "resource-request-amount": "2",
    }
    assert mwrs.model_dump(mode="json", exclude_none=True) == mwrs_doc
    policy = Policy.model_validate(policy_doc)
    assert policy.model_dump(mode="json", exclude_none=True) == policy_doc
    binding = PlacementBinding.model_validate(binding_doc)
    assert binding.placementRef.name == "placement-worker01"
    assert [s.name for s in binding.subjects] == ["policy-enable-mig-3g-worker01"]


def test_mwrs_without_placement_refs_is_an_error() -> None:
    mwrs_doc = next(yaml.safe_load_all(UPSTREAM_APPLIED))
    mwrs_doc["spec"]["placementRefs"] = []
    assert errors(ManifestWorkReplicaSet, mwrs_doc)[0][0] == "spec.placementRefs"


KUBECTL_SCORES = """
apiVersion: v1
items:
- apiVersion: cluster.open-cluster-management.io/v1alpha1
  kind: AddOnPlacementScore
  metadata:
    creationTimestamp: "2026-11-21T10:00:00Z"
    name: sample-my-score
    namespace: worker01
    resourceVersion: "1234"
    uid: 5f0c8a8e-0000-0000-0000-000000000000
  status:
    conditions: []
    scores:
    - name: app01;gpu
      value: 92
    validUntil: "2026-11-22T10:00:00Z"
kind: List
metadata:
  resourceVersion: ""
"""


def test_kubectl_list_of_scores_is_read() -> None:
    scores = AddOnPlacementScoreList.model_validate(yaml.safe_load(KUBECTL_SCORES))
    (score,) = scores.items
    assert score.metadata.namespace == "worker01"
    assert score.status.scores[0].value == 92
    assert score.status.validUntil == datetime(2026, 11, 22, 10, tzinfo=UTC)


def test_score_value_outside_the_crd_range_is_an_error() -> None:
    data = yaml.safe_load(KUBECTL_SCORES)["items"][0]
    data["status"]["scores"][0]["value"] = 101
    assert errors(AddOnPlacementScore, data)[0][0] == "status.scores.0.value"


def test_decisions_list_is_read_and_names_its_placement() -> None:
    data = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "PlacementDecision",
                "metadata": {
                    "name": "p-decision-1",
                    "namespace": "default",
                    "labels": {"cluster.open-cluster-management.io/placement": "p"},
                    "ownerReferences": [{"kind": "Placement", "name": "p"}],
                },
                "status": {"decisions": [{"clusterName": "worker01", "reason": ""}]},
            }
        ],
    }
    (decision,) = PlacementDecisionList.model_validate(data).items
    assert isinstance(decision, PlacementDecision)
    assert decision.placement_name == "p"
    assert [d.clusterName for d in decision.status.decisions] == ["worker01"]


def test_inventory_additions_read_what_kubectl_prints() -> None:
    spec = ManagedClusterSpec.model_validate(
        {
            "hubAcceptsClient": True,
            "taints": [
                {
                    "key": "cluster.open-cluster-management.io/unreachable",
                    "effect": "NoSelect",
                    "timeAdded": datetime(2026, 11, 21, tzinfo=UTC),
                }
            ],
        }
    )
    assert spec.taints[0].value == ""
    status = ManagedClusterStatus.model_validate(
        {
            "allocatable": {"cpu": "7500m", "memory": "16213932Ki"},
            "capacity": {"cpu": 8, "memory": "16Gi"},
            "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}],
            "version": {"kubernetes": "v1.31.0"},
        }
    )
    assert status.capacity == {"cpu": "8", "memory": "16Gi"}


@pytest.mark.parametrize(
    ("data", "where", "message"),
    [
        ({"allocatable": {"cpu": "lots"}}, "allocatable.cpu", "'lots' is not a quantity"),
        ({"capacity": {"memory": "2 Gi"}}, "capacity.memory", "is not a quantity"),
    ],
)
def test_bad_quantities_are_errors(data: dict[str, Any], where: str, message: str) -> None:
    ((loc, found),) = errors(ManagedClusterStatus, data)
    assert loc == where
    assert message in found


@pytest.mark.parametrize(
    ("taint", "message"),
    [
        ({"key": "k", "effect": "NoSchedule"}, "Input should be"),
        ({"key": "k", "effect": "NoSelect", "timeAdded": "yesterday"}, "RFC 3339"),
        ({"key": "k", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00"}, "time zone"),
    ],
)
def test_bad_taints_are_errors(taint: dict[str, Any], message: str) -> None:
    assert any(message in m for _, m in errors(ManagedClusterSpec, {"taints": [taint]}))
