"""The vectorized steps 5 and 6 give, at every step, what the scheduler gives: random fleets
(Balance, Steady, negative weights, resource prioritizers, a coordinate twice, decision
groups, clusters without a score, expiry) replayed both ways."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from dsf_compile.backtest.fast_plan import StepRecord
from dsf_compile.backtest.replay import replay
from dsf_compile.backtest.score_history import rebuild_all
from dsf_compile.inputs.placements import AddOnPlacementScore, Placement
from dsf_compile.placement.scheduler import Cluster
from tests.backtest.random_fleets import (
    RULES,
    given_decision,
    global_binding,
    random_cluster,
    random_history,
    random_placement,
)

CALLS = {"fast": 0, "batched": 0}


@pytest.mark.parametrize("seed", range(24))
def test_fast_path_equals_the_scheduler(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from dsf_compile.backtest import fast as fast_module
    from dsf_compile.backtest import replay as module

    def counted(*args: Any) -> StepRecord:
        CALLS["fast"] += 1
        return fast_module.fast_step(*args)

    def batched(*args: Any) -> list[StepRecord] | None:
        found = fast_module.fast_steps(*args)
        CALLS["batched"] += 0 if found is None else len(found)
        return found

    monkeypatch.setattr(module, "fast_step", counted)
    monkeypatch.setattr(module, "fast_steps", batched)
    rng = random.Random(seed)
    names = [f"c{i:02d}" for i in range(rng.randint(3, 14))]
    # some clusters take no new Placement: the fast path must step aside
    clusters = [
        random_cluster(rng, name, tainted=name.endswith("3") and rng.random() < 0.5)
        for name in names
    ]
    binding = global_binding()
    steps = np.arange(60, dtype=np.int64) * 60_000 + 600_000_000
    history = rebuild_all(random_history(rng, names, steps), RULES, lambda c, s: "max", steps)
    placements = [random_placement(rng, i) for i in range(rng.randint(1, 6))]
    # a tainted cluster already decided stays a candidate until the Placement drops it
    tainted = [c.name for c in clusters if c.taints]
    initial = [
        given_decision(p.metadata.name, tainted)
        for p in placements
        if tainted and rng.random() < 0.7
    ]
    fast = replay(placements, clusters, [binding], history, initial)
    slow = replay(placements, clusters, [binding], history, initial, fast=False)
    for one, other in zip(fast, slow, strict=True):
        assert one.records == other.records, one.placement.metadata.name


def test_the_fast_path_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above do go through the fast path, most of their steps, and through
    the batched one (every later step at once, for totals that read no decision)."""
    CALLS["fast"] = CALLS["batched"] = 0
    for seed in range(24):
        with monkeypatch.context() as patch:
            test_fast_path_equals_the_scheduler(seed, patch)
    assert CALLS["fast"] > 500
    assert CALLS["batched"] > 200


def _objects(history: object, step: int) -> list[AddOnPlacementScore]:
    """The rebuilt AddOnPlacementScores at ``step`` as the hub would hold them."""
    from dsf_compile.backtest.rebuilt_scores import ABSENT
    from dsf_compile.backtest.score_history import ScoreHistory

    assert isinstance(history, ScoreHistory)
    out: list[AddOnPlacementScore] = []
    for (cluster, resource), found in history.objects.items():
        if found.state[step] == ABSENT:
            continue
        until = history.moment(int(found.until_ms[step]))
        out.append(
            AddOnPlacementScore.model_validate(
                {
                    "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
                    "kind": "AddOnPlacementScore",
                    "metadata": {"name": resource, "namespace": cluster},
                    "status": {
                        "scores": found.item_list(step),
                        "validUntil": until.strftime("%Y-%m-%dT%H:%M:%SZ"),
                    },
                }
            )
        )
    return out


@pytest.mark.parametrize("seed", range(4))
def test_step_scores_schedule_as_the_objects_do(seed: int) -> None:
    """Each step's scores, read from the history (CEL ``scores()`` included), schedule every
    Placement exactly as the same scores given as AddOnPlacementScore objects."""
    from dsf_compile.backtest.replay import StepIndex
    from dsf_compile.placement.scheduler import ScoreIndex, schedule

    rng = random.Random(seed)
    names = [f"c{i:02d}" for i in range(8)]
    clusters = [Cluster(name, labels={"zone": rng.choice("ab")}) for name in names]
    binding = global_binding()
    steps = np.arange(30, dtype=np.int64) * 60_000 + 600_000_000
    history = rebuild_all(random_history(rng, names, steps), RULES, lambda c, s: "last", steps)
    placements = [random_placement(rng, i) for i in range(4)]
    cel = Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "cel", "namespace": "default"},
            "spec": {
                "predicates": [
                    {
                        "requiredClusterSelector": {
                            "celSelector": {
                                "celExpressions": [
                                    'managedCluster.scores("alpha").exists(s, s.name == "a" && s.value > 0)'
                                ]
                            }
                        }
                    }
                ]
            },
        }
    )
    for step in range(0, 30, 3):
        at = history.moment(int(steps[step]))
        objects = ScoreIndex.of(_objects(history, step))
        read = StepIndex({}, {}, history=history, step=step, static=ScoreIndex({}, {}))
        for placement in [*placements, cel]:
            one = schedule(placement, clusters, [binding], read, (), at)
            other = schedule(placement, clusters, [binding], objects, (), at)
            assert (one.decisions, dict(one.totals), one.filtered_predicates) == (
                other.decisions,
                dict(other.totals),
                other.filtered_predicates,
            )
            assert sorted(one.warnings) == sorted(other.warnings)


