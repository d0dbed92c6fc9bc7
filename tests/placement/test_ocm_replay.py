"""OCM's scheduler replayed on a fleet of 120 clusters: CEL, decision groups, status, margins.

Every expectation is derived from OCM's source (open-cluster-management-io/ocm
``pkg/placement``, sdk-go ``pkg/cel``), not from running dsf: each test says which OCM
function it follows, and the expected values are computed here from the fleet's
definition with that function's rule.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import pytest

from dsf_compile.inputs.placements import (
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
)
from dsf_compile.placement.decisions import group_length
from dsf_compile.placement.explain import explain_document
from dsf_compile.placement.scheduler import (
    Cluster,
    PlacementResult,
    ScoreIndex,
    cel_view,
    schedule,
)
from dsf_compile.placement.verify import hub_cluster

AT = datetime(2026, 11, 22, tzinfo=UTC)
N = 120
GROUP = "cluster.open-cluster-management.io"
DISABLE = f"{GROUP}/experimental-scheduling-disable"
DELETING = "c119"  # metadata.deletionTimestamp set


def name(i: int) -> str:
    return f"c{i:03d}"


def tier(i: int) -> str:
    return "gold" if i % 3 == 0 else "bronze"


def region(i: int) -> str:
    return "eu" if i % 2 == 0 else "us"


def minor(i: int) -> int:
    return 27 + i % 4  # v1.27.0 … v1.30.0


def memory_gi(i: int) -> int:
    return 16 * (1 + i % 5)  # 16Gi … 80Gi


def gpu(i: int) -> int | None:
    """The cluster's gpu item of AddOnPlacementScore gpu-score (None: no such object)."""
    return None if i % 4 == 3 else (i * 7) % 101


def cluster_document(i: int) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name(i), "labels": {"tier": tier(i)}}
    if name(i) == DELETING:
        metadata["deletionTimestamp"] = "2026-11-21T00:00:00Z"
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ManagedCluster",
        "metadata": metadata,
        "spec": {"hubAcceptsClient": True},
        "status": {
            "version": {"kubernetes": f"v1.{minor(i)}.0"},
            "allocatable": {"cpu": "8", "memory": f"{memory_gi(i)}Gi"},
            "capacity": {"cpu": "8", "memory": f"{memory_gi(i)}Gi"},
            "clusterClaims": [{"name": "region.open-cluster-management.io", "value": region(i)}],
        },
    }


def fleet() -> list[Cluster]:
    # what the hub serves and what the inventory holds are read the same way
    return [hub_cluster(cluster_document(i)) for i in range(N)]


def scores() -> ScoreIndex:
    objects = [
        AddOnPlacementScore.model_validate(
            {
                "apiVersion": f"{GROUP}/v1alpha1",
                "kind": "AddOnPlacementScore",
                "metadata": {"name": "gpu-score", "namespace": name(i)},
                "status": {"scores": [{"name": "gpu", "value": value}]},
            }
        )
        for i in range(N)
        if (value := gpu(i)) is not None
    ]
    return ScoreIndex.of(objects)


BINDING = ManagedClusterSetBinding.model_validate(
    {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "global", "namespace": "default"},
        "spec": {"clusterSet": "global"},
    }
)


def placement(
    placement_name: str, spec: dict[str, Any], annotations: dict[str, str] | None = None
) -> Placement:
    metadata: dict[str, Any] = {"name": placement_name, "namespace": "default"}
    if annotations:
        metadata["annotations"] = annotations
    return Placement.model_validate(
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "Placement",
            "metadata": metadata,
            "spec": spec,
        }
    )


def cel(*expressions: str, **spec: Any) -> dict[str, Any]:
    return {
        "predicates": [
            {"requiredClusterSelector": {"celSelector": {"celExpressions": list(expressions)}}}
        ],
        **spec,
    }


def run(p: Placement, decisions: tuple[PlacementDecision, ...] = ()) -> PlacementResult:
    return schedule(p, fleet(), [BINDING], scores(), decisions, AT)


def live() -> list[int]:
    """GetAvailableClusters: every cluster of the bound set "global" but the one being deleted."""
    return [i for i in range(N) if name(i) != DELETING]


