"""The AddOnPlacementScores the agents would have written, rebuilt at every step.

At a step time ``t``, a series counts when its latest sample at or before ``t`` is at
most V = 3 × the scorer's interval old; the counting series of a cluster and scorer
become the object's items through the agent's own mapping
(:mod:`dsf_contract.placement_scores`), ``validUntil`` = the newest counting sample + V.
When none counts but some series has an older sample, the object is expired: its items
come from every series' latest sample, its ``validUntil`` from the newest of those.

Computed once for all steps, per series, with numpy: the replay then reads one step's
column. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from dsf_compile.backtest.history import Series
from dsf_contract.agent_cli import Aggregation
from dsf_contract.placement_scores import (
    fold_scores,
    placement_value,
    placement_values,
    render_dimension,
    validity_seconds,
)
from dsf_contract.summary import sanitize_score_name

#: Object states at a step.
ABSENT, VALID, EXPIRED = 0, 1, 2
_MISSING = np.iinfo(np.int16).min

IntArray = np.ndarray[Any, np.dtype[np.int64]]
BoolArray = np.ndarray[Any, np.dtype[np.bool_]]


@dataclass(frozen=True)
class ScorerRule:
    """What the mapping needs of one scorer: its score name, interval and dimension format."""

    score_name: str
    interval: int
    dimension_format: str

    @property
    def resource(self) -> str:
        """The AddOnPlacementScore's name (the sanitized score name)."""
        return sanitize_score_name(self.score_name)

    @property
    def window_ms(self) -> int:
        """V, the validity window, in milliseconds."""
        return validity_seconds(self.interval) * 1000


@dataclass(frozen=True)
class ObjectHistory:
    """One cluster's AddOnPlacementScore of one scorer, at every step."""

    state: np.ndarray[Any, np.dtype[np.int8]]
    until_ms: IntArray
    #: Item name → its value at every step (``_MISSING`` where the object lacks it).
    items: Mapping[str, np.ndarray[Any, np.dtype[np.int16]]]

    def item_list(self, step: int) -> list[dict[str, object]]:
        """The object's items at ``step``, sorted by name, as CEL's ``scores()`` lists them."""
        return [
            {"name": name, "value": int(values[step])}
            for name, values in self.items.items()
            if values[step] != _MISSING
        ]


@dataclass(frozen=True)
class _Seen:
    """One series at every step: the index of its latest sample (−1: none) and whether it counts."""

    series: Series
    latest: IntArray
    counting: BoolArray


def rebuild_object(
    series: Sequence[Series],
    rule: ScorerRule,
    how: Aggregation,
    steps: IntArray,
) -> ObjectHistory:
    """The object of one cluster and scorer (``series`` all of that cluster and score name)."""
    seen = [_seen(one, steps, rule.window_ms) for one in series]
    valid = np.zeros(len(steps), dtype=np.bool_)
    ever = np.zeros(len(steps), dtype=np.bool_)
    for one in seen:
        valid |= one.counting
        ever |= one.latest >= 0
    state = np.where(valid, VALID, np.where(ever, EXPIRED, ABSENT)).astype(np.int8)
    newest = np.full(len(steps), -1, dtype=np.int64)
    used: list[BoolArray] = []
    for one in seen:
        mask = np.where(valid, one.counting, one.latest >= 0)
        used.append(mask)
        times = one.series.timestamps[np.maximum(one.latest, 0)]
        newest = np.where(mask, np.maximum(newest, times), newest)
    until = np.where(state != ABSENT, newest + rule.window_ms, 0)
    items = _items(seen, used, rule, how, len(steps))
    return ObjectHistory(state, until, dict(sorted(items.items())))


def _seen(one: Series, steps: IntArray, window_ms: int) -> _Seen:
    latest = np.searchsorted(one.timestamps, steps, side="right").astype(np.int64) - 1
    age = steps - one.timestamps[np.maximum(latest, 0)]
    return _Seen(one, latest, (latest >= 0) & (age <= window_ms))


