"""Steps 5 and 6 of the scheduler without it, for Placements whose candidates are fixed.

A Placement is first scheduled by :func:`~dsf_compile.placement.scheduler.schedule`. When
nothing of steps 1 to 3 can change between steps — no CEL expression reads ``scores()``,
no toleration has ``tolerationSeconds``, no candidate pool cluster carries a
``NoSelectIfNew`` taint, the Placement is simulated and not misconfigured — its candidates
stay the ones that call left, and each later step only moves the scores: ``AddOn`` (the
rebuilt items, 0 when missing or expired), ``Steady`` (its own decisions), ``Balance``
(the others' decision counts, in float64 and truncated as OCM computes it) and the
resource prioritizers (constant over fixed candidates, taken from that call). The totals,
the ranking (total descending, name ascending), the decisions, the margin and the loss
are then what :func:`schedule` gives; :func:`plan_for` checks it on the first call and
keeps the scheduler itself for any Placement where they differ.

At a step, only the clusters some PlacementDecision holds (:class:`Held`) have a Balance
or Steady score other than the one every other candidate shares (Balance 100 for a
cluster nobody decided, Steady 0 for one this Placement did not): the best candidates are
therefore among the held ones and the best of the rest by their AddOn and constant terms
alone, which are ranked once for all steps (``FastPlan.top``). A step then ranks that
short list instead of every candidate, and ranks them all when too many held clusters
crowd the short list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from dsf_compile.backtest.rebuilt_scores import ScoreHistory, _CoordinateHistory
from dsf_compile.inputs.placements import Placement
from dsf_compile.placement.cel import reads_scores
from dsf_compile.placement.prioritizers import (
    Reads,
    balance_score,
    configured_prioritizers,
    reads_of,
    steady_score,
)
from dsf_compile.placement.scheduler import PlacementResult, compile_cached

IntArray = np.ndarray[Any, np.dtype[np.int64]]
#: What the Placements of one replay may precompute together for all steps (steps ×
#: candidates × 4 bytes per table of terms, steps × short list × 16 bytes per short
#: list): past it, a Placement reads its AddOn scores step by step, so that memory stays
#: bounded whatever the number of Placements and steps.
PRECOMPUTED_BYTES = 512 * 1024 * 1024


#: Candidates beyond ``numberOfClusters + 1`` that the per-step short list keeps at
#: least, best first by the terms that read no decision: room for that many held clusters
#: among them. Its length is rounded up to a multiple of ``SHORTLIST_ROUND``, so that
#: Placements deciding a different number of clusters share one short list.
SHORTLIST_SPARE = 64
SHORTLIST_ROUND = 64


@dataclass
class Budget:
    """Bytes left for precomputed tables in one replay, and the tables made so far:
    Placements ranking the same candidates by the same weighted terms share them."""

    left: int = PRECOMPUTED_BYTES
    tables: dict[object, Any] = field(default_factory=dict)

    def spend(self, size: int) -> bool:
        """Whether ``size`` more bytes fit (and take them if so)."""
        if size > self.left:
            return False
        self.left -= size
        return True


class _AddOnTerm(NamedTuple):
    """An AddOn prioritizer: weight × the coordinate's value at each candidate's ``rows``
    (the coordinate's extra, zero row for a candidate without such an object)."""

    weight: int
    coordinate: _CoordinateHistory
    rows: IntArray


@dataclass(frozen=True)
class FastPlan:
    """What one Placement's steps 5 and 6 need, over its fixed candidates (sorted by name)."""

    candidates: tuple[str, ...]
    #: The candidates' positions in the fleet's cluster index (for decision counts).
    positions: IntArray
    #: The same as a list, and fleet position → the candidate there.
    fleet_positions: list[int]
    candidate_at: dict[int, int]
    addon: tuple[_AddOnTerm, ...]
    #: The summed weights of the built-ins that read the Placement's own decisions
    #: (Steady) and the others' (Balance).
    steady: int
    balance: int
    #: Σ weight × score of the built-ins that read the clusters alone, per candidate.
    constant: IntArray
    count: int | None
    #: Step → every candidate's AddOn and constant terms, and whether one was expired,
    #: computed for all steps at once (None once the replay's :class:`Budget` is spent).
    base_steps: np.ndarray[Any, np.dtype[np.int32]] | None = None
    expired_steps: list[bool] | None = None
    #: Step → the best ``wanted + 1 + SHORTLIST_SPARE`` candidates or more by
    #: ``base_steps`` (total descending, then name), best first; None when that is every
    #: candidate.
    top: Top | None = None

    #: How many candidates are decided: ``numberOfClusters``, at most all of them.
    wanted: int = 0


class StepRecord(NamedTuple):
    """What one step left of one Placement, from the scheduler or from :func:`fast_step`
    (a tuple: one is made per Placement and step)."""

    decisions: tuple[str, ...]
    margin: int | None
    loss: int
    expired: bool
    simulated: bool = True


def volatile(placement: Placement) -> bool:
    """Whether steps 1 and 2 can give other clusters at a step whose scores and decisions
    did not change: a CEL expression reads ``scores()``, or a toleration has
    ``tolerationSeconds`` (the time decides)."""
    spec = placement.spec
    if any(t.tolerationSeconds is not None for t in spec.tolerations):
        return True
    return any(
        reads_scores(compile_cached(expression))
        for predicate in spec.predicates
        if predicate.requiredClusterSelector is not None
        and predicate.requiredClusterSelector.celSelector is not None
        for expression in predicate.requiredClusterSelector.celSelector.celExpressions or ()
    )


def eligible(placement: Placement) -> bool:
    """Whether steps 1 and 2 can only give the same clusters at every step (the taints of
    step 3 are looked at once those clusters are known: :func:`plan_for`)."""
    return not volatile(placement)


def plan_for(
    placement: Placement,
    result: PlacementResult,
    history: ScoreHistory,
    fleet: Mapping[str, int],
    budget: Budget,
    new_only: frozenset[str] = frozenset(),
) -> FastPlan | None:
    """The plan of a Placement :func:`schedule` just scheduled, or None when it needs the
    scheduler at every change (not simulated, misconfigured, a prioritizer not here, or a
    cluster past its predicates carrying a ``NoSelectIfNew`` taint, in ``new_only``: whether
    it is a candidate then depends on the Placement's own decisions)."""
    candidates = _fixed_candidates(result, fleet, new_only)
    plan = None if candidates is None else _plan(placement, result, history, fleet, candidates)
    if plan is None:
        return None
    return _precomputed(plan, len(history.steps), budget)


def _fixed_candidates(
    result: PlacementResult, fleet: Mapping[str, int], new_only: frozenset[str]
) -> tuple[str, ...] | None:
    """The clusters left after step 3, sorted, when no later step can change them."""
    misconfigured = any(
        c.type == "PlacementMisconfigured" and c.status == "True" for c in result.conditions
    )
    if not result.simulated or misconfigured or not result.totals:
        return None
    if new_only & (set(result.totals) | set(result.filtered_taints)):
        return None
    candidates = tuple(sorted(result.totals))
    return candidates if all(name in fleet for name in candidates) else None


def _plan(
    placement: Placement,
    result: PlacementResult,
    history: ScoreHistory,
    fleet: Mapping[str, int],
    candidates: tuple[str, ...],
) -> FastPlan | None:
    """Each configured prioritizer as a term of the totals, by what its scores move with
    (None: one is not a built-in the fast path knows)."""
    weights = dict.fromkeys(Reads, 0)
    addon: list[_AddOnTerm] = []
    constant = np.zeros(len(candidates), dtype=np.int64)
    scored = {p.name: p.scores for p in result.prioritizers}
    for prioritizer in configured_prioritizers(placement):
        coordinate = prioritizer.coordinate
        reads = reads_of(prioritizer.name)
        if coordinate.type == "AddOn" and coordinate.addOn is not None:
            table = history.coordinate(coordinate.addOn.resourceName, coordinate.addOn.scoreName)
            none = len(table.clusters)
            rows = np.array([table.clusters.get(c, none) for c in candidates], dtype=np.int64)
            addon.append(_AddOnTerm(prioritizer.weight, table, rows))
        elif reads is Reads.CLUSTERS and prioritizer.name in scored:
            scores = scored[prioritizer.name]
            constant += prioritizer.weight * np.array([scores[c] for c in candidates])
        elif reads is None or reads is Reads.CLUSTERS:
            return None
        else:
            weights[reads] += prioritizer.weight
    count = placement.spec.numberOfClusters
    positions = np.array([fleet[c] for c in candidates], dtype=np.int64)
    listed = positions.tolist()
    return FastPlan(
        candidates,
        positions,
        listed,
        {position: candidate for candidate, position in enumerate(listed)},
        tuple(addon),
        weights[Reads.OWN_DECISIONS],
        weights[Reads.OTHER_DECISIONS],
        constant,
        placement.spec.numberOfClusters,
        wanted=len(candidates) if count is None else min(count, len(candidates)),
    )


def _precomputed(plan: FastPlan, steps: int, budget: Budget) -> FastPlan:
    """The plan with its tables for every step, when they fit the replay's budget: the
    terms that read no decision (:func:`_base_tables`), and the short list of the best
    candidates by them (:func:`_top_table`)."""
    tables = _base_tables(plan, steps, budget)
    if tables is None:
        return plan
    base, expired = tables
    length = -(-(plan.wanted + 1 + SHORTLIST_SPARE) // SHORTLIST_ROUND) * SHORTLIST_ROUND
    top = None
    if length < len(plan.candidates) and plan.wanted > 0:
        top = _top_table(base, length, budget)
    return replace(plan, base_steps=base, expired_steps=expired, top=top)


def _base_tables(
    plan: FastPlan, steps: int, budget: Budget
) -> tuple[np.ndarray[Any, np.dtype[np.int32]], list[bool]] | None:
    """Step → the AddOn and constant terms of every candidate's total, and whether one was
    expired (they read no decision): made once per distinct set of terms in a replay."""
    key = (
        plan.positions.tobytes(),  # Placements sharing a table share their candidates
        plan.constant.tobytes(),
        tuple((t.weight, id(t.coordinate), t.rows.tobytes()) for t in plan.addon),
    )
    found = budget.tables.get(key)
    if found is None:
        if not budget.spend(steps * len(plan.candidates) * 4):
            return None
        base = np.zeros((steps, len(plan.candidates)), dtype=np.int32)
        if plan.constant.any():
            base += plan.constant.astype(np.int32)
        expired = np.zeros(steps, dtype=np.bool_)
        weighted = np.empty_like(base)  # one buffer for every term's weighted scores
        for term in plan.addon:
            values, stale = term.coordinate.gathered(term.rows)
            if term.weight == 1:
                base += values
            else:
                base += np.multiply(values, term.weight, out=weighted)
            expired |= stale
        # the coordinates are kept beside the tables: their ids in the key stay theirs
        found = budget.tables[key] = (base, expired.tolist(), plan.addon)
    return found[0], found[1]


class Top(NamedTuple):
    """Step → the first candidates by the terms that read no decision (total descending,
    then name), best first (``pairs[step, 0]``), and those terms' values (``pairs[step, 1]``):
    one array, so that a step reads both at once."""

    pairs: IntArray


def _top_table(
    base: np.ndarray[Any, np.dtype[np.int32]], length: int, budget: Budget
) -> Top | None:
    """The ``length`` best candidates by ``base`` at every step; None past the budget.
    Made once per table and length."""
    key = (id(base), length)
    found = budget.tables.get(key)
    if found is None:
        steps, size = base.shape
        if not budget.spend(steps * length * 16):
            return None
        pairs = np.zeros((steps, 2, length), dtype=np.int64)
        for start in range(0, steps, BATCH_STEPS):
            # one integer orders both ways: higher total first, then the lower position
            order = base[start : start + BATCH_STEPS].astype(np.int64)
            order *= -size
            order += _positions(size)
            best = np.partition(order, length - 1, axis=1)[:, :length]
            best.sort(axis=1)
            found_ids = best % size
            pairs[start : start + BATCH_STEPS, 0] = found_ids
            pairs[start : start + BATCH_STEPS, 1] = (found_ids - best) // size
        found = budget.tables[key] = (Top(pairs), base)
    return found[0]


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
    candidates (value, candidate) in order, and the held ones among them (value,
    candidate, fleet position, decision count, how many free ones come before it), read
    as far as a Placement has needed."""

    def __init__(
        self, step: int, pairs: IntArray, positions: list[int], counts: Mapping[int, int]
    ) -> None:
        self.step, self.pairs, self.positions, self.counts = step, pairs, positions, counts
        self.free: list[tuple[int, int]] = []
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
                    free.append((value, candidate))
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
    """
    assert plan.base_steps is not None and plan.expired_steps is not None
    wanted = plan.wanted
    scan = held.scan(top, step, plan.fleet_positions)
    if not scan.upto(wanted + 1):
        return None
    table = held.balance(own)
    balance = plan.balance
    rest = balance * table[0]
    # (−total, candidate, total without Steady) of every cluster looked at
    pool = [
        (-value - rest, candidate, value + rest) for value, candidate in scan.free[: wanted + 1]
    ]
    # a held candidate (not this Placement's) reaches at most this Balance term: behind
    # the wanted + 1-th free one by more, it is behind all of them (so are those after it)
    threshold = pool[wanted][2] - (balance * table[1] if len(table) > 1 else rest)
    for value, candidate, position, count, before in scan.held:
        if before > wanted or value < threshold:
            break
        if position not in own:
            plain = balance * table[count]
            pool.append((-value - plain, candidate, value + plain))
    row = plan.base_steps[step]
    steady = plan.steady * _STEADY
    for position, mine in own.items():
        at = plan.candidate_at.get(position)
        if at is not None:
            value = int(row[at])
            plain = balance * table[held.counts[position] - mine]
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
        plains = [entry[2] for entry in pool]
        plains.sort(reverse=True)
        loss = sum(plains[:wanted]) - sum([entry[2] for entry in chosen])
    names = plan.candidates
    decided = tuple([names[i] for i in sorted([entry[1] for entry in chosen])])
    return StepRecord(decided, margin, loss, expired)


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
    order = -totals * size + _positions(size)
    top = size if plan.steady < 0 else min(size, wanted + max(held, 1))
    part = np.argpartition(order, top - 1)[:top]
    part = part[np.argsort(order[part])]
    chosen, first_out = part[:wanted], part[wanted]
    margin = int(totals[chosen].min() - totals[first_out])
    best = np.sort(plain[part])[::-1][:wanted]
    loss = int(best.sum() - plain[chosen].sum())
    decided = tuple(sorted(plan.candidates[i] for i in chosen.tolist()))
    return StepRecord(decided, margin, loss, expired)


#: Steps scheduled together by :func:`fast_steps` (steps × candidates × 8 bytes at a time).
BATCH_STEPS = 1024


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
    order = -totals * size + _positions(size)
    part = np.argpartition(order, wanted, axis=1)[:, : wanted + 1]
    part = np.take_along_axis(part, np.argsort(np.take_along_axis(order, part, 1), 1), 1)
    chosen = np.sort(part[:, :wanted], axis=1)
    margins = np.take_along_axis(totals, chosen, 1).min(axis=1)
    margins -= np.take_along_axis(totals, part[:, wanted : wanted + 1], 1)[:, 0]
    return chosen, margins


_ARANGES: dict[int, IntArray] = {}


def _positions(size: int) -> IntArray:
    """``0 … size−1``, made once per size."""
    found = _ARANGES.get(size)
    if found is None:
        found = _ARANGES[size] = np.arange(size, dtype=np.int64)
    return found


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
