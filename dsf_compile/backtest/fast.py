"""Steps 5 and 6 of the scheduler without it, for Placements whose candidates are fixed.

With a Placement's :class:`~dsf_compile.backtest.fast_plan.FastPlan` (its candidates
stay the ones its first call left: :mod:`.fast_plan`), the totals, the ranking (total
descending, name ascending), the decisions, the margin and the loss are what
:func:`~dsf_compile.placement.scheduler.schedule` gives; the replay checks it on the
first call and keeps the scheduler itself for any Placement where they differ.

At a step, only the clusters some PlacementDecision holds (:class:`Held`) have a Balance
or Steady score other than the one every other candidate shares (Balance 100 for a
cluster nobody decided, Steady 0 for one this Placement did not): the best candidates are
therefore among the held ones and the best of the rest by their AddOn and constant terms
alone, which are ranked once for all steps (``FastPlan.top``). A step then ranks that
short list instead of every candidate, and ranks them all when too many held clusters
crowd the short list.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np

from dsf_compile.backtest.fast_plan import (
    BATCH_STEPS,
    FastPlan,
    IntArray,
    StepRecord,
    Top,
    positions_of,
)
from dsf_compile.placement.prioritizers import balance_score, steady_score


class Own(NamedTuple):
    """One Placement's decisions in the replay: per fleet cluster (``vector``), and the
    clusters they hold with their counts (``counts``: a handful)."""

    vector: IntArray
    counts: dict[int, int]

    @classmethod
    def of(cls, positions: Sequence[int], size: int) -> Own:
        """From the fleet positions of the decided clusters (one per decision)."""
        counts: dict[int, int] = {}
        for position in positions:
            counts[position] = counts.get(position, 0) + 1
        vector = np.zeros(size, dtype=np.int64)
        if counts:
            vector[list(counts)] = list(counts.values())
        return cls(vector, counts)


class _Scan:
    """One step's short list as one version of the decisions splits it: its free
    candidates in order, as :func:`_shortlisted` ranks them ((−value, candidate, value)),
    and the held ones among them (value, candidate, fleet position, decision count, how
    many free ones come before it), read as far as a Placement has needed."""

    def __init__(
        self, step: int, pairs: IntArray, positions: list[int], counts: Mapping[int, int]
    ) -> None:
        self.step, self.pairs, self.positions, self.counts = step, pairs, positions, counts
        self.free: list[tuple[int, int, int]] = []
        self.held: list[tuple[int, int, int, int, int]] = []
        self.read = 0

    def upto(self, wanted: int) -> bool:
        """Read until ``wanted`` free candidates are known; False when the list has fewer."""
        free, held, positions, counts = self.free, self.held, self.positions, self.counts
        length = self.pairs.shape[1]
        while len(free) < wanted and self.read < length:
            end = min(length, self.read + wanted + _SCAN_MORE)
            ids, values = self.pairs[:, self.read : end].tolist()
            for candidate, value in zip(ids, values, strict=True):
                position = positions[candidate]
                count = counts.get(position)
                if count is None:
                    free.append((-value, candidate, value))
                else:
                    held.append((value, candidate, position, count, len(free)))
            self.read = end
        return len(free) >= wanted


@dataclass(frozen=True)
class Held:
    """Every Placement's decisions at one version of the replay (:attr:`version`): how many
    decisions hold each fleet cluster (``total``), and the same for the clusters some
    decision holds (``counts``, and ``ranked``: (count, cluster) by count descending). The
    only clusters whose Balance and Steady scores are not the ones every other candidate
    shares."""

    version: int
    total: IntArray
    counts: dict[int, int]
    ranked: list[tuple[int, int]]
    #: id of a Placement's own counts → :meth:`balance` for it (its counts do not change
    #: within a version: the version moves when they do).
    _balances: dict[int, list[int]] = field(default_factory=dict, compare=False, repr=False)
    #: id of a short list → its :class:`_Scan` at the step last asked.
    _scans: dict[int, _Scan] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, version: int, total: IntArray) -> Held:
        """From the count vector (copied: the replay updates its own in place)."""
        positions = np.flatnonzero(total)
        counts = dict(zip(positions.tolist(), total[positions].tolist(), strict=True))
        ranked = sorted(((n, p) for p, n in counts.items()), reverse=True)
        return cls(version, total.copy(), counts, ranked)

    def scan(self, top: Top, step: int, positions: list[int]) -> _Scan:
        """The short list ``top`` at ``step`` split by the clusters held at this version:
        one scan for the Placements sharing the list (and so their candidates)."""
        found = self._scans.get(id(top))
        if found is None or found.step != step:
            found = self._scans[id(top)] = _Scan(step, top.pairs[step], positions, self.counts)
        return found

    def balance(self, own: Mapping[int, int]) -> list[int]:
        """Count of the other Placements' decisions → Balance, for a Placement holding
        ``own`` (:func:`_balance_table` at :meth:`most`)."""
        found = self._balances.get(id(own))
        if found is None:
            found = self._balances[id(own)] = _balance_list(self.most(own))
        return found

    def most(self, own: Mapping[int, int]) -> int:
        """The largest count of the other Placements' decisions on a cluster (Balance's
        ``max``), for a Placement holding ``own``."""
        most = 0
        for count, position in self.ranked:
            mine = own.get(position, 0)
            most = max(most, count - mine)
            if not mine:  # every cluster after this one has at most its count
                break
        return most


def fast_step(plan: FastPlan, step: int, own: Own, held: Held) -> StepRecord:
    """Steps 5 and 6 at ``step``: ``own`` counts, per fleet cluster, this Placement's
    decisions, ``held`` every Placement's. Over the short list when the plan has one and
    it holds enough clusters nobody decided, else over every candidate."""
    if plan.top is not None and plan.balance >= 0:
        found = _shortlisted(plan, plan.top, step, own.counts, held)
        if found is not None:
            return found
    return _every(plan, step, own.vector, held.total - own.vector)


#: Steady's score for a cluster the Placement holds.
_STEADY = steady_score(True)
#: Candidates of the short list read at a time beyond ``wanted + 1`` and the own ones.
_SCAN_MORE = 4


def _shortlisted(
    plan: FastPlan, top: Top, step: int, own: Mapping[int, int], held: Held
) -> StepRecord | None:
    """Step 6 over the short list's first ``wanted + 1`` free candidates (no decision holds
    them), the held ones before them that can reach them, and the Placement's own clusters
    wherever they rank.

    Every free candidate has the same Balance and Steady terms (Balance 100, Steady 0),
    and a candidate that other Placements hold has a lower Balance (with a weight ≥ 0)
    and no Steady: any candidate after those ``wanted + 1`` in the short list, own ones
    aside, is behind all of them with and without the Steady term, so it is neither
    decided, nor the best left out, nor among the best ``wanted`` without Steady; so is
    a held one before them whose best Balance cannot bring it level with the last of them.
    None when the short list holds fewer than ``wanted + 1`` free candidates (rank them
    all). The list is read once per step and version for the Placements sharing it.

    In plain Python: a few clusters, where numpy's calls would cost more than the work.
    Every total is taken less the free candidates' Balance term (``rest``): the same
    ranking, margin and loss (a difference of sums of ``wanted`` totals each), and the
    free candidates' entries as the scan made them.
    """
    assert plan.base_steps is not None and plan.expired_steps is not None
    wanted = plan.wanted
    scan = held.scan(top, step, plan.fleet_positions)
    if len(scan.free) <= wanted and not scan.upto(wanted + 1):
        return None
    table = held.balance(own)
    balance = plan.balance
    rest = balance * table[0]
    # (−total, candidate, total without Steady), less ``rest``, of every cluster looked at
    pool = scan.free[: wanted + 1]
    # a held candidate (not this Placement's) reaches at most this Balance term: behind
    # the wanted + 1-th free one by more, it is behind all of them (so are those after it)
    threshold = pool[wanted][2] + rest - (balance * table[1] if len(table) > 1 else rest)
    for value, candidate, position, count, before in scan.held:
        if before > wanted or value < threshold:
            break
        if position not in own:
            plain = balance * table[count] - rest
            pool.append((-value - plain, candidate, value + plain))
    base = plan.base_steps
    steady = plan.steady * _STEADY
    for position, mine in own.items():
        at = plan.candidate_at.get(position)
        if at is not None:
            value = base.item(step, at)
            plain = balance * table[held.counts[position] - mine] - rest
            pool.append((-value - plain - steady, at, value + plain))
    return _ranked(plan, pool, plan.expired_steps[step])


def _ranked(plan: FastPlan, pool: list[tuple[int, int, int]], expired: bool) -> StepRecord:
    """Step 6 over ``pool`` ((−total, candidate, total without Steady) of every candidate
    that can matter): the decided, the margin over the best left out, and the loss."""
    wanted = plan.wanted
    pool.sort()  # total descending, then name: the candidates are sorted by name
    chosen = pool[:wanted]
    margin = pool[wanted][0] - chosen[-1][0]
    loss = 0
    if plan.steady:  # else the totals are the totals without it: the decided are the best
        plains = list(map(_PLAIN, pool))
        plains.sort(reverse=True)
        loss = sum(plains[:wanted]) - sum(map(_PLAIN, chosen))
    names = plan.candidates
    decided = tuple([names[i] for i in sorted(map(_CANDIDATE, chosen))])
    return StepRecord(decided, margin, loss, expired)


#: A pool entry's candidate, and its total without Steady.
_CANDIDATE, _PLAIN = operator.itemgetter(1), operator.itemgetter(2)


def _every(plan: FastPlan, step: int, own: IntArray, others: IntArray) -> StepRecord:
    """Steps 5 and 6 over every candidate: ``own`` and ``others`` count, per fleet cluster,
    this Placement's decisions and every other's."""
    if plan.base_steps is not None and plan.expired_steps is not None:
        totals = plan.base_steps[step].astype(np.int64)
        expired = bool(plan.expired_steps[step])
    else:
        totals = plan.constant.copy()
        expired = False
        for term in plan.addon:
            totals += term.weight * term.coordinate.effective[step][term.rows]
            expired = expired or bool(term.coordinate.expired_rows[step][term.rows].any())
    if plan.balance:
        totals = totals + plan.balance * _balance(others, plan.positions)
    plain = totals  # the totals without the Steady term (meanLoss)
    held = 0  # candidates whose total carries a Steady term
    if plan.steady:
        mask = own[plan.positions] > 0
        held = int(np.count_nonzero(mask))
        totals = plain + (plan.steady * steady_score(True)) * mask
    return _select(plan, totals, plain, held, expired)


def _select(
    plan: FastPlan, totals: IntArray, plain: IntArray, held: int, expired: bool
) -> StepRecord:
    """Step 6: the best ``numberOfClusters`` by total descending, then name ascending (the
    candidates are sorted by name); the margin over the best left out, and the loss.

    One partition finds the best ``wanted + held`` by total: the decided, the best left out,
    and every cluster that can be among the best ``wanted`` without the Steady term (with
    a positive Steady weight, a cluster beyond them has at least ``wanted`` clusters
    without that term ahead of it; with a negative one, every cluster is looked at).
    """
    size = len(totals)
    wanted = plan.wanted
    if wanted == size:  # every candidate decided: nothing left out, nothing lost
        return StepRecord(plan.candidates, None, 0, expired)
    if wanted == 0:
        return StepRecord((), None, 0, expired)
    # one integer orders both ways: higher total first, then the lower name position
    order = -totals * size + positions_of(size)
    top = size if plan.steady < 0 else min(size, wanted + max(held, 1))
    part = np.argpartition(order, top - 1)[:top]
    part = part[np.argsort(order[part])]
    chosen, first_out = part[:wanted], part[wanted]
    margin = int(totals[chosen].min() - totals[first_out])
    best = np.sort(plain[part])[::-1][:wanted]
    loss = int(best.sum() - plain[chosen].sum())
    decided = tuple(sorted(plan.candidates[i] for i in chosen.tolist()))
    return StepRecord(decided, margin, loss, expired)


def fast_steps(plan: FastPlan, first: int, count: int) -> list[StepRecord] | None:
    """Steps ``first`` to ``count − 1`` at once, for a plan whose totals read no decision
    (no Steady, no Balance) and were precomputed: what :func:`fast_step` gives at each
    (None for any other plan)."""
    if plan.steady or plan.balance or plan.base_steps is None or plan.expired_steps is None:
        return None
    size = len(plan.candidates)
    wanted = plan.wanted
    expired = plan.expired_steps
    if wanted in (0, size):
        decided = plan.candidates if wanted else ()
        return [StepRecord(decided, None, 0, expired[k]) for k in range(first, count)]
    records: list[StepRecord] = []
    last: tuple[str, ...] = ()
    for start in range(first, count, BATCH_STEPS):
        end = min(count, start + BATCH_STEPS)
        chosen, margins = _best(plan, plan.base_steps[start:end], wanted)
        moved = np.ones(len(chosen), dtype=np.bool_)
        moved[1:] = (chosen[1:] != chosen[:-1]).any(axis=1)
        if records:
            moved[0] = tuple(plan.candidates[i] for i in chosen[0].tolist()) != last
        for row, change, margin, stale in zip(
            chosen.tolist(), moved.tolist(), margins.tolist(), expired[start:end], strict=True
        ):
            if change:  # the same tuple otherwise: the replay sees its decisions did not move
                last = tuple(plan.candidates[i] for i in row)
            records.append(StepRecord(last, margin, 0, stale))
    return records


def _best(
    plan: FastPlan, base: np.ndarray[Any, np.dtype[np.int32]], wanted: int
) -> tuple[IntArray, IntArray]:
    """Per step (row): the decided candidates' positions, sorted, and the margin — step 6
    as :func:`_select` takes it, over all the rows at once."""
    size = len(plan.candidates)
    totals = base.astype(np.int64)
    order = -totals * size + positions_of(size)
    part = np.argpartition(order, wanted, axis=1)[:, : wanted + 1]
    part = np.take_along_axis(part, np.argsort(np.take_along_axis(order, part, 1), 1), 1)
    chosen = np.sort(part[:, :wanted], axis=1)
    margins = np.take_along_axis(totals, chosen, 1).min(axis=1)
    margins -= np.take_along_axis(totals, part[:, wanted : wanted + 1], 1)[:, 0]
    return chosen, margins


def _balance(others: IntArray, positions: IntArray) -> IntArray:
    """OCM's Balance: ``2 × trunc(100 × (0.5 − n / max))``, 100 for a cluster with none."""
    most = int(others.max()) if len(others) else 0
    return _balance_table(most)[others[positions]]


_BALANCE_TABLES: dict[int, IntArray] = {}
_BALANCE_LISTS: dict[int, list[int]] = {}


def _balance_list(most: int) -> list[int]:
    """:func:`_balance_table` as a list (read one score at a time)."""
    found = _BALANCE_LISTS.get(most)
    if found is None:
        found = _BALANCE_LISTS[most] = _balance_table(most).tolist()
    return found


def _balance_table(most: int) -> IntArray:
    """Count → Balance score when the largest count is ``most``: computed once per ``most``
    with the scheduler's own formula, then looked up (counts never exceed ``most``)."""
    found = _BALANCE_TABLES.get(most)
    if found is None:
        scores = [balance_score(count, most) for count in range(most + 1)]
        found = _BALANCE_TABLES[most] = np.array(scores, dtype=np.int64)
    return found
