"""The replay, with every shortcut it takes (steps skipped when no input moved, the
vectorized and short-list steps, the tables shared between Placements), gives the same
records and the same report as the straightforward replay: every Placement scheduled by
the scheduler at every step, in namespace/name order, against the decisions as the steps
before have left them.

Fleets vary: up to 80 clusters, Placements with Balance and Steady (either sign),
resource prioritizers, a coordinate twice, numberOfClusters or none, predicates,
decision groups, clusters without some score, expiry, ``NoSelectIfNew`` taints, initial
decisions (of the replayed Placements and of others). The short list is made as short
as a few candidates, so that it is used at many steps and too short at others (too many
held clusters in it: every candidate is ranked then).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from dsf_compile.backtest import fast, fast_plan
from dsf_compile.backtest.fast_plan import StepRecord
from dsf_compile.backtest.history import HistoryReader
from dsf_compile.backtest.replay import Track, _inputs_of, _lasting, _record, replay
from dsf_compile.backtest.report import Window, summarize
from dsf_compile.backtest.score_history import ScoreHistory, rebuild_all
from dsf_compile.inputs.placements import (
    PLACEMENT_API_VERSION,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
)
from dsf_compile.inputs.settings import HistorySettings
from dsf_compile.placement.scheduler import Cluster, PlacementResult, schedule
from dsf_contract.agent_cli import Aggregation
from tests.backtest.random_fleets import (
    RULES,
    addon_terms,
    given_decision,
    global_binding,
    random_cluster,
    random_history,
    random_placement,
)

STEPS = 45
START_MS = 600_000_000
SHORTLIST_USE = {"short": 0, "too short": 0}


def _objects(namespace: str, result: PlacementResult) -> tuple[PlacementDecision, ...]:
    """The PlacementDecisions the hub holds after ``result``, as OCM writes them."""
    return tuple(
        PlacementDecision.model_validate(
            {
                "apiVersion": PLACEMENT_API_VERSION,
                "kind": "PlacementDecision",
                "metadata": {"name": o.name, "namespace": namespace, "labels": dict(o.labels)},
                "status": {"decisions": [{"clusterName": c, "reason": ""} for c in o.clusters]},
            }
        )
        for o in result.placement_decisions
    )


def naive_replay(
    placements: Sequence[Placement],
    clusters: Sequence[Cluster],
    bindings: Sequence[ManagedClusterSetBinding],
    history: ScoreHistory,
    initial: Sequence[PlacementDecision],
) -> list[Track]:
    """Every Placement scheduled at every step, as ``docs/backtest.md`` says the replay is."""
    ordered = sorted(placements, key=lambda p: (p.metadata.namespace, p.metadata.name))
    keys = [(p.metadata.namespace, p.metadata.name) for p in ordered]
    held: dict[tuple[str, str], tuple[PlacementDecision, ...]] = {
        key: tuple(d for d in initial if (d.metadata.namespace, d.placement_name) == key)
        for key in keys
    }
    foreign = tuple(d for d in initial if (d.metadata.namespace, d.placement_name) not in held)
    tracks = [Track(p) for p in ordered]
    for step in range(len(history.steps)):
        at = history.moment(int(history.steps[step]))
        objects = history_objects(history, step)
        for key, track in zip(keys, tracks, strict=True):
            decisions = (*foreign, *(d for k in keys for d in held[k]))
            result = schedule(track.placement, clusters, bindings, objects, decisions, at)
            track.records.append(_record(result, _inputs_of(track.placement), history, step))
            track.warnings.update(_lasting(result))
            held[key] = _objects(key[0], result)
    return tracks


def history_objects(history: ScoreHistory, step: int) -> Any:
    """The step's AddOnPlacementScores as the replay's scheduler reads them."""
    from dsf_compile.backtest.replay import StepIndex
    from dsf_compile.placement.scheduler import ScoreIndex

    return StepIndex({}, {}, history=history, step=step, static=ScoreIndex({}, {}))


def _fleet(rng: random.Random) -> tuple[list[Cluster], list[Placement], list[Any], ScoreHistory]:
    names = [f"c{i:02d}" for i in range(rng.randint(4, 80))]
    # a cluster taking no new Placement keeps the Placements that may pick it off the
    # fast path: in some fleets only
    tainted = rng.choice(names) if rng.random() < 0.2 else None
    clusters = [random_cluster(rng, name, tainted=name == tainted) for name in names]
    steps = np.arange(STEPS, dtype=np.int64) * 60_000 + START_MS
    how: Aggregation = rng.choice(["max", "last", "sum"])
    history = rebuild_all(random_history(rng, names, steps), RULES, lambda c, s: how, steps)
    placements = [
        random_placement(rng, i) if rng.random() < 0.3 else _ranking(rng, i)
        for i in range(rng.randint(1, 5))
    ]
    initial = [
        given_decision(p.metadata.name, rng.sample(names, rng.randint(1, 3)))
        for p in placements
        if rng.random() < 0.4
    ]
    if rng.random() < 0.3:  # a Placement not in placements/: Balance counts its decisions
        initial.append(given_decision("elsewhere", rng.sample(names, 2)))
    return clusters, placements, initial, history


def _ranking(rng: random.Random, index: int) -> Placement:
    """A Placement ranking by AddOn scores with Balance and Steady (Additive's defaults or
    configured, either sign): scheduled step by step, by the short list when it can."""
    configurations = addon_terms(rng, [-1, 1, 2, 3])
    for builtin in ("Steady", "Balance", "ResourceAllocatableCPU"):
        if rng.random() < 0.3:
            weight = rng.choice([-2, 1, 1, 3]) if builtin != "ResourceAllocatableCPU" else 1
            configurations.append(
                {"scoreCoordinate": {"type": "BuiltIn", "builtIn": builtin}, "weight": weight}
            )
    spec: dict[str, Any] = {
        "numberOfClusters": rng.randint(1, 4),
        "prioritizerPolicy": {"mode": "Additive", "configurations": configurations},
    }
    return Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": f"r{index}", "namespace": "default"},
            "spec": spec,
        }
    )


def _counted(monkeypatch: pytest.MonkeyPatch, spare: int) -> None:
    """A short list ``spare`` candidates longer than the decided and the best left out, and
    how often it was used or too short."""
    monkeypatch.setattr(fast_plan, "SHORTLIST_SPARE", spare)
    monkeypatch.setattr(fast_plan, "SHORTLIST_ROUND", 1)
    shortlisted = fast._shortlisted

    def counted(*args: Any) -> StepRecord | None:
        found = shortlisted(*args)
        SHORTLIST_USE["short" if found is not None else "too short"] += 1
        return found

    monkeypatch.setattr(fast, "_shortlisted", counted)


@pytest.mark.parametrize("seed", range(30))
def test_the_replay_is_the_naive_replay(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    _counted(monkeypatch, rng.choice([0, 2, 4, 8, 16]))
    clusters, placements, initial, history = _fleet(rng)
    bindings = [global_binding()]
    fast_tracks = replay(placements, clusters, bindings, history, initial)
    naive = naive_replay(placements, clusters, bindings, history, initial)
    window = Window(START_MS // 1000, START_MS // 1000 + (STEPS - 1) * 60, 60, STEPS)
    for one, other in zip(fast_tracks, naive, strict=True):
        name = one.placement.metadata.name
        assert one.records == other.records, name
        assert one.warnings == other.warnings, name
        assert summarize(one, window) == summarize(other, window), name


def test_the_short_list_is_used_and_sometimes_too_short(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparisons above go through the short list at many of their fast steps, and
    through the ranking of every candidate when it is too short."""
    SHORTLIST_USE.update({"short": 0, "too short": 0})
    for seed in range(30):
        with monkeypatch.context() as patch:
            test_the_replay_is_the_naive_replay(seed, patch)
    assert SHORTLIST_USE["short"] > 600
    assert SHORTLIST_USE["too short"] > 200


