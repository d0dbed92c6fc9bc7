"""The vectorized steps 5 and 6 give, at every step, what the scheduler gives: random fleets
(Balance, Steady, negative weights, resource prioritizers, a coordinate twice, decision
groups, clusters without a score, expiry) replayed both ways."""

from __future__ import annotations

import random
from fractions import Fraction

import numpy as np
import pytest

from dsf_compile.backtest.history import HistoryReader, Limits
from dsf_compile.backtest.replay import replay
from dsf_compile.backtest.scores import ScorerRule, rebuild_all
from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
from dsf_compile.placement.scheduler import Cluster

SCORES = ("alpha", "beta")
RULES = {name: ScorerRule(name, 60, "${node}") for name in SCORES}


def _placement(rng: random.Random, index: int) -> Placement:
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
                    "weight": rng.choice([0, 1, 2, 5]),
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


def _history(rng: random.Random, names: list[str], steps: np.ndarray) -> list:
    reader = HistoryReader(
        frozenset(names), frozenset(SCORES), 0, 10**13, Limits(10**9, 10**6, 10**8)
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


CALLS = {"fast": 0}


@pytest.mark.parametrize("seed", range(12))
def test_fast_path_equals_the_scheduler(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from dsf_compile.backtest import replay as module

    def counted(*args: object) -> object:
        CALLS["fast"] += 1
        return real(*args)

    real = module.fast_step
    monkeypatch.setattr(module, "fast_step", counted)
    rng = random.Random(seed)
    names = [f"c{i:02d}" for i in range(rng.randint(3, 14))]
    clusters = [
        Cluster(
            name,
            labels={"zone": rng.choice("ab")},
            allocatable={"cpu": Fraction(rng.randint(1, 9))},
            capacity={"cpu": Fraction(10)},
        )
        for name in names
    ]
    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    steps = np.arange(60, dtype=np.int64) * 60_000 + 600_000_000
    history = rebuild_all(_history(rng, names, steps), RULES, lambda c, s: "max", steps)
    placements = [_placement(rng, i) for i in range(rng.randint(1, 6))]
    fast = replay(placements, clusters, [binding], history, ())
    slow = replay(placements, clusters, [binding], history, (), fast=False)
    for one, other in zip(fast, slow, strict=True):
        assert one.records == other.records, one.placement.metadata.name


def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above do go through the fast path, most of their steps."""
    CALLS["fast"] = 0
    for seed in range(12):
        with monkeypatch.context() as patch:
            test_fast_path_equals_the_scheduler(seed, patch)
    assert CALLS["fast"] > 500
