"""The AddOnPlacementScores the agents would have written, rebuilt at every step.

At a step time ``t``, a series counts when its latest sample at or before ``t`` is at
most V = 3 × the scorer's interval old; the counting series of a cluster and scorer
become the object's items through the agent's own mapping
(:mod:`dsf_contract.placement_scores`), ``validUntil`` = the newest counting sample + V.
When none counts but some series has an older sample, the object is expired: its items
come from every series' latest sample, its ``validUntil`` from the newest of those.

Computed with numpy for all steps at once: per object its state and ``validUntil`` (from
the newest sample of its series), per AddOn coordinate its items (gathered for the whole
fleet in :mod:`.score_history`); the items CEL reads, one step at a time. Memory is the samples read plus a row of steps per object and per
coordinate row, never series × steps. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


class Searches:
    """Where every step falls in an array of sample times, worked out once per array.

    The series of one scrape target share their timestamps (one array: the reader keeps
    it for the lines that repeat it), and so do these searches and what follows from them.
    Only the last few arrays are remembered: memory stays a few rows of steps.
    """

    #: Arrays remembered at a time.
    KEPT = 4

    def __init__(self, steps: IntArray) -> None:
        self.steps = steps
        self._found: dict[tuple[int, str, int], tuple[IntArray, tuple[Any, ...]]] = {}

    def _recall(self, times: IntArray, what: str, window_ms: int) -> tuple[Any, ...] | None:
        found = self._found.get((id(times), what, window_ms))
        # the array is held beside its results: its id cannot name another one meanwhile
        return found[1] if found is not None and found[0] is times else None

    def _keep(self, times: IntArray, what: str, window_ms: int, value: tuple[Any, ...]) -> None:
        if len(self._found) >= self.KEPT:
            del self._found[next(iter(self._found))]
        self._found[id(times), what, window_ms] = (times, value)

    def latest(self, times: IntArray, window_ms: int) -> tuple[IntArray, BoolArray, BoolArray]:
        """At every step: the index of the latest sample at or before it, whether there is
        one, and whether it is at most ``window_ms`` old (read-only arrays)."""
        found = self._recall(times, "latest", window_ms)
        if found is None:
            latest = np.searchsorted(times, self.steps, side="right").astype(np.int64) - 1
            seen = latest >= 0
            index = np.maximum(latest, 0)
            newest = times[index] if len(times) else np.zeros(len(self.steps), np.int64)
            found = _frozen(index, seen, seen & (self.steps - newest <= window_ms))
            self._keep(times, "latest", window_ms, found)
        return found

    def state(self, times: IntArray, window_ms: int) -> tuple[Any, IntArray]:
        """At every step: the object's state when ``times`` are its samples' times, and its
        ``validUntil`` (read-only arrays, shared by the objects with those times)."""
        found = self._recall(times, "state", window_ms)
        if found is None:
            index, seen, valid = self.latest(times, window_ms)
            newest = times[index] if len(times) else np.zeros(len(self.steps), np.int64)
            state = np.where(valid, VALID, np.where(seen, EXPIRED, ABSENT)).astype(np.int8)
            until = np.where(seen, newest + window_ms, 0).astype(np.int64)
            found = _frozen(state, until)
            self._keep(times, "state", window_ms, found)
        return found


def _frozen(*arrays: Any) -> tuple[Any, ...]:
    for array in arrays:
        array.flags.writeable = False
    return arrays


@dataclass(frozen=True)
class ObjectHistory:
    """One cluster's AddOnPlacementScore of one scorer, at every step.

    Held per step: the state and ``validUntil`` only. Items are worked out from the series
    when asked (:meth:`item_values` for every step at once, :meth:`item_list` for one), so
    that memory grows with the samples read, not with series × steps.
    """

    state: np.ndarray[Any, np.dtype[np.int8]]
    until_ms: IntArray
    #: Item name → the series rendering it, in series order (the order the agent folds in).
    groups: Mapping[str, tuple[Series, ...]]
    how: Aggregation
    window_ms: int
    steps: IntArray

    def item_values(
        self, name: str, searches: Searches | None = None
    ) -> np.ndarray[Any, np.dtype[np.int16]] | None:
        """The item's value at every step (``_MISSING`` where the object lacks it); None
        when no series renders that name."""
        members = self.groups.get(name)
        if members is None:
            return None
        valid = self.state == VALID
        searches = searches if searches is not None else Searches(self.steps)
        if len(members) == 1:
            return _single(members[0], valid, searches, self.window_ms)
        return _folded(members, valid, searches, self.window_ms, self.how)

    def item_list(self, step: int) -> list[dict[str, object]]:
        """The object's items at ``step``, sorted by name, as CEL's ``scores()`` lists them."""
        if self.state[step] == ABSENT:
            return []
        valid = bool(self.state[step] == VALID)
        values, used = self._samples.at(int(self.steps[step]), valid, self.window_ms)
        out: list[dict[str, object]] = []
        for name, members in self._samples.groups:
            picked = [values[m] for m in members if used[m]]
            if picked:
                folded = fold_scores(picked, self.how)
                if folded == folded:  # a NaN fold (inf − inf) has no value, as in the agent
                    out.append({"name": name, "value": placement_value(folded)})
        return out

    @functools.cached_property
    def _samples(self) -> _Samples:
        return _Samples.of(self.groups, self.steps)


@dataclass(frozen=True)
class _Samples:
    """Every series of an object in one sorted array, each in its own segment (series ``i``'s
    times as ``i × span + (t − origin)``): one search finds every series' latest sample at
    a moment, for CEL's ``scores()`` one step at a time."""

    keys: IntArray
    times: IntArray
    values: np.ndarray[Any, np.dtype[np.float64]]
    starts: IntArray
    bases: IntArray
    origin: int
    #: (item name, the positions of its series), in name order, series in series order.
    groups: tuple[tuple[str, range], ...]

    @classmethod
    def of(cls, groups: Mapping[str, tuple[Series, ...]], steps: IntArray) -> _Samples:
        members = [one for found in groups.values() for one in found]
        times = np.concatenate([np.zeros(0, np.int64), *(one.timestamps for one in members)])
        values = np.concatenate([np.zeros(0), *(one.values for one in members)])
        origin = int(min(times.min(initial=0), steps.min(initial=0)))
        span = int(max(times.max(initial=0), steps.max(initial=0))) - origin + 1
        sizes = np.array([len(one.timestamps) for one in members], dtype=np.int64)
        starts = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)[:-1]])
        bases = np.arange(len(members), dtype=np.int64) * span
        keys = np.repeat(bases, sizes) + (times - origin)
        placed, at = [], 0
        for name, found in groups.items():
            placed.append((name, range(at, at + len(found))))
            at += len(found)
        return cls(keys, times, values, starts[: len(members)], bases, origin, tuple(placed))

    def at(self, moment: int, valid: bool, window_ms: int) -> tuple[list[float], list[bool]]:
        """Each series' latest value at ``moment`` and whether the object uses it (a valid
        object the counting series, an expired one every series with a sample)."""
        found = np.searchsorted(self.keys, self.bases + (moment - self.origin), side="right") - 1
        used = found >= self.starts
        index = np.maximum(found, 0)
        if valid:
            used &= moment - self.times[index] <= window_ms
        values = self.values[index] if len(self.values) else np.zeros(len(index))
        return values.tolist(), used.tolist()


