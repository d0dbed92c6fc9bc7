"""The offline scheduler: every step of OCM's, against hand-computed expectations."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsf_compile.commands.reporters import REPORTER_BY_NAME
from dsf_compile.inputs.inventory import ClusterTaint, ManagedClusterSpec, ManagedClusterStatus
from dsf_compile.inputs.placements import (
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
)
from dsf_compile.placement.explain import explain_document
from dsf_compile.placement.scheduler import (
    Cluster,
    PlacementResult,
    ScoreIndex,
    cluster_from_inventory,
    schedule,
)

AT = datetime(2026, 11, 22, tzinfo=UTC)
SET_LABEL = "cluster.open-cluster-management.io/clusterset"


def placement(spec: dict[str, Any] | None = None, **meta: Any) -> Placement:
    metadata = {"name": "p", "namespace": "default", **meta}
    return Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": metadata,
            "spec": spec or {},
        }
    )


def binding(cluster_set: str = "global", namespace: str = "default") -> ManagedClusterSetBinding:
    return ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": cluster_set, "namespace": namespace},
            "spec": {"clusterSet": cluster_set},
        }
    )


def score(
    cluster: str, name: str, items: dict[str, int], valid_until: str | None = None
) -> AddOnPlacementScore:
    status: dict[str, Any] = {"scores": [{"name": k, "value": v} for k, v in items.items()]}
    if valid_until:
        status["validUntil"] = valid_until
    return AddOnPlacementScore.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": name, "namespace": cluster},
            "status": status,
        }
    )


def decision(
    placement_name: str, clusters: list[str], namespace: str = "default"
) -> PlacementDecision:
    return PlacementDecision.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": f"{placement_name}-decision-1",
                "namespace": namespace,
                "labels": {"cluster.open-cluster-management.io/placement": placement_name},
            },
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
    )


def run(
    p: Placement,
    clusters: list[Cluster],
    *,
    bindings: list[ManagedClusterSetBinding] | None = None,
    scores: list[AddOnPlacementScore] | None = None,
    decisions: list[PlacementDecision] | None = None,
    at: datetime = AT,
) -> PlacementResult:
    return schedule(
        p,
        clusters,
        [binding()] if bindings is None else bindings,
        scores,
        decisions or [],
        at,
    )


def prioritizer(result: PlacementResult, name: str) -> dict[str, int]:
    (found,) = [p for p in result.prioritizers if p.name == name]
    return dict(found.scores)


def names(*clusters: str) -> list[Cluster]:
    return [Cluster(name=c) for c in clusters]


EXACT_ADDON = {
    "prioritizerPolicy": {
        "mode": "Exact",
        "configurations": [
            {
                "scoreCoordinate": {
                    "type": "AddOn",
                    "addOn": {"resourceName": "perf", "scoreName": "gpu"},
                },
                "weight": 1,
            }
        ],
    }
}


# ------------------------------------------------------------------ cluster sets


def test_global_set_holds_every_cluster() -> None:
    result = run(placement(), names("b", "a"))
    assert result.cluster_sets == ("global",)
    assert result.ranking == ("a", "b")
    assert result.filtered_cluster_sets == ()


def test_labelled_set_holds_its_members_only() -> None:
    clusters = [
        Cluster("a", labels={SET_LABEL: "prod"}),
        Cluster("b", labels={SET_LABEL: "dev"}),
        Cluster("c"),
    ]
    result = run(placement(), clusters, bindings=[binding("prod")])
    assert result.cluster_sets == ("prod",)
    assert result.filtered_cluster_sets == ("b", "c")
    assert result.decisions == ("a",)


def test_spec_cluster_sets_intersect_the_bound_ones() -> None:
    clusters = [Cluster("a", labels={SET_LABEL: "prod"}), Cluster("b", labels={SET_LABEL: "dev"})]
    result = run(
        placement({"clusterSets": ["dev", "edge"]}),
        clusters,
        bindings=[binding("prod"), binding("dev")],
    )
    assert result.cluster_sets == ("dev",)
    assert result.decisions == ("b",)
    assert any("not bound to namespace default: edge" in w for w in result.warnings)


def test_unbound_namespace_selects_nothing_and_says_why() -> None:
    result = run(placement(), names("a"), bindings=[binding("global", namespace="other")])
    assert result.cluster_sets == ()
    assert result.filtered_cluster_sets == ("a",)
    assert result.decisions == ()
    assert result.warnings[0].startswith(
        "no ManagedClusterSetBinding binds a cluster set to namespace default"
    )


# -------------------------------------------------------------------- predicates


def test_predicates_are_ored_and_label_and_claim_selectors_anded() -> None:
    clusters = [
        Cluster("aws-gpu", labels={"gpu": "true"}, claims={"platform": "AWS"}),
        Cluster("aws-cpu", labels={}, claims={"platform": "AWS"}),
        Cluster("gcp-gpu", labels={"gpu": "true"}, claims={"platform": "GCP"}),
        Cluster("edge", labels={"tier": "edge"}),
    ]
    spec = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "labelSelector": {"matchLabels": {"gpu": "true"}},
                    "claimSelector": {
                        "matchExpressions": [
                            {"key": "platform", "operator": "In", "values": ["AWS"]}
                        ]
                    },
                }
            },
            {
                "requiredClusterSelector": {
                    "labelSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
                    "claimSelector": {
                        "matchExpressions": [{"key": "platform", "operator": "DoesNotExist"}]
                    },
                }
            },
        ]
    }
    result = run(placement(spec), clusters)
    assert result.filtered_predicates == ("aws-cpu", "gcp-gpu")
    assert set(result.ranking) == {"aws-gpu", "edge"}


def test_not_in_matches_a_cluster_without_the_claim() -> None:
    spec = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "claimSelector": {
                        "matchExpressions": [
                            {"key": "region", "operator": "NotIn", "values": ["eu"]}
                        ]
                    }
                }
            }
        ]
    }
    clusters = [
        Cluster("eu", claims={"region": "eu"}),
        Cluster("us", claims={"region": "us"}),
        Cluster("none"),
    ]
    assert run(placement(spec), clusters).filtered_predicates == ("eu",)


def test_cel_selector_is_evaluated() -> None:
    spec = {
        "predicates": [
            {
                "requiredClusterSelector": {
                    "celSelector": {
                        "celExpressions": ["managedCluster.metadata.labels['tier'] == 'gold'"]
                    }
                }
            }
        ]
    }
    clusters = [Cluster("a", labels={"tier": "gold"}), Cluster("b", labels={"tier": "bronze"})]
    result = run(placement(spec), clusters)
    assert result.simulated
    assert result.decisions == ("a",)
    assert result.filtered_predicates == ("b",)


def test_cel_optional_syntax_is_not_simulated() -> None:
    # cel-go accepts optional field selection (OCM enables cel.OptionalTypes); the
    # interpreter dsf uses cannot parse it, so the Placement is not guessed
    expression = "managedCluster.?metadata.?labels.?tier.orValue('') == 'gold'"
    spec = {
        "predicates": [
            {"requiredClusterSelector": {"celSelector": {"celExpressions": [expression]}}}
        ]
    }
    result = run(placement(spec), names("a"))
    assert not result.simulated
    assert result.decisions == ()
    assert "optional types" in result.warnings[-1]


def test_scheduling_disabled_annotation_is_not_simulated() -> None:
    p = placement(
        annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"}
    )
    result = run(p, names("a"))
    assert not result.simulated
    assert "experimental-scheduling-disable" in result.warnings[-1]


# ------------------------------------------------------------ taints, tolerations


def taint(
    effect: str, key: str = "gpu", value: str = "", added: datetime | None = None
) -> ClusterTaint:
    data: dict[str, Any] = {"key": key, "value": value, "effect": effect}
    if added is not None:
        data["timeAdded"] = added
    return ClusterTaint.model_validate(data)


@pytest.mark.parametrize(
    ("effect", "decided", "kept"),
    [
        ("NoSelect", False, False),
        ("NoSelect", True, False),
        ("NoSelectIfNew", False, False),
        ("NoSelectIfNew", True, True),
        ("PreferNoSelect", False, True),
    ],
)
def test_taint_effects(effect: str, decided: bool, kept: bool) -> None:
    clusters = [Cluster("t", taints=(taint(effect),)), Cluster("u")]
    own = [decision("p", ["t"])] if decided else []
    result = run(placement(), clusters, decisions=own)
    assert ("t" in result.ranking) is kept
    assert result.filtered_taints == (() if kept else ("t",))


def test_no_select_if_new_looks_at_this_placements_decisions_only() -> None:
    clusters = [Cluster("t", taints=(taint("NoSelectIfNew"),))]
    others = [decision("other", ["t"]), decision("p", ["t"], namespace="elsewhere")]
    assert run(placement(), clusters, decisions=others).filtered_taints == ("t",)


@pytest.mark.parametrize(
    ("toleration", "tolerated"),
    [
        ({"key": "gpu", "value": "a100"}, True),  # Equal is the default
        ({"key": "gpu", "operator": "Equal", "value": "h100"}, False),
        ({"key": "gpu", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),  # empty key and Exists: every taint
        ({"key": "gpu", "operator": "Exists", "effect": "NoSelect"}, True),
        ({"key": "gpu", "operator": "Exists", "effect": "NoSelectIfNew"}, False),
        ({"key": "other", "operator": "Exists"}, False),
    ],
)
def test_tolerations(toleration: dict[str, Any], tolerated: bool) -> None:
    clusters = [Cluster("t", taints=(taint("NoSelect", value="a100"),))]
    result = run(placement({"tolerations": [toleration]}), clusters)
    assert (result.ranking == ("t",)) is tolerated


@pytest.mark.parametrize(
    ("elapsed", "tolerated"),
    [(timedelta(minutes=59), True), (timedelta(hours=1), False), (timedelta(days=2), False)],
)
def test_toleration_seconds_count_from_the_taints_time_added(
    elapsed: timedelta, tolerated: bool
) -> None:
    added = AT - elapsed
    clusters = [Cluster("t", taints=(taint("NoSelect", added=added),))]
    spec = {"tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 3600}]}
    assert (run(placement(spec), clusters).ranking == ("t",)) is tolerated


def test_toleration_seconds_without_time_added_has_expired() -> None:
    clusters = [Cluster("t", taints=(taint("NoSelect"),))]
    spec = {"tolerations": [{"key": "gpu", "operator": "Exists", "tolerationSeconds": 3600}]}
    assert run(placement(spec), clusters).filtered_taints == ("t",)


def test_every_taint_must_be_tolerated() -> None:
    clusters = [Cluster("t", taints=(taint("NoSelect"), taint("NoSelect", key="disk")))]
    spec = {"tolerations": [{"key": "gpu", "operator": "Exists"}]}
    assert run(placement(spec), clusters).filtered_taints == ("t",)


# ---------------------------------------------------------------------- weights


def test_additive_defaults_are_balance_and_steady() -> None:
    result = run(placement(), names("a"))
    assert [(p.name, p.weight) for p in result.prioritizers] == [("Balance", 1), ("Steady", 1)]


def test_additive_overrides_and_adds_and_zero_disables() -> None:
    spec = {
        "prioritizerPolicy": {
            "configurations": [
                {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 0},
                {"scoreCoordinate": {"builtIn": "Balance"}, "weight": 3},
                {"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}, "weight": -2},
            ]
        }
    }
    result = run(placement(spec), names("a"))
    assert [(p.name, p.weight) for p in result.prioritizers] == [
        ("Balance", 3),
        ("ResourceAllocatableCPU", -2),
    ]


def test_exact_uses_the_configurations_only() -> None:
    result = run(placement(EXACT_ADDON), names("a"), scores=[])
    assert [(p.name, p.weight) for p in result.prioritizers] == [("AddOn/perf/gpu", 1)]


def test_exact_without_configurations_ranks_by_name() -> None:
    result = run(placement({"prioritizerPolicy": {"mode": "Exact"}}), names("c", "a", "b"))
    assert result.prioritizers == ()
    assert result.totals == {"a": 0, "b": 0, "c": 0}
    assert result.ranking == ("a", "b", "c")


def test_unknown_builtin_is_misconfigured_unless_its_weight_is_zero() -> None:
    def spec(weight: int) -> dict[str, Any]:
        return {
            "prioritizerPolicy": {
                "configurations": [{"scoreCoordinate": {"builtIn": "Balanse"}, "weight": weight}]
            }
        }

    # OCM's getPrioritizers: "incorrect builtin prioritizer: <name>" from plugin "", so
    # newMisconfiguredCondition writes ":incorrect builtin prioritizer: Balanse"
    broken = run(placement(spec(1)), names("a"))
    assert broken.simulated and broken.decisions == ()
    assert broken.conditions[0].status == "True"
    assert broken.conditions[0].message == ":incorrect builtin prioritizer: Balanse"
    assert "Balanse" in broken.warnings[-1]
    assert run(placement(spec(0)), names("a")).conditions[0].status == "False"


def test_the_same_addon_score_configured_twice_counts_twice() -> None:
    config = {
        "scoreCoordinate": {"type": "AddOn", "addOn": {"resourceName": "perf", "scoreName": "gpu"}},
        "weight": 2,
    }
    spec = {"prioritizerPolicy": {"mode": "Exact", "configurations": [config, config]}}
    result = run(placement(spec), names("a"), scores=[score("a", "perf", {"gpu": 10})])
    assert result.totals == {"a": 40}
    assert any("more than once" in w for w in result.warnings)


# ----------------------------------------------------------------------- scores


def test_addon_score_reads_the_clusters_own_namespace() -> None:
    scores = [
        score("a", "perf", {"gpu": 40, "cpu": 99}),
        score("b", "perf", {"gpu": 75}),
        score("c", "other", {"gpu": 100}),
    ]
    result = run(placement(EXACT_ADDON), names("a", "b", "c"), scores=scores)
    assert prioritizer(result, "AddOn/perf/gpu") == {"a": 40, "b": 75, "c": 0}
    assert result.ranking == ("b", "a", "c")
    assert "AddOn/perf/gpu: no such score for c: they score 0" in result.warnings


def test_expired_scores_count_0_and_are_named() -> None:
    scores = [
        score("a", "perf", {"gpu": 90}, valid_until="2026-11-21T23:59:59Z"),
        score("b", "perf", {"gpu": 10}, valid_until="2026-11-22T00:00:00Z"),  # == at: valid
    ]
    result = run(placement(EXACT_ADDON), names("a", "b"), scores=scores)
    assert prioritizer(result, "AddOn/perf/gpu") == {"a": 0, "b": 10}
    assert result.decisions == ("b", "a")
    assert (
        "AddOnPlacementScore a/perf expired at 2026-11-21T23:59:59Z: it scores 0" in result.warnings
    )


def test_without_scores_every_addon_score_is_0_and_the_output_says_so() -> None:
    result = run(placement(EXACT_ADDON), names("a"), scores=None)
    assert prioritizer(result, "AddOn/perf/gpu") == {"a": 0}
    assert "no AddOnPlacementScores were given: every AddOn score is 0" in result.warnings


def test_steady_favours_this_placements_decisions() -> None:
    decisions = [decision("p", ["b"]), decision("other", ["a"])]
    result = run(placement(), names("a", "b"), decisions=decisions)
    assert prioritizer(result, "Steady") == {"a": 0, "b": 100}


def test_balance_counts_other_placements_and_truncates_like_ocm() -> None:
    decisions = [
        decision("x", ["a", "b", "c"]),
        decision("y", ["a", "b"]),
        decision("z", ["a"], namespace="other"),
        decision("p", ["d", "d", "d", "d"]),  # this Placement's own: not counted
    ]
    result = run(placement(), names("a", "b", "c", "d"), decisions=decisions)
    # max 3: a 2·trunc(100·(0.5−1)) = −100; b 2·trunc(−16.67) = −32 (floor would give −34);
    # c 2·trunc(16.67) = 32; d none: 100
    assert prioritizer(result, "Balance") == {"a": -100, "b": -32, "c": 32, "d": 100}


def test_balance_follows_ocms_float_arithmetic() -> None:
    decisions = [decision("x", ["m"] * 5 + ["a", "a", "b", "b", "b"])]
    result = run(placement(), names("a", "b", "m"), decisions=decisions)
    # exactly 2·trunc(100·(0.5 − 2/5)) = 20, but in float64 0.5 − 0.4 = 0.09999…: OCM gives 18
    assert prioritizer(result, "Balance") == {"a": 18, "b": -18, "m": -100}


RESOURCE_CPU = {
    "prioritizerPolicy": {
        "mode": "Exact",
        "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableCPU"}}],
    }
}


def cpu(name: str, allocatable: str | None, capacity: str | None = "64") -> Cluster:
    status = ManagedClusterStatus.model_validate(
        {
            "allocatable": {} if allocatable is None else {"cpu": allocatable},
            "capacity": {} if capacity is None else {"cpu": capacity},
        }
    )
    return cluster_from_inventory(name, {}, None, status)


def test_resource_allocatable_scales_between_min_and_max() -> None:
    clusters = [
        cpu("low", "2"),
        cpu("mid", "3500m"),
        cpu("high", "10"),
        cpu("none", None),
        cpu("no-capacity", "1", capacity=None),  # not counted, so the minimum stays 2
    ]
    result = run(placement(RESOURCE_CPU), clusters)
    # mid: trunc((1.5/8 − 0.5)·200) = trunc(−62.5) = −62
    assert prioritizer(result, "ResourceAllocatableCPU") == {
        "low": -100,
        "mid": -62,
        "high": 100,
        "none": 0,
        "no-capacity": 0,
    }


def test_resource_allocatable_follows_ocms_float_arithmetic() -> None:
    result = run(placement(RESOURCE_CPU), [cpu("a", "1"), cpu("b", "3"), cpu("c", "6")])
    # exactly trunc((0.4 − 0.5)·200) = −20, but in float64 OCM gets −19.999… → −19
    assert prioritizer(result, "ResourceAllocatableCPU") == {"a": -100, "b": -19, "c": 100}


def test_resource_allocatable_all_equal_score_100() -> None:
    spec = {
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [{"scoreCoordinate": {"builtIn": "ResourceAllocatableMemory"}}],
        }
    }
    status = ManagedClusterStatus.model_validate(
        {"allocatable": {"memory": "16Gi"}, "capacity": {"memory": "32Gi"}}
    )
    clusters = [cluster_from_inventory(n, {}, None, status) for n in ("a", "b")]
    assert prioritizer(run(placement(spec), clusters), "ResourceAllocatableMemory") == {
        "a": 100,
        "b": 100,
    }


def test_scores_cover_the_clusters_left_after_taints_only() -> None:
    clusters = [Cluster("a"), Cluster("t", taints=(taint("NoSelect"),))]
    result = run(placement(), clusters)
    assert set(result.totals) == {"a"}
    assert all(set(p.scores) == {"a"} for p in result.prioritizers)


# -------------------------------------------------------------------- selection


def test_ties_break_by_name_and_number_of_clusters_cuts() -> None:
    result = run(placement({"numberOfClusters": 2}), names("c", "b", "a"))
    assert result.ranking == ("a", "b", "c")
    assert result.decisions == ("a", "b")
    assert result.unscheduled == 0


def test_unscheduled_counts_what_is_missing() -> None:
    result = run(placement({"numberOfClusters": 5}), names("a", "b"))
    assert result.decisions == ("a", "b")
    assert result.unscheduled == 3


def test_totals_are_weighted_sums() -> None:
    spec = {
        "prioritizerPolicy": {
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "perf", "scoreName": "gpu"},
                    },
                    "weight": 3,
                }
            ]
        },
        "numberOfClusters": 1,
    }
    scores = [score("a", "perf", {"gpu": 40}), score("b", "perf", {"gpu": 75})]
    decisions = [decision("other", ["b"])]
    result = run(placement(spec), names("a", "b"), scores=scores, decisions=decisions)
    # a: 3·40 + Balance 100 + Steady 0 = 220; b: 3·75 + Balance −100 = 125
    assert result.totals == {"a": 220, "b": 125}
    assert result.decisions == ("a",)


def test_cluster_from_inventory_reads_taints_claims_and_quantities() -> None:
    spec = ManagedClusterSpec.model_validate(
        {"taints": [{"key": "k", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}]}
    )
    status = ManagedClusterStatus.model_validate(
        {
            "clusterClaims": [{"name": "id", "value": "1"}, {"name": "id", "value": "2"}],
            "allocatable": {"cpu": "1500m", "memory": 1024},
            "capacity": {"cpu": 2},
        }
    )
    cluster = cluster_from_inventory("a", {"x": "y"}, spec, status)
    assert cluster.claims == {"id": "2"}
    assert cluster.allocatable == {"cpu": Fraction(3, 2), "memory": Fraction(1024)}
    assert cluster.capacity == {"cpu": Fraction(2)}
    assert cluster.taints[0].timeAdded == datetime(2026, 1, 1, tzinfo=UTC)


def test_naive_time_is_refused() -> None:
    with pytest.raises(ValueError, match="time zone"):
        schedule(placement(), [], [], None, [], datetime(2026, 1, 1))


# ------------------------------------------------------------------- properties

cluster_names = st.lists(
    st.text(alphabet="abcdef0123", min_size=1, max_size=4), min_size=0, max_size=8, unique=True
)


@settings(max_examples=60, deadline=None)
@given(
    cluster_names.flatmap(
        lambda ns: st.tuples(
            st.just(ns),
            st.lists(st.integers(-100, 100), min_size=len(ns), max_size=len(ns)),
            st.lists(st.sampled_from(ns), max_size=10) if ns else st.just([]),
            st.lists(st.sampled_from(ns), max_size=3) if ns else st.just([]),
        )
    ),
    st.one_of(st.none(), st.integers(0, 10)),
    st.integers(-10, 10),
)
def test_decisions_are_a_prefix_of_the_ranking(
    data: tuple[list[str], list[int], list[str], list[str]], count: int | None, weight: int
) -> None:
    cluster_list, values, others, own = data
    spec: dict[str, Any] = {
        "prioritizerPolicy": {
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "perf", "scoreName": "s"},
                    },
                    "weight": weight,
                }
            ]
        }
    }
    if count is not None:
        spec["numberOfClusters"] = count
    scores = [score(n, "perf", {"s": v}) for n, v in zip(cluster_list, values, strict=True)]
    decisions = [decision("other", others), decision("p", own)]
    result = run(placement(spec), names(*cluster_list), scores=scores, decisions=decisions)
    assert sorted(result.ranking) == sorted(cluster_list)
    assert list(result.ranking) == sorted(cluster_list, key=lambda n: (-result.totals[n], n))
    wanted = len(cluster_list) if count is None else count
    assert result.decisions == result.ranking[:wanted]
    assert result.unscheduled == max(0, wanted - len(cluster_list))
    for n in cluster_list:
        assert result.totals[n] == sum(p.weight * p.scores[n] for p in result.prioritizers)


@settings(max_examples=60, deadline=None)
@given(
    cluster_names.flatmap(
        lambda ns: st.tuples(
            st.just(ns), st.lists(st.integers(-100, 100), min_size=len(ns), max_size=len(ns))
        )
    )
)
def test_exact_policy_with_one_addon_orders_by_that_score(
    data: tuple[list[str], list[int]],
) -> None:
    cluster_list, values = data
    by_cluster = dict(zip(cluster_list, values, strict=True))
    scores = [score(n, "perf", {"gpu": v}) for n, v in by_cluster.items()]
    result = run(placement(EXACT_ADDON), names(*cluster_list), scores=scores)
    assert list(result.ranking) == sorted(cluster_list, key=lambda n: (-by_cluster[n], n))


# ---------------------------------------------------------------------- explain


def example_results() -> list[PlacementResult]:
    spec = {
        "prioritizerPolicy": {
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "sample-my-score", "scoreName": "app01;gpu"},
                    },
                    "weight": 3,
                },
                {"scoreCoordinate": {"builtIn": "Steady"}, "weight": 0},
            ]
        },
        "numberOfClusters": 1,
        "predicates": [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"gpu": "true"}}}}
        ],
    }
    clusters = [
        Cluster("worker01", labels={"gpu": "true"}),
        Cluster("worker02", labels={"gpu": "true"}),
        Cluster("worker03"),
    ]
    scores = [
        score("worker01", "sample-my-score", {"app01;gpu": 40}),
        score("worker02", "sample-my-score", {"app01;gpu": 75}),
    ]
    gpu = run(placement(spec, name="gpu-inference"), clusters, scores=scores)
    cel = run(
        placement(
            {
                "predicates": [
                    {"requiredClusterSelector": {"celSelector": {"celExpressions": ["x"]}}}
                ]
            },
            name="cel",
        ),
        clusters,
    )
    return [gpu, cel]


def printed(format_name: str) -> str:
    """What ``explain --format format_name`` prints of :func:`example_results` on stdout."""
    out = io.StringIO()
    reporter = REPORTER_BY_NAME[format_name]("explain", out, io.StringIO())
    reporter.explanation(example_results(), AT)
    reporter.close(0)
    return out.getvalue()


def test_explain_json_has_the_specs_shape() -> None:
    document = json.loads(printed("json"))
    assert list(document) == ["command", "ok", "problems", "at", "placements"]
    del document["command"], document["ok"], document["problems"]
    assert document["at"] == "2026-11-22T00:00:00Z"
    cel, gpu = document["placements"]  # sorted by namespace then name
    assert list(gpu) == [
        "namespace",
        "name",
        "simulated",
        "clusterSets",
        "filtered",
        "prioritizers",
        "totals",
        "decisions",
        "unscheduled",
        "decisionGroups",
        "placementDecisions",
        "conditions",
        "margins",
        "warnings",
    ]
    assert gpu == {
        "namespace": "default",
        "name": "gpu-inference",
        "simulated": True,
        "clusterSets": ["global"],
        "filtered": {"clusterSets": [], "predicates": ["worker03"], "taints": []},
        "prioritizers": [
            {
                "name": "AddOn/sample-my-score/app01;gpu",
                "weight": 3,
                "scores": {"worker01": 40, "worker02": 75},
            },
            {"name": "Balance", "weight": 1, "scores": {"worker01": 100, "worker02": 100}},
        ],
        "totals": {"worker01": 220, "worker02": 325},
        "decisions": ["worker02"],
        "unscheduled": 0,
        "decisionGroups": [{"groupName": "", "groupIndex": 0, "clusters": ["worker02"]}],
        "placementDecisions": [
            {
                "name": "gpu-inference-decision-1",
                "labels": {
                    "cluster.open-cluster-management.io/placement": "gpu-inference",
                    "cluster.open-cluster-management.io/decision-group-name": "",
                    "cluster.open-cluster-management.io/decision-group-index": "0",
                },
                "clusters": ["worker02"],
            }
        ],
        "conditions": [
            {
                "type": "PlacementMisconfigured",
                "status": "False",
                "reason": "Succeedconfigured",
                "message": "Placement configurations check pass",
            },
            {
                "type": "PlacementSatisfied",
                "status": "True",
                "reason": "AllDecisionsScheduled",
                "message": "All cluster decisions scheduled",
            },
        ],
        "margins": {"worker02": 105},
        "warnings": [],
    }
    # an undeclared name does not compile: misconfigured, one empty PlacementDecision
    assert cel["simulated"] is True
    assert cel["prioritizers"] == [] and cel["decisions"] == []
    # cel-go's checker error, with its snippet and caret (common.Error.ToDisplayString)
    assert cel["conditions"][0]["message"] == (
        "Predicate:compilation failed: ERROR: <input>:1:1: undeclared reference to 'x' "
        "(in container '')\n | x\n | ^"
    )
    assert [d["clusters"] for d in cel["placementDecisions"]] == [[]]
    assert "margins" not in cel
    assert explain_document(example_results(), AT) == document


def test_explain_text_is_a_table_per_placement() -> None:
    text = printed("text")
    assert "placement default/cel\n" in text
    assert "  PlacementDecision gpu-inference-decision-1: worker02" in text
    assert "  margins over the best cluster left out: worker02 +105" in text
    assert "placement default/gpu-inference\n" in text
    lines = text.splitlines()
    header = next(line for line in lines if line.strip().startswith("cluster ") and "total" in line)
    assert header.split() == [
        "cluster",
        "AddOn/sample-my-score/app01;gpu",
        "×3",
        "Balance",
        "×1",
        "total",
        "selected",
    ]
    rows = [line.split() for line in lines if line.strip().startswith("worker0")]
    assert rows == [
        ["worker02", "75×3", "100×1", "325", "yes"],
        ["worker01", "40×3", "100×1", "220"],
    ]
    assert "  removed by predicates: worker03" in lines


def test_explain_markdown_escapes_table_cells() -> None:
    markdown = printed("markdown")
    assert "| worker02 | 75×3 | 100×1 | 325 | yes |" in markdown
    assert "#### `default/gpu-inference`" in markdown
    assert "|---|---:|---:|---:|:---:|" in markdown


def test_a_score_item_written_twice_counts_its_last_value_like_ocm() -> None:
    twice = AddOnPlacementScore.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
            "kind": "AddOnPlacementScore",
            "metadata": {"name": "perf", "namespace": "a"},
            "status": {"scores": [{"name": "gpu", "value": 10}, {"name": "gpu", "value": 30}]},
        }
    )
    result = run(placement(EXACT_ADDON), names("a"), scores=[twice])
    assert prioritizer(result, "AddOn/perf/gpu") == {"a": 30}


@given(
    values=st.lists(
        st.tuples(
            st.sampled_from(["a", "b", "c"]),
            st.sampled_from(["perf", "power"]),
            st.sampled_from(["gpu", "cpu"]),
            st.integers(-100, 100),
        ),
        max_size=12,
    ),
    expired=st.sets(st.sampled_from(["a", "b", "c"])),
)
@settings(max_examples=60, deadline=None)
def test_an_index_built_once_schedules_like_the_scores_themselves(
    values: list[tuple[str, str, str, int]], expired: set[str]
) -> None:
    grouped: dict[tuple[str, str], dict[str, int]] = {}
    for cluster, name, item, value in values:
        grouped.setdefault((cluster, name), {})[item] = value
    scores = [
        score(cluster, name, items, "2026-11-21T00:00:00Z" if cluster in expired else None)
        for (cluster, name), items in grouped.items()
    ]
    p = placement(EXACT_ADDON)
    clusters = names("a", "b", "c")
    # OCM's rule, written out: the "gpu" item of "perf" unless expired, else 0
    expected = {c: 0 if c in expired else grouped.get((c, "perf"), {}).get("gpu", 0) for c in "abc"}
    from_list = schedule(p, clusters, [binding()], scores, [], AT)
    from_index = schedule(p, clusters, [binding()], ScoreIndex.of(scores), [], AT)
    assert prioritizer(from_list, "AddOn/perf/gpu") == expected
    assert from_index == from_list


def test_failing_scores_are_named_for_the_clusters_left_and_the_scores_used() -> None:
    def failing(cluster: str, name: str, status: str = "False") -> AddOnPlacementScore:
        return AddOnPlacementScore.model_validate(
            {
                "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
                "kind": "AddOnPlacementScore",
                "metadata": {"name": name, "namespace": cluster},
                "status": {
                    "scores": [{"name": "gpu", "value": 10}],
                    "conditions": [
                        {"type": "ScoresAvailable", "status": status, "reason": "QueryFailed"}
                    ],
                },
            }
        )

    scores = [
        failing("c", "perf"),
        failing("a", "perf"),
        failing("a", "power"),  # not ranked by
        failing("b", "perf", "True"),  # healthy
        failing("gone", "perf"),  # removed by the predicate
    ]
    spec = {
        **EXACT_ADDON,
        "predicates": [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"keep": "yes"}}}}
        ],
    }
    clusters = [
        Cluster(name=n, labels={"keep": "no" if n == "gone" else "yes"})
        for n in ("a", "b", "c", "gone")
    ]
    for given_scores in (scores, ScoreIndex.of(scores)):
        result = schedule(placement(spec), clusters, [binding()], given_scores, [], AT)
        assert [w for w in result.warnings if "failing" in w] == [
            "score perf failing on cluster a (QueryFailed): its last good values are used until they expire",
            "score perf failing on cluster c (QueryFailed): its last good values are used until they expire",
        ]