def _items(
    seen: Sequence[_Seen],
    used: Sequence[BoolArray],
    rule: ScorerRule,
    how: Aggregation,
    count: int,
) -> dict[str, np.ndarray[Any, np.dtype[np.int16]]]:
    """Each item's value at every step: the series rendering its name, folded."""
    groups: dict[str, list[int]] = {}
    for position, one in enumerate(seen):
        name = render_dimension(
            rule.dimension_format,
            one.series.labels,
            cluster=one.series.cluster,
            score_name=rule.score_name,
        )
        if name:  # the agent skips a result whose name renders empty
            groups.setdefault(name, []).append(position)
    out = {}
    for name, members in groups.items():
        if len(members) == 1:
            out[name] = _single(seen[members[0]], used[members[0]])
        else:
            out[name] = _folded([seen[m] for m in members], [used[m] for m in members], how, count)
    return out


def _single(one: _Seen, used: BoolArray) -> np.ndarray[Any, np.dtype[np.int16]]:
    """One series' item: each sample mapped once (the agent's rounding and clamping)."""
    mapped = placement_values(one.series.values)
    picked = mapped[np.maximum(one.latest, 0)]
    return np.where(used, picked, _MISSING).astype(np.int16)


def _folded(
    members: Sequence[_Seen], used: Sequence[BoolArray], how: Aggregation, count: int
) -> np.ndarray[Any, np.dtype[np.int16]]:
    """Several series rendering one name: folded at each step in series order, as the agent
    folds the results of one cycle."""
    out = np.full(count, _MISSING, dtype=np.int16)
    for step in range(count):
        values = [
            float(one.series.values[one.latest[step]])
            for one, mask in zip(members, used, strict=True)
            if mask[step]
        ]
        if values:
            folded = fold_scores(values, how)
            if folded == folded:  # a NaN fold (inf − inf) has no value, as in the agent
                out[step] = placement_value(folded)
    return out


# ------------------------------------------------------------------ per step


class ScoreHistory:
    """Every rebuilt object, by (cluster, AddOnPlacementScore name)."""

    def __init__(self, objects: Mapping[tuple[str, str], ObjectHistory], steps: IntArray) -> None:
        self.objects = objects
        self.steps = steps
        self._times: dict[int, datetime] = {}
        self._tables: dict[tuple[str, str], _CoordinateHistory] = {}

    def moment(self, ms: int) -> datetime:
        """The time of ``ms`` (cached: the same few validUntil values recur)."""
        found = self._times.get(ms)
        if found is None:
            found = self._times[ms] = datetime.fromtimestamp(ms / 1000, UTC)
        return found

    def coordinate(self, resource: str, score_name: str) -> _CoordinateHistory:
        """One AddOn coordinate's value and object state for every cluster and step."""
        key = (resource, score_name)
        found = self._tables.get(key)
        if found is None:
            found = self._tables[key] = _CoordinateHistory.of(self, resource, score_name)
        return found


