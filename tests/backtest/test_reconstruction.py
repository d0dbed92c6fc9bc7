"""The rebuilt AddOnPlacementScores against the spec, read literally, on random histories:
gaps, duplicate lines folded, values past ±100, a cluster appearing late."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dsf_compile.backtest.history import HistoryReader
from dsf_compile.backtest.rebuilt_scores import ABSENT, EXPIRED, VALID, ScorerRule, rebuild_object
from dsf_compile.inputs.settings import HistorySettings
from dsf_contract.agent_cli import Aggregation
from dsf_contract.placement_scores import fold_scores

RULE = ScorerRule("my_score", interval=60, dimension_format="${node}")
V = 180_000
STEPS = np.arange(0, 40 * 30_000, 30_000, dtype=np.int64) + 1_000_000

samples = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=1_300_000),
        st.one_of(
            st.floats(min_value=-1e6, max_value=1e6), st.sampled_from([-101.5, 100.0, 99.99])
        ),
    ),
    max_size=30,
)
lines = st.lists(st.tuples(st.sampled_from(["n1", "n2", "n3"]), samples), max_size=6)


def reference(
    parsed: list[tuple[str, list[tuple[int, float]]]],
    how: Aggregation,
    step_ms: int,
    fold_all: bool,
):
    """The spec, step by step: the state, validUntil and items at ``step_ms``."""
    latest = {}
    for node, points in parsed:
        before = [(t, v) for t, v in points if t <= step_ms]
        if before:
            latest[node] = max(before)
    counting = {n: tv for n, tv in latest.items() if step_ms - tv[0] <= V}
    used = counting or latest
    state = ABSENT if not latest else (VALID if counting else EXPIRED)
    until = max(t for t, _ in used.values()) + V if used else 0
    items: dict[str, list[float]] = {}
    for node, (_, value) in sorted(used.items()):  # series in label order
        if node or fold_all:
            items.setdefault("all" if fold_all else node, []).append(value)
    return state, until, {n: _value(fold_scores(v, how)) for n, v in items.items()}


def _value(score: float) -> int:
    return 100 if score >= 100 else -100 if score <= -100 else math.floor(score)


@settings(max_examples=150, deadline=None)
@given(lines, st.sampled_from(["last", "max", "min", "avg", "sum"]), st.booleans())
def test_rebuilt_objects_follow_the_spec(found: list, how: Aggregation, fold_all: bool) -> None:
    """``fold_all``: every series renders one name (``all``), folded by the aggregation."""
    reader = HistoryReader(
        frozenset({"c1"}),
        frozenset({"my_score"}),
        0,
        2_000_000,
        HistorySettings(maxBytes=10**9, maxSeries=1000, maxPoints=10**6),
    )
    merged: dict[str, dict[int, float]] = {}
    for node, points in found:  # duplicates: the later line wins a timestamp
        metric = {
            "__name__": "dynamic_score",
            "ds_cluster": "c1",
            "ds_score_name": "my_score",
            "ds_node": node,
        }
        assert reader.add(metric, [t for t, _ in points], [v for _, v in points]) is None
        for t, v in points:
            merged.setdefault(node, {})[t] = v
    series = reader.series()
    assert len(series) == len([n for n in merged if merged[n]])
    rule = ScorerRule("my_score", 60, "all") if fold_all else RULE
    rebuilt = rebuild_object(series, rule, how, STEPS)
    parsed = [(n, sorted(points.items())) for n, points in merged.items()]
    for step, moment in enumerate(STEPS.tolist()):
        state, until, items = reference(parsed, how, moment, fold_all)
        assert rebuilt.state[step] == state
        if state != ABSENT:
            assert rebuilt.until_ms[step] == until
            assert {i["name"]: i["value"] for i in rebuilt.item_list(step)} == items


@given(st.lists(st.one_of(st.floats(allow_nan=False), st.integers(-1000, 1000).map(float))))
def test_vectorized_mapping_is_the_agents(scores: list[float]) -> None:
    from dsf_contract.placement_scores import placement_value, placement_values

    mapped = placement_values(np.array(scores, dtype=np.float64)).tolist()
    assert mapped == [placement_value(s) for s in scores]
    mine = np.array(scores, dtype=np.float64)
    assert placement_values(mine, in_place=True).tolist() == mapped


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(min_value=0, max_value=1_300_000), min_size=1, max_size=20),
    st.lists(
        st.tuples(
            st.lists(st.floats(min_value=-300, max_value=300), min_size=20, max_size=20),
            st.lists(st.integers(min_value=0, max_value=1_300_000), max_size=8),
        ),
        min_size=1,
        max_size=6,
    ),
)
def test_series_sharing_times_give_each_cluster_its_own_item(
    times: list[int], clusters: list[tuple[list[float], list[int]]]
) -> None:
    """Clusters whose series share their sample times (one scrape target's: one array) have
    their items mapped together; each still gets what it gets alone, including a cluster
    whose object holds another series too (its state then differs)."""
    from dsf_compile.backtest.score_history import rebuild_all

    shared = sorted(set(times))
    reader = HistoryReader(
        frozenset(f"c{i}" for i in range(len(clusters))),
        frozenset({RULE.score_name}),
        0,
        10**13,
        HistorySettings(maxBytes=10**9, maxSeries=10**6, maxPoints=10**8),
    )
    for i, (values, _) in enumerate(clusters):  # one after the other: one array of times
        labels = {"ds_cluster": f"c{i}", "ds_score_name": RULE.score_name, "ds_node": "a"}
        assert reader.add(labels, list(shared), values[: len(shared)]) is None
    for i, (_, other) in enumerate(clusters):
        if other:  # another item of the same object: its state follows both series
            labels = {"ds_cluster": f"c{i}", "ds_score_name": RULE.score_name, "ds_node": "b"}
            extra = sorted(set(other))
            assert reader.add(labels, extra, [1.0] * len(extra)) is None
    series = reader.series()
    assert len({id(one.timestamps) for one in series if one.labels["node"] == "a"}) == 1
    history = rebuild_all(series, {RULE.score_name: RULE}, lambda c, s: "last", STEPS)
    table = history.coordinate(RULE.resource, "a")
    for cluster, row in table.clusters.items():
        alone = history.objects[cluster, RULE.resource].item_values("a")
        assert alone is not None
        assert table.values[row].tolist() == alone.tolist()