@pytest.mark.parametrize("fast_path", [True, False])
def test_a_step_after_its_own_change_is_scheduled_again(fast_path: bool) -> None:
    """Scores that do not move, and a Placement that moves from its given decision to the
    best cluster at the first step: the second step reads the new decision (Steady counts
    it now), so it is scheduled again, not taken to be the first one again."""
    names = [f"c{i:02d}" for i in range(6)]
    clusters = [Cluster(name) for name in names]
    steps = np.arange(4, dtype=np.int64) * 60_000 + START_MS
    reader = HistoryReader(
        frozenset(names),
        frozenset(RULES),
        0,
        10**13,
        HistorySettings(maxBytes=10**9, maxSeries=10**6, maxPoints=10**8),
    )
    for value, cluster in enumerate(names):
        metric = {"__name__": "dynamic_score", "ds_cluster": cluster, "ds_score_name": "alpha"}
        metric["ds_node"] = "a"
        assert reader.add(metric, [int(t) for t in steps], [10.0 * value] * len(steps)) is None
    history = rebuild_all(reader.series(), RULES, lambda c, s: "last", steps)
    placement = Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "numberOfClusters": 1,
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [
                        {
                            "scoreCoordinate": {
                                "type": "AddOn",
                                "addOn": {"resourceName": "alpha", "scoreName": "a"},
                            },
                            "weight": 3,
                        },
                        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": "Steady"}, "weight": 1},
                    ],
                },
            },
        }
    )
    initial = [given_decision("p", ["c00"])]
    tracks = replay([placement], clusters, [global_binding()], history, initial, fast=fast_path)
    naive = naive_replay([placement], clusters, [global_binding()], history, initial)
    records = tracks[0].records
    assert [r.decisions for r in records] == [("c05",)] * 4
    # c05 (3 × 50) beats c00 (0 + 100 Steady) by 30 over c04 (3 × 40); then holds by 130
    assert [r.margin for r in records] == [30, 130, 130, 130]
    assert records == naive[0].records