def _steady_placement(
    name: str, steady: int, *, count: int = 1, annotations: dict[str, str] | None = None
) -> Placement:
    """Ranks by one AddOn score (weight 1) and Steady (``steady``); Exact mode."""
    addon = {"type": "AddOn", "addOn": {"resourceName": "alpha", "scoreName": "a"}}
    return Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}},
            "spec": {
                "numberOfClusters": count,
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [
                        {"scoreCoordinate": addon, "weight": 1},
                        {
                            "scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"},
                            "weight": steady,
                        },
                    ],
                },
            },
        }
    )


@pytest.mark.parametrize("fast", [True, False])
def test_replay_starts_from_the_given_decisions(fast: bool) -> None:
    """Steady reads the decisions given before the first step; a Placement whose scheduling
    is disabled keeps them all along; Balance counts them."""
    rng = random.Random(3)
    names = [f"c{i:02d}" for i in range(6)]
    clusters = [Cluster(name) for name in names]
    steps = np.arange(20, dtype=np.int64) * 60_000 + 600_000_000
    history = rebuild_all(random_history(rng, names, steps), RULES, lambda c, s: "last", steps)

    held = _steady_placement("held", 10)
    frozen = _steady_placement(
        "frozen",
        0,
        annotations={"cluster.open-cluster-management.io/experimental-scheduling-disable": "true"},
    )
    initial = [given_decision("held", ["c04"]), given_decision("frozen", ["c01", "c02"])]
    tracks = replay([held, frozen], clusters, [global_binding()], history, initial, fast=fast)
    by_name = {t.placement.metadata.name: t for t in tracks}
    # Steady 10 × 100 outweighs any AddOn score: the given decision is kept at every step
    assert {r.decisions for r in by_name["held"].records} == {("c04",)}
    assert {r.decisions for r in by_name["frozen"].records} == {("c01", "c02")}
    assert any("not scheduled" in w for w in by_name["frozen"].warnings)


@pytest.mark.parametrize("steady", [-10, -3, 3, 10])
def test_steady_weights_either_way(steady: int) -> None:
    """A negative Steady weight pushes the held clusters down and their totals without it
    up: the loss must look past the best by total (found by the fast path's partition)."""
    rng = random.Random(steady)
    names = [f"c{i:02d}" for i in range(12)]
    clusters = [Cluster(name) for name in names]
    steps = np.arange(40, dtype=np.int64) * 60_000 + 600_000_000
    history = rebuild_all(random_history(rng, names, steps), RULES, lambda c, s: "last", steps)
    placement = _steady_placement("p", steady, count=3)
    fast = replay([placement], clusters, [global_binding()], history, ())
    slow = replay([placement], clusters, [global_binding()], history, (), fast=False)
    assert fast[0].records == slow[0].records
    assert any(r.loss for r in slow[0].records)


@pytest.mark.parametrize("seed", range(6))
def test_fast_path_without_precomputed_tables(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the replay's budget a Placement reads its AddOn scores step by step: the same."""
    from dsf_compile.backtest import decisions as module
    from dsf_compile.backtest.fast_plan import Budget

    monkeypatch.setattr(module, "Budget", lambda: Budget(0))
    test_fast_path_equals_the_scheduler(seed, monkeypatch)


@pytest.mark.parametrize("seed", range(8))
def test_the_short_list_is_the_best_candidates_in_order(seed: int) -> None:
    """Each step's short list is its first candidates by total descending, then position,
    with their totals: also when the totals are too large for 32-bit ranking keys."""
    from dsf_compile.backtest.fast_plan import Budget, _top_table

    rng = np.random.default_rng(seed)
    steps, size = int(rng.integers(1, 40)), int(rng.integers(2, 60))
    length = int(rng.integers(1, size + 1))
    largest = [5, 200, 2**31 // size + 1, 2**30][seed % 4]  # ties, then past 32 bits
    base = rng.integers(-largest, largest + 1, (steps, size)).astype(np.int32)
    top = _top_table(base, length, Budget())
    assert top is not None
    for step in range(steps):
        expected = sorted(range(size), key=lambda c: (-int(base[step, c]), c))[:length]
        assert top.pairs[step, 0].tolist() == expected
        assert top.pairs[step, 1].tolist() == [int(base[step, c]) for c in expected]