@dataclass(frozen=True)
class _CoordinateHistory:
    """An AddOn coordinate over the clusters that have its object (rows) and the steps."""

    history: ScoreHistory
    clusters: Mapping[str, int]
    values: np.ndarray[Any, np.dtype[np.int16]]
    state: np.ndarray[Any, np.dtype[np.int8]]
    until_ms: IntArray
    #: Steps at which some cluster's (value, state) differs from the step before.
    changed: BoolArray
    #: Step → each row's AddOn score (0 when absent, missing or expired); one more row, 0,
    #: for the clusters without the object. Contiguous per step for the fast path.
    effective: np.ndarray[Any, np.dtype[np.int16]]
    #: Step → each row's object is expired (the extra row: False).
    expired_rows: np.ndarray[Any, np.dtype[np.bool_]]
    _gathered: dict[bytes, tuple[Any, BoolArray]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @classmethod
    def of(cls, history: ScoreHistory, resource: str, score_name: str) -> _CoordinateHistory:
        count = len(history.steps)
        rows = sorted(c for c, r in history.objects if r == resource)
        values = np.full((len(rows), count), _MISSING, dtype=np.int16)
        state = np.zeros((len(rows), count), dtype=np.int8)
        until = np.zeros((len(rows), count), dtype=np.int64)
        for row, cluster in enumerate(rows):
            found = history.objects[cluster, resource]
            state[row] = found.state
            until[row] = found.until_ms
            item = found.items.get(score_name)
            if item is not None:
                values[row] = item
        changed = np.zeros(count, dtype=np.bool_)
        if count > 1 and rows:
            moved = (values[:, 1:] != values[:, :-1]) | (state[:, 1:] != state[:, :-1])
            changed[1:] = moved.any(axis=0)
        valid = (state == VALID) & (values != _MISSING)
        effective = np.zeros((count, len(rows) + 1), dtype=np.int16)
        effective[:, : len(rows)] = np.where(valid, values, 0).T
        expired = np.zeros((count, len(rows) + 1), dtype=np.bool_)
        expired[:, : len(rows)] = (state == EXPIRED).T
        return cls(
            history,
            {c: i for i, c in enumerate(rows)},
            values,
            state,
            until,
            changed,
            effective,
            expired,
        )

    def gathered(self, rows: IntArray) -> tuple[np.ndarray[Any, np.dtype[np.int32]], BoolArray]:
        """Step → the scores of ``rows`` (int32), and step → whether one was expired;
        made once per distinct row list (Placements over the same candidates share it)."""
        key = rows.tobytes()
        found = self._gathered.get(key)
        if found is None:
            whole = np.array_equal(rows, np.arange(len(rows))) and len(rows) == len(self.clusters)
            values = self.effective[:, : len(rows)] if whole else self.effective[:, rows]
            stale = self.expired_rows[:, : len(rows)] if whole else self.expired_rows[:, rows]
            any_stale = np.asarray(stale.any(axis=1), dtype=np.bool_)
            found = self._gathered[key] = (values.astype(np.int32), any_stale)
        return found

    def expired(self, step: int) -> frozenset[str]:
        """The clusters whose object of this coordinate is expired at ``step``."""
        rows = np.flatnonzero(self.state[:, step] == EXPIRED)
        names = list(self.clusters)
        return frozenset(names[r] for r in rows.tolist())

    def table(self, step: int) -> dict[str, tuple[int | None, datetime | None]]:
        """The coordinate at ``step``, as :meth:`ScoreIndex.addon_table` gives it (cluster →
        the item's value or None, validUntil), for the clusters that have the object."""
        moment = self.history.moment
        return {
            cluster: (None if value == _MISSING else value, moment(until))
            for cluster, value, state, until in zip(
                self.clusters,
                self.values[:, step].tolist(),
                self.state[:, step].tolist(),
                self.until_ms[:, step].tolist(),
                strict=True,
            )
            if state != ABSENT
        }


def rebuild_all(
    series: Sequence[Series],
    rules: Mapping[str, ScorerRule],
    aggregation: Callable[[str, str], Aggregation],
    steps: IntArray,
) -> ScoreHistory:
    """Every (cluster, scorer) object; ``aggregation(cluster, score_name)`` is the fold the
    cluster's agent uses (``agent.aggregate`` and the overrides that select it)."""
    grouped: dict[tuple[str, str], list[Series]] = {}
    for one in series:
        if one.score_name in rules:
            grouped.setdefault((one.cluster, one.score_name), []).append(one)
    objects = {
        (cluster, rules[score_name].resource): rebuild_object(
            members, rules[score_name], aggregation(cluster, score_name), steps
        )
        for (cluster, score_name), members in sorted(grouped.items())
    }
    return ScoreHistory(objects, steps)
