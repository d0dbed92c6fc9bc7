"""Random small fleets for the replay's tests: Placements mixing AddOn and built-in
prioritizers (Balance, Steady, negative weights), histories with gaps, the global
binding and given PlacementDecisions."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import numpy as np

from dsf_compile.backtest.history import HistoryReader
from dsf_compile.backtest.rebuilt_scores import ScorerRule
from dsf_compile.inputs.inventory import ClusterTaint
from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
from dsf_compile.inputs.settings import HistorySettings
from dsf_compile.placement.scheduler import Cluster

SCORES = ("alpha", "beta")
RULES = {name: ScorerRule(name, 60, "${node}") for name in SCORES}
NEW_ONLY = ClusterTaint(key="maintenance", effect="NoSelectIfNew")


def addon_terms(rng: random.Random, weights: list[int]) -> list[dict[str, Any]]:
    """One to three prioritizer terms on the AddOn scores, each of a weight in ``weights``."""
    return [
        {
            "scoreCoordinate": {
                "type": "AddOn",
                "addOn": {"resourceName": rng.choice(SCORES), "scoreName": rng.choice("ab")},
            },
            "weight": rng.choice(weights),
        }
        for _ in range(rng.randint(1, 3))
    ]


def random_cluster(rng: random.Random, name: str, *, tainted: bool) -> Cluster:
    """A cluster in zone a or b with some CPU; ``tainted``: it takes no new Placement."""
    return Cluster(
        name,
        labels={"zone": rng.choice("ab")},
        allocatable={"cpu": Fraction(rng.randint(1, 9))},
        capacity={"cpu": Fraction(10)},
        taints=(NEW_ONLY,) if tainted else (),
    )


def random_placement(rng: random.Random, index: int) -> Placement:
    configurations = addon_terms(rng, [-2, 1, 2, 3])
    for builtin in ("Steady", "Balance", "ResourceAllocatableCPU"):
        if rng.random() < 0.5:
            configurations.append(
                {
                    "scoreCoordinate": {"type": "BuiltIn", "builtIn": builtin},
                    "weight": rng.choice([-3, 0, 1, 2, 5]),
                }
            )
    spec: dict[str, object] = {
        "prioritizerPolicy": {
            "mode": rng.choice(["Additive", "Exact"]),
            "configurations": configurations,
        },
    }
    if rng.random() < 0.8:
        spec["numberOfClusters"] = rng.randint(0, 6)
    if rng.random() < 0.3:
        spec["decisionStrategy"] = {"groupStrategy": {"clustersPerDecisionGroup": "50%"}}
    if rng.random() < 0.3:
        spec["predicates"] = [
            {"requiredClusterSelector": {"labelSelector": {"matchLabels": {"zone": "a"}}}}
        ]
    return Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": f"p{index}", "namespace": "default"},
            "spec": spec,
        }
    )


def random_history(rng: random.Random, names: list[str], steps: np.ndarray) -> list:
    reader = HistoryReader(
        frozenset(names),
        frozenset(SCORES),
        0,
        10**13,
        HistorySettings(maxBytes=10**9, maxSeries=10**6, maxPoints=10**8),
    )
    for cluster in names:
        for score in SCORES:
            if rng.random() < 0.15:
                continue  # this cluster never publishes that score
            for node in "ab":
                times = [int(t) for t in steps if rng.random() < 0.85]
                values = [rng.choice([rng.uniform(-130, 130), 50.0, 50.0]) for _ in times]
                metric = {
                    "__name__": "dynamic_score",
                    "ds_cluster": cluster,
                    "ds_score_name": score,
                    "ds_node": node,
                }
                assert reader.add(metric, times, values) is None
    return reader.series()


def global_binding() -> ManagedClusterSetBinding:
    return ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )


def given_decision(placement: str, clusters: list[str]) -> Any:
    from dsf_compile.inputs.placements import PlacementDecision

    return PlacementDecision.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "PlacementDecision",
            "metadata": {
                "name": f"{placement}-decision-1",
                "namespace": "default",
                "labels": {"cluster.open-cluster-management.io/placement": placement},
            },
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
        }
    )