def default_ranking(selected: list[int]) -> list[str]:
    # Additive mode: Balance 1 and Steady 1; with no decisions anywhere Balance is 100 and
    # Steady 0 for every cluster, so totals tie and Schedule's sort falls back to the name
    return sorted(name(i) for i in selected)


# ---------------------------------------------------------------- CEL (step 2)

CEL_CASES = [
    # labels: managedCluster is the unstructured ManagedCluster (cel.go: Validate)
    ("labels", "managedCluster.metadata.labels['tier'] == 'gold'", lambda i: tier(i) == "gold"),
    # claims are status.clusterClaims, a list of {name, value}
    (
        "claims",
        "managedCluster.status.clusterClaims.exists(c, "
        "c.name == 'region.open-cluster-management.io' && c.value == 'eu')",
        lambda i: region(i) == "eu",
    ),
    # sdk-go clusterScores: the object's items; a missing object is an error, so the
    # cluster fails (isResultValid needs a true bool)
    (
        "scores",
        "managedCluster.scores('gpu-score').exists(s, s.name == 'gpu' && s.value > 50)",
        lambda i: (v := gpu(i)) is not None and v > 50,
    ),
    # CEL's || absorbs the missing object's error when the other side is true
    (
        "scores-or",
        "managedCluster.scores('gpu-score').exists(s, s.value > 50) || "
        "managedCluster.metadata.labels['tier'] == 'gold'",
        lambda i: ((v := gpu(i)) is not None and v > 50) or tier(i) == "gold",
    ),
    # k8s SemverLib: semver() takes no leading v; isGreaterThan compares
    (
        "versions",
        "semver(managedCluster.status.version.kubernetes.substring(1))"
        ".isGreaterThan(semver('1.28.0'))",
        lambda i: minor(i) > 28,
    ),
    # k8s Quantity: compareTo on exact values (48Gi is 49152Mi)
    (
        "quantities",
        "quantity(managedCluster.status.allocatable.memory).compareTo(quantity('49152Mi')) >= 0",
        lambda i: memory_gi(i) >= 48,
    ),
    # every expression of a celSelector must hold
    (
        "two-expressions",
        None,
        lambda i: tier(i) == "gold" and minor(i) == 30,
    ),
    # a non-boolean result removes every cluster, it does not misconfigure (isResultValid)
    ("not-boolean", "managedCluster.metadata.name", lambda i: False),
]


@pytest.mark.parametrize(("case", "expression", "keeps"), CEL_CASES, ids=[c[0] for c in CEL_CASES])
def test_cel_selects_as_ocm_does(case: str, expression: str | None, keeps: Any) -> None:
    expressions = (
        [expression]
        if expression
        else [
            "managedCluster.metadata.labels['tier'] == 'gold'",
            "managedCluster.status.version.kubernetes.startsWith('v1.30')",
        ]
    )
    result = run(placement(case, cel(*expressions)))
    expected = default_ranking([i for i in live() if keeps(i)])
    assert list(result.decisions) == expected
    assert result.filtered_predicates == tuple(sorted(name(i) for i in live() if not keeps(i)))
    assert result.filtered_cluster_sets == (DELETING,)
    assert result.conditions[0].reason == "Succeedconfigured"


def test_a_cel_expression_that_does_not_compile_misconfigures_the_placement() -> None:
    # predicate.go Filter: a compile error returns status Misconfigured from plugin
    # "Predicate"; newMisconfiguredCondition writes "<plugin>:<message>"; the controller
    # still binds the (empty) decisions: one empty "<name>-decision-1" (generateDecision)
    result = run(placement("broken", cel("managedCluster.metadata.labels['tier'] ==")))
    misconfigured, satisfied = result.conditions
    assert (misconfigured.type, misconfigured.status, misconfigured.reason) == (
        "PlacementMisconfigured",
        "True",
        "Misconfigured",
    )
    assert misconfigured.message.startswith("Predicate:compilation failed: ERROR: <input>:1:")
    # newSatisfiedCondition: bindings, sets and clusters exist, no decision
    assert (satisfied.status, satisfied.reason, satisfied.message) == (
        "False",
        "NoManagedClusterMatched",
        "No ManagedCluster matches any of the cluster predicate",
    )
    assert [(o.name, o.clusters) for o in result.placement_decisions] == [("broken-decision-1", ())]
    assert result.margins is None


