"""What the fast path knows of a Placement once the scheduler has scheduled it: its plan.

A Placement is first scheduled by :func:`~dsf_compile.placement.scheduler.schedule`. When
nothing of steps 1 to 3 can change between steps — no CEL expression reads ``scores()``,
no toleration has ``tolerationSeconds``, no candidate pool cluster carries a
``NoSelectIfNew`` taint, the Placement is simulated and not misconfigured — its candidates
stay the ones that call left, and each later step only moves the scores: ``AddOn`` (the
rebuilt items, 0 when missing or expired), ``Steady`` (its own decisions), ``Balance``
(the others' decision counts, in float64 and truncated as OCM computes it) and the
resource prioritizers (constant over fixed candidates, taken from that call).
:func:`plan_for` turns that call into a :class:`FastPlan`: each prioritizer as a term of
the totals, and, within the replay's :class:`Budget`, the terms that read no decision
for every step at once and the short list of the best candidates by them
(``FastPlan.top``). :mod:`.fast` schedules the steps with it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from dsf_compile.backtest.score_history import ScoreHistory, _CoordinateHistory
from dsf_compile.inputs.placements import Placement
from dsf_compile.placement.cel import reads_scores
from dsf_compile.placement.prioritizers import Reads, configured_prioritizers, reads_of
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
            addon.append(_AddOnTerm(prioritizer.weight, table, table.rows_of(candidates)))
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
            else:  # weighted in 32 bits (the scores are 16)
                base += np.multiply(values, term.weight, out=weighted, dtype=np.int32)
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
        kind = _order_kind(base)
        positions = positions_of(size).astype(kind)
        for start in range(0, steps, BATCH_STEPS):
            # one integer orders both ways: higher total first, then the lower position
            order = base[start : start + BATCH_STEPS].astype(kind)
            order *= -size
            order += positions
            best = np.partition(order, length - 1, axis=1)[:, :length]
            best.sort(axis=1)
            found_ids = best % size
            pairs[start : start + BATCH_STEPS, 0] = found_ids
            pairs[start : start + BATCH_STEPS, 1] = (found_ids - best) // size
        found = budget.tables[key] = (Top(pairs), base)
    return found[0]


def _order_kind(base: np.ndarray[Any, np.dtype[np.int32]]) -> type[np.signedinteger[Any]]:
    """The narrowest integers holding ``−total × candidates + position`` for every total of
    ``base`` (half the memory to sort when 32 bits do)."""
    size = base.shape[1]
    largest = max(abs(int(base.min())), abs(int(base.max()))) if base.size else 0
    return np.int32 if (largest + 1) * size <= np.iinfo(np.int32).max else np.int64


#: Steps ranked together by :func:`_top_table` and :func:`~dsf_compile.backtest.fast.fast_steps`
#: (steps × candidates × 8 bytes at a time).
BATCH_STEPS = 1024

_ARANGES: dict[int, IntArray] = {}


def positions_of(size: int) -> IntArray:
    """``0 … size−1``, made once per size."""
    found = _ARANGES.get(size)
    if found is None:
        found = _ARANGES[size] = np.arange(size, dtype=np.int64)
    return found