def rebuild_object(
    series: Sequence[Series],
    rule: ScorerRule,
    how: Aggregation,
    steps: IntArray,
    searches: Searches | None = None,
) -> ObjectHistory:
    """The object of one cluster and scorer (``series`` all of that cluster and score name).

    The newest sample of all its series decides the state at each step: the object is
    valid when that sample is at most V old (some series counts), expired when it is
    older, absent before it; ``validUntil`` is that sample + V either way.
    """
    searches = searches if searches is not None else Searches(steps)
    state, until = searches.state(_merged_times(series), rule.window_ms)
    groups: dict[str, list[Series]] = {}
    for one in series:
        name = render_dimension(
            rule.dimension_format, one.labels, cluster=one.cluster, score_name=rule.score_name
        )
        if name:  # the agent skips a result whose name renders empty
            groups.setdefault(name, []).append(one)
    members = {name: tuple(found) for name, found in sorted(groups.items())}
    return ObjectHistory(state, until, members, how, rule.window_ms, steps)


def _merged_times(series: Sequence[Series]) -> IntArray:
    """Every sample time of the series, sorted (a time several hold may repeat: the
    latest at or before a step is the same time either way)."""
    if len(series) == 1:
        return series[0].timestamps  # sorted, one sample per time
    if not series:
        return np.zeros(0, dtype=np.int64)
    return np.sort(np.concatenate([one.timestamps for one in series]))