# -------------------------------------------------------- groups (step 7)


def test_named_groups_then_the_rest_cut_by_percentage() -> None:
    # generateDecisionGroups: the named group takes the decided clusters its selector
    # matches; the rest form the unnamed group; calculateLength: ceil(28/100 × 25) = 8
    # (7.000000000000001 in float64); divideDecisionGroups: sorted by name, cut in 8s
    spec = {
        "numberOfClusters": 25,
        "decisionStrategy": {
            "groupStrategy": {
                "clustersPerDecisionGroup": "28%",
                "decisionGroups": [
                    {
                        "groupName": "canary",
                        "groupClusterSelector": {
                            "labelSelector": {"matchLabels": {"tier": "gold"}}
                        },
                    },
                    {
                        "groupName": "nobody",
                        "groupClusterSelector": {"labelSelector": {"matchLabels": {"tier": "x"}}},
                    },
                ],
            }
        },
    }
    result = run(placement("groups", spec))
    decided = default_ranking(live())[:25]
    assert list(result.decisions) == decided
    length = math.ceil(28 / 100 * 25)
    assert length == 8
    gold = sorted(c for c in decided if tier(int(c[1:])) == "gold")
    rest = sorted(c for c in decided if c not in gold)
    pieces = [("canary", gold[i : i + 8]) for i in range(0, len(gold), 8)]
    pieces += [("", rest[i : i + 8]) for i in range(0, len(rest), 8)]
    assert [(g.name, g.index, list(g.clusters)) for g in result.decision_groups] == [
        (group_name, index, clusters) for index, (group_name, clusters) in enumerate(pieces)
    ]
    # generateDecision: one PlacementDecision per group here (none holds over 100)
    assert [(o.name, dict(o.labels)) for o in result.placement_decisions] == [
        (
            f"groups-decision-{index + 1}",
            {
                f"{GROUP}/placement": "groups",
                f"{GROUP}/decision-group-name": group_name,
                f"{GROUP}/decision-group-index": str(index),
            },
        )
        for index, (group_name, _) in enumerate(pieces)
    ]


def test_more_than_100_decisions_split_into_objects_of_100() -> None:
    # maxNumOfClusterDecisions = 100: 119 live clusters in one group make 2 objects
    result = run(placement("all", {}))
    assert len(result.decisions) == 119
    assert [(g.index, len(g.clusters)) for g in result.decision_groups] == [(0, 119)]
    everyone = sorted(name(i) for i in live())
    assert [(o.name, list(o.clusters)) for o in result.placement_decisions] == [
        ("all-decision-1", everyone[:100]),
        ("all-decision-2", everyone[100:]),
    ]
    assert result.conditions[1].reason == "AllDecisionsScheduled"
    assert result.margins is None  # nobody is left out


@pytest.mark.parametrize(
    ("per_group", "total", "length"),
    [(3, 10, 3), ("25%", 10, 3), ("100%", 7, 7), (0, 5, 5), (20, 5, 5), ("28%", 25, 8)],
)
def test_calculate_length(per_group: int | str, total: int, length: int) -> None:
    # calculateLength: ints as they are, "p%" as ceil(p/100 × total) in float64, and a
    # length ≤ 0 or above the total means one piece
    assert group_length(per_group, total) == length


