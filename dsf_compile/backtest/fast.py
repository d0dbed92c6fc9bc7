"""Steps 5 and 6 of the scheduler over numpy vectors, for Placements whose candidates are fixed.

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
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
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
#: candidates × 4 bytes each): past it, a Placement reads its AddOn scores step by step,
#: so that memory stays bounded whatever the number of Placements and steps.
PRECOMPUTED_BYTES = 512 * 1024 * 1024


@dataclass
class Budget:
    """Bytes left for precomputed AddOn tables in one replay."""

    left: int = PRECOMPUTED_BYTES


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
    addon: tuple[_AddOnTerm, ...]
    #: The summed weights of the built-ins that read the Placement's own decisions
    #: (Steady) and the others' (Balance).
    steady: int
    balance: int
    #: Σ weight × score of the built-ins that read the clusters alone, per candidate.
    constant: IntArray
    count: int | None
    #: Step → the AddOn part of every candidate's total, and whether one was expired,
    #: computed for all steps at once (None once the replay's :class:`Budget` is spent).
    addon_steps: np.ndarray[Any, np.dtype[np.int32]] | None = None
    expired_steps: np.ndarray[Any, np.dtype[np.bool_]] | None = None


@dataclass(frozen=True)
class StepRecord:
    """What one step left of one Placement, from the scheduler or from :func:`fast_step`."""

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
    size = len(history.steps) * len(plan.candidates) * 4
    if size > budget.left:
        return plan
    budget.left -= size
    return _precomputed(plan, len(history.steps))


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
    return FastPlan(
        candidates,
        np.array([fleet[c] for c in candidates], dtype=np.int64),
        tuple(addon),
        weights[Reads.OWN_DECISIONS],
        weights[Reads.OTHER_DECISIONS],
        constant,
        placement.spec.numberOfClusters,
    )


def _precomputed(plan: FastPlan, steps: int) -> FastPlan:
    """The AddOn part of the totals for every step at once (it reads no decision)."""
    addon = np.zeros((steps, len(plan.candidates)), dtype=np.int32)
    expired = np.zeros(steps, dtype=np.bool_)
    for term in plan.addon:
        values, stale = term.coordinate.gathered(term.rows)
        addon += term.weight * values
        expired |= stale
    return replace(plan, addon_steps=addon, expired_steps=expired)


def fast_step(plan: FastPlan, step: int, own: IntArray, others: IntArray) -> StepRecord:
    """Steps 5 and 6 at ``step``: ``own`` and ``others`` count, per fleet cluster, this
    Placement's decisions and every other's."""
    if plan.addon_steps is not None and plan.expired_steps is not None:
        totals = plan.constant + plan.addon_steps[step]
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
    wanted = size if plan.count is None else min(plan.count, size)
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
    if plan.steady or plan.balance or plan.addon_steps is None or plan.expired_steps is None:
        return None
    size = len(plan.candidates)
    wanted = size if plan.count is None else min(plan.count, size)
    expired = plan.expired_steps.tolist()
    if wanted in (0, size):
        decided = plan.candidates if wanted else ()
        return [StepRecord(decided, None, 0, expired[k]) for k in range(first, count)]
    records: list[StepRecord] = []
    last: tuple[str, ...] = ()
    for start in range(first, count, BATCH_STEPS):
        end = min(count, start + BATCH_STEPS)
        chosen, margins = _best(plan, plan.addon_steps[start:end], wanted)
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
    plan: FastPlan, addon: np.ndarray[Any, np.dtype[np.int32]], wanted: int
) -> tuple[IntArray, IntArray]:
    """Per step (row): the decided candidates' positions, sorted, and the margin — step 6
    as :func:`_select` takes it, over all the rows at once."""
    size = len(plan.candidates)
    totals = plan.constant + addon.astype(np.int64)
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


def _balance_table(most: int) -> IntArray:
    """Count → Balance score when the largest count is ``most``: computed once per ``most``
    with the scheduler's own formula, then looked up (counts never exceed ``most``)."""
    found = _BALANCE_TABLES.get(most)
    if found is None:
        scores = [balance_score(count, most) for count in range(most + 1)]
        found = _BALANCE_TABLES[most] = np.array(scores, dtype=np.int64)
    return found
