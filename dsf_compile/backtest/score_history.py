"""The rebuilt AddOnPlacementScores of the whole fleet, read by the replay step by step.

:func:`rebuild_all` makes every (cluster, scorer) object (:mod:`.rebuilt_scores`), and
:class:`ScoreHistory` holds them; per AddOn coordinate, :class:`_CoordinateHistory` holds
every cluster's value and object state at every step, made once when a Placement first
ranks by it (rows of series sharing their times mapped together). Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np

from dsf_compile.backtest.history import Series
from dsf_compile.backtest.rebuilt_scores import (
    _MISSING,
    _ROWS_AT_ONCE,
    ABSENT,
    EXPIRED,
    VALID,
    BoolArray,
    IntArray,
    ObjectHistory,
    ScorerRule,
    Searches,
    _singles,
    rebuild_object,
)
from dsf_contract.agent_cli import Aggregation


class ScoreHistory:
    """Every rebuilt object, by (cluster, AddOnPlacementScore name)."""

    def __init__(
        self,
        objects: Mapping[tuple[str, str], ObjectHistory],
        steps: IntArray,
        searches: Searches | None = None,
    ) -> None:
        self.objects = objects
        self.steps = steps
        self.searches = searches if searches is not None else Searches(steps)
        self._times: dict[int, datetime] = {}
        self._tables: dict[tuple[str, str], _CoordinateHistory] = {}

    def moment(self, ms: int) -> datetime:
        """The time of ``ms`` (cached: the same few validUntil values recur)."""
        found = self._times.get(ms)
        if found is None:
            found = self._times[ms] = datetime.fromtimestamp(ms / 1000, UTC)
        return found

    @functools.cached_property
    def resources(self) -> frozenset[str]:
        """The AddOnPlacementScore names some cluster's object has."""
        return frozenset(resource for _, resource in self.objects)

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
    #: The AddOnPlacementScore's name.
    resource: str
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
    _rows: dict[tuple[str, ...], IntArray] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, history: ScoreHistory, resource: str, score_name: str) -> _CoordinateHistory:
        count = len(history.steps)
        rows = sorted(c for c, r in history.objects if r == resource)
        values = np.full((len(rows), count), _MISSING, dtype=np.int16)
        state = np.zeros((len(rows), count), dtype=np.int8)
        # rows whose item is one series, by that series' times: mapped together
        alike: dict[int, tuple[int, list[tuple[int, Series]]]] = {}
        for row, cluster in enumerate(rows):
            found = history.objects[cluster, resource]
            state[row] = found.state
            members = found.groups.get(score_name)
            if members is not None and len(members) == 1:
                one = members[0]
                alike.setdefault(id(one.timestamps), (found.window_ms, []))[1].append((row, one))
                continue
            item = found.item_values(score_name, history.searches)
            if item is not None:
                values[row] = item
        for window_ms, group in alike.values():
            for start in range(0, len(group), _ROWS_AT_ONCE):
                part = group[start : start + _ROWS_AT_ONCE]
                at = [row for row, _ in part]
                valid = state[at] == VALID
                values[at] = _singles([one for _, one in part], valid, history.searches, window_ms)
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
            resource,
            changed,
            effective,
            expired,
        )

    def rows_of(self, clusters: tuple[str, ...]) -> IntArray:
        """The row of each cluster (the extra, zero row for one without the object): once
        per list of clusters (the Placements of a fleet mostly share their candidates)."""
        found = self._rows.get(clusters)
        if found is None:
            none = len(self.clusters)
            rows = [self.clusters.get(c, none) for c in clusters]
            found = self._rows[clusters] = np.array(rows, dtype=np.int64)
            found.flags.writeable = False
        return found

    def gathered(self, rows: IntArray) -> tuple[np.ndarray[Any, np.dtype[np.int16]], BoolArray]:
        """Step → the scores of ``rows`` (a view when they are every row in order), and
        step → whether one was expired; made once per distinct row list (Placements over
        the same candidates share it)."""
        key = rows.tobytes()
        found = self._gathered.get(key)
        if found is None:
            whole = np.array_equal(rows, np.arange(len(rows))) and len(rows) == len(self.clusters)
            values = self.effective[:, : len(rows)] if whole else self.effective[:, rows]
            stale = self.expired_rows[:, : len(rows)] if whole else self.expired_rows[:, rows]
            any_stale = np.asarray(stale.any(axis=1), dtype=np.bool_)
            found = self._gathered[key] = (values, any_stale)
        return found

    def has_item(self) -> bool:
        """Whether some cluster's object holds this coordinate's item at some step."""
        return self._holds_item

    @functools.cached_property
    def _holds_item(self) -> bool:
        """:meth:`has_item`, looked at once: every Placement ranking by it asks."""
        return bool((self.values != _MISSING).any())

    def expired(self, step: int) -> frozenset[str]:
        """The clusters whose object of this coordinate is expired at ``step``."""
        rows = np.flatnonzero(self.state[:, step] == EXPIRED)
        names = list(self.clusters)
        return frozenset(names[r] for r in rows.tolist())

    def table(self, step: int) -> dict[str, tuple[int | None, datetime | None]]:
        """The coordinate at ``step``, as :meth:`ScoreIndex.addon_table` gives it (cluster →
        the item's value or None, validUntil), for the clusters that have the object."""
        moment, objects = self.history.moment, self.history.objects
        return {
            cluster: (
                None if value == _MISSING else value,
                moment(int(objects[cluster, self.resource].until_ms[step])),
            )
            for cluster, value, state in zip(
                self.clusters,
                self.values[:, step].tolist(),
                self.state[:, step].tolist(),
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
    searches = Searches(steps)
    objects = {
        (cluster, rules[score_name].resource): rebuild_object(
            members, rules[score_name], aggregation(cluster, score_name), steps, searches
        )
        for (cluster, score_name), members in sorted(grouped.items())
    }
    return ScoreHistory(objects, steps, searches)
