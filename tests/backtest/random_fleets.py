"""Random small fleets for the replay's tests: Placements mixing AddOn and built-in
prioritizers (Balance, Steady, negative weights), histories with gaps, the global
binding and given PlacementDecisions."""

from __future__ import annotations

import random
from typing import Any

import numpy as np

from dsf_compile.backtest.history import HistoryReader
from dsf_compile.backtest.rebuilt_scores import ScorerRule
from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
from dsf_compile.inputs.settings import HistorySettings

SCORES = ("alpha", "beta")
RULES = {name: ScorerRule(name, 60, "${node}") for name in SCORES}


def random_placement(rng: random.Random, index: int) -> Placement:
    configurations = [
        {
            "scoreCoordinate": {
                "type": "AddOn",
                "addOn": {"resourceName": rng.choice(SCORES), "scoreName": rng.choice("ab")},
            },
            "weight": rng.choice([-2, 1, 2, 3]),
        }
        for _ in range(rng.randint(1, 3))
    ]
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