def test_a_count_written_as_a_string_misconfigures_and_writes_no_decision() -> None:
    # calculateLength: a string without "%" is Misconfigured "<value> invalid type: …"
    # from plugin ""; generateDecisionGroups returns no group, so no PlacementDecision
    spec = {"decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "3"}}}
    result = run(placement("count", spec))
    assert result.conditions[0].message == ":3 invalid type: string is not a percentage"
    assert result.placement_decisions == ()
    assert result.decision_groups == ()


# -------------------------------------------------------- status (step 8)


def test_a_toleration_ocm_rejects_misconfigures() -> None:
    # taint_toleration.go Filter: an empty key needs operator Exists
    result = run(placement("tolerates", {"tolerations": [{"operator": "Equal", "value": "x"}]}))
    assert result.conditions[0].message == (
        "TaintToleration:If the key is empty, operator must be Exists."
    )
    assert [o.clusters for o in result.placement_decisions] == [()]


def test_spread_with_a_weight_misconfigures() -> None:
    # getPrioritizers: a built-in OCM does not implement is "incorrect builtin prioritizer"
    spec = {"prioritizerPolicy": {"configurations": [{"scoreCoordinate": {"builtIn": "Spread"}}]}}
    result = run(placement("spread", spec))
    assert result.conditions[0].message == ":incorrect builtin prioritizer: Spread"
    zero = {
        "prioritizerPolicy": {
            "configurations": [{"scoreCoordinate": {"builtIn": "Spread"}, "weight": 0}]
        }
    }
    assert run(placement("spread", zero)).conditions[0].status == "False"


def test_partly_unscheduled() -> None:
    # Schedule: unscheduled = numberOfClusters − decisions; newSatisfiedCondition's default
    result = run(placement("many", {"numberOfClusters": 200}))
    assert result.unscheduled == 200 - 119
    assert result.conditions[1] == type(result.conditions[1])(
        "PlacementSatisfied",
        "False",
        "NotAllDecisionsScheduled",
        "81 cluster decisions unscheduled",
    )


def test_no_binding_and_no_intersection() -> None:
    # newSatisfiedCondition: the first two cases
    p = placement("sets", {"clusterSets": ["gpus", "edge"]})
    unbound = schedule(p, fleet(), [], scores(), (), AT)
    assert unbound.conditions[1].reason == "NoManagedClusterSetBindings"
    result = run(p)
    assert result.conditions[1].message == (
        "None of ManagedClusterSets [gpus,edge] is bound to placement namespace"
    )


def test_scheduling_disabled_keeps_the_existing_decisions() -> None:
    # syncPlacement returns before scheduling: nothing is written, the old objects stay
    existing = PlacementDecision.model_validate(
        {
            "apiVersion": f"{GROUP}/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": "off-decision-1",
                "namespace": "default",
                "labels": {f"{GROUP}/placement": "off"},
            },
            "status": {"decisions": [{"clusterName": "c007"}, {"clusterName": "c003"}]},
        }
    )
    result = run(placement("off", {}, {DISABLE: "true"}), (existing,))
    assert not result.simulated
    assert result.decisions == ("c007", "c003")
    assert [o.name for o in result.placement_decisions] == ["off-decision-1"]
    assert result.conditions == ()
    assert "existing decisions stay" in result.warnings[-1]
    document = explain_document([result], AT)["placements"][0]
    assert document["simulated"] is False and "margins" not in document


# ---------------------------------------------------------------- margins


def test_margins_against_the_best_cluster_left_out() -> None:
    # totals: AddOn gpu-score/gpu × 1 (0 where absent, addon.go), Exact mode
    spec = {
        "numberOfClusters": 3,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "gpu-score", "scoreName": "gpu"},
                    }
                }
            ],
        },
    }
    result = run(placement("margins", spec))
    totals = {name(i): gpu(i) or 0 for i in live()}
    ranking = sorted(totals, key=lambda c: (-totals[c], c))
    assert list(result.decisions) == ranking[:3]
    best_left_out = totals[ranking[3]]
    assert result.margins == {c: totals[c] - best_left_out for c in ranking[:3]}


def test_the_cel_view_is_what_the_typed_object_marshals_to() -> None:
    # ConvertObjectToUnstructured: a Quantity marshals to a string and a metav1.Time to
    # RFC 3339 UTC, whatever YAML made of them (a bare `cpu: 2`, an unquoted timestamp)
    document = cluster_document(0)
    document["metadata"]["creationTimestamp"] = datetime(2026, 11, 21, tzinfo=UTC)
    document["status"]["allocatable"]["cpu"] = 2
    view = cel_view(document)
    assert "apiVersion" not in view and "kind" not in view
    assert view["metadata"]["creationTimestamp"] == "2026-11-21T00:00:00Z"
    assert view["status"]["allocatable"]["cpu"] == "2"
    expression = (
        "quantity(managedCluster.status.allocatable.cpu).isGreaterThan(quantity('1500m')) && "
        "managedCluster.metadata.creationTimestamp.startsWith('2026-11-21')"
    )
    result = schedule(
        placement("view", cel(expression)), [hub_cluster(document)], [BINDING], scores(), (), AT
    )
    assert result.decisions == ("c000",)