def _picked(
    one: Series, valid: BoolArray, searches: Searches, window_ms: int
) -> tuple[IntArray, BoolArray]:
    """At every step: the index of the series' latest sample, and whether the object uses it
    (a valid object the counting series, an expired one every series with a sample)."""
    index, seen, counting = searches.latest(one.timestamps, window_ms)
    return index, np.where(valid, counting, seen)


def _single(
    one: Series, valid: BoolArray, searches: Searches, window_ms: int
) -> np.ndarray[Any, np.dtype[np.int16]]:
    """One series' item: each sample mapped once (the agent's rounding and clamping)."""
    index, used = _picked(one, valid, searches, window_ms)
    mapped = placement_values(one.values)
    return np.where(used, mapped[index], _MISSING).astype(np.int16)


#: Rows of a coordinate whose samples are mapped in one array at a time (their samples
#: copied once more: a bounded part of what was read).
_ROWS_AT_ONCE = 256


def _singles(
    members: Sequence[Series], valid: BoolArray, searches: Searches, window_ms: int
) -> np.ndarray[Any, np.dtype[np.int16]]:
    """:func:`_single` of several series sharing one array of times, at once (row by
    row: ``valid`` holds each one's object states)."""
    index, seen, counting = searches.latest(members[0].timestamps, window_ms)
    mapped = placement_values(np.stack([one.values for one in members]), in_place=True)
    used = np.where(valid, counting, seen)
    return np.where(used, mapped[:, index], _MISSING).astype(np.int16)


def _folded(
    members: Sequence[Series],
    valid: BoolArray,
    searches: Searches,
    window_ms: int,
    how: Aggregation,
) -> np.ndarray[Any, np.dtype[np.int16]]:
    """Several series rendering one name, folded at every step at once, one series after
    the other in series order (as the agent folds the results of one cycle): a running
    fold over the steps, so memory stays one row whatever the number of series."""
    count = len(searches.steps)
    held = np.zeros(count, dtype=np.int64)  # how many series the fold holds at each step
    folded = np.zeros(count, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        for one in members:
            index, used = _picked(one, valid, searches, window_ms)
            value = one.values[index]
            first = used & (held == 0)
            if how == "max":
                more = used & ~first & (value > folded)
            elif how == "min":
                more = used & ~first & (value < folded)
            elif how == "last":
                more = used
            else:  # sum, avg: added in series order, as Python's sum adds
                folded = np.where(used & ~first, folded + value, folded)
                more = first
            folded = np.where(first | more, value, folded)
            held += used
        if how == "avg":
            folded = folded / np.maximum(held, 1)
        has = (held > 0) & ~np.isnan(folded)
        mapped = placement_values(np.where(has, folded, 0.0), in_place=True)
    return np.where(has, mapped, _MISSING).astype(np.int16)
