"""Every Placement scheduled at every step, exactly as ``explain`` schedules it.

The scheduler is :func:`dsf_compile.placement.scheduler.schedule`, called with the
rebuilt scores of the step (:class:`StepIndex`), ``at`` = the step's time and the
PlacementDecisions as the replay has left them (Placements in namespace/name order, so
that ``Balance`` sees the ones already updated at this step).

A Placement is scheduled again only when one of its inputs changed since it was last
scheduled: the AddOn coordinates it ranks by (values and object states), its own
decisions (``Steady``, ``NoSelectIfNew``), the others' (``Balance``). Placements whose
result can depend on anything else (CEL reading ``scores()``, a toleration with
``tolerationSeconds``, which the time decides) are scheduled at every step.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dsf_compile.backtest.decisions import Decisions
from dsf_compile.backtest.fast import fast_step, fast_steps
from dsf_compile.backtest.fast_plan import (
    Budget,
    FastPlan,
    StepRecord,
    eligible,
    plan_for,
    volatile,
)
from dsf_compile.backtest.rebuilt_scores import ABSENT
from dsf_compile.backtest.score_history import ScoreHistory
from dsf_compile.inputs.placements import (
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
)
from dsf_compile.placement.cel import CelExpression, reads_scores
from dsf_compile.placement.prioritizers import Reads, configured_prioritizers, reads_of
from dsf_compile.placement.scheduler import (
    Cluster,
    PlacementResult,
    ScoreIndex,
    compile_cached,
    schedule,
)


@dataclass(frozen=True)
class StepIndex(ScoreIndex):
    """The scores of one step, read from the rebuilt history instead of objects.

    CEL results of expressions that never call ``scores()`` are kept for the whole run
    (``static``): they depend on the cluster alone.
    """

    history: ScoreHistory | None = None
    step: int = 0
    static: ScoreIndex | None = None

    def addon_table(self, resource_name: str, score_name: str) -> Mapping[str, Any]:
        """The coordinate at this step (cluster → (value or None, validUntil))."""
        assert self.history is not None
        key = ("addon", resource_name, score_name)
        found = self.memo.get(key)
        if found is None:  # once per step, for every Placement ranking by it
            found = self.memo[key] = self.history.coordinate(resource_name, score_name).table(
                self.step
            )
        return found

    def cel_scores(self, cluster: str, name: str) -> list[dict[str, object]] | None:
        """``managedCluster.scores(name)`` at this step; None before the cluster's first sample."""
        assert self.history is not None
        return _step_scores(self.history, self.step, cluster, name)

    def scores_lookup(self) -> functools.partial[list[dict[str, object]] | None]:
        """:meth:`cel_scores` without a reference to this index (see ``ScoreIndex.cel_true``)."""
        assert self.history is not None
        return functools.partial(_step_scores, self.history, self.step)

    def cel_true(self, expression: CelExpression, cluster: Cluster) -> bool:
        """As :meth:`ScoreIndex.cel_true`, once per run for an expression without ``scores``."""
        if self.static is not None and not _reads_scores(expression.source):
            return self.static.cel_true(expression, cluster)
        return super().cel_true(expression, cluster)


@functools.lru_cache(maxsize=4096)
def _reads_scores(source: str) -> bool:
    """:func:`reads_scores` once per expression, not once per cluster and step."""
    return reads_scores(compile_cached(source))


def _step_scores(
    history: ScoreHistory, step: int, cluster: str, name: str
) -> list[dict[str, object]] | None:
    found = history.objects.get((cluster, name))
    if found is None or found.state[step] == ABSENT:
        return None
    return found.item_list(step)


@dataclass
class Track:
    """One Placement over the replay: a record per step, and what its scheduling said."""

    placement: Placement
    records: list[StepRecord] = field(default_factory=list)
    warnings: set[str] = field(default_factory=set)


@dataclass
class _Inputs:
    """What decides whether a Placement must be scheduled again."""

    coordinates: tuple[tuple[str, str], ...]
    volatile: bool
    balance: bool


def replay(
    placements: Sequence[Placement],
    clusters: Sequence[Cluster],
    bindings: Sequence[ManagedClusterSetBinding],
    history: ScoreHistory,
    initial: Sequence[PlacementDecision],
    *,
    fast: bool = True,
    budget: Budget | None = None,
) -> list[Track]:
    """Replay ``placements`` (sorted by namespace/name here) over every step of ``history``.

    ``fast=False`` schedules every Placement with the scheduler at each change (the tests
    compare both). ``budget`` holds the tables of the replays before on the same history
    (``--steady`` replays the fleet again with other Steady weights: the same tables).
    """
    ordered = sorted(placements, key=lambda p: (p.metadata.namespace, p.metadata.name))
    decisions = Decisions(ordered, initial, clusters, budget)
    tracks = [Track(p) for p in ordered]
    inputs = [_inputs_of(p) for p in ordered]
    versions = [_score_versions(i, history) for i in inputs]
    last_keys: list[object] = [None] * len(ordered)
    plans: list[FastPlan | bool | None] = [fast and eligible(p) for p in ordered]
    #: Placements whose every later step was scheduled at once (their totals read no
    #: decision): the records, from the step after their first call.
    batches: list[tuple[int, list[StepRecord]] | None] = [None] * len(ordered)
    static = ScoreIndex({}, {})
    for step in range(len(history.steps)):
        index = StepIndex({}, {}, history=history, step=step, static=static)
        at = history.moment(int(history.steps[step]))
        for position, placement in enumerate(ordered):
            track = tracks[position]
            batch = batches[position]
            if batch is not None:
                _take_batched(batch, step, track, decisions, position)
                continue
            key = _key(inputs[position], versions[position], step, decisions, position)
            if key is not None and key == last_keys[position]:
                track.records.append(track.records[-1])
                continue
            plan = plans[position]
            if isinstance(plan, FastPlan):
                found = fast_step(plan, step, *decisions.counts(position))
                track.records.append(found)
                decisions.set_clusters(position, found.decisions)
            else:
                result = schedule(placement, clusters, bindings, index, decisions.all, at)
                record = _record(result, inputs[position], history, step)
                track.records.append(record)
                track.warnings.update(_lasting(result))
                if plan is True:  # the first call: the candidates are known now
                    plans[position], batches[position] = _first_plan(
                        placement, result, record, history, decisions, position, step
                    )
                decisions.update(position, result)
            # what this call read: its own decisions before it moved them (Steady reads
            # those; the next step reads the new ones, and is scheduled again)
            last_keys[position] = key
    return tracks


def _take_batched(
    batch: tuple[int, list[StepRecord]],
    step: int,
    track: Track,
    decisions: Decisions,
    position: int,
) -> None:
    """A step scheduled with the others at once: its record, its decisions when they moved."""
    found = batch[1][step - batch[0]]
    if found.decisions is not track.records[-1].decisions:
        decisions.set_clusters(position, found.decisions)
    track.records.append(found)


def _first_plan(
    placement: Placement,
    result: PlacementResult,
    record: StepRecord,
    history: ScoreHistory,
    decisions: Decisions,
    position: int,
    step: int,
) -> tuple[FastPlan | None, tuple[int, list[StepRecord]] | None]:
    """After the first call: the fast plan (None: the scheduler at each change), and every
    later step at once when the plan's totals read no decision (:func:`fast_steps`)."""
    plan = _checked_plan(placement, result, record, history, decisions, position, step)
    later = fast_steps(plan, step + 1, len(history.steps)) if plan is not None else None
    return plan, ((step + 1, later) if later else None)


def _checked_plan(
    placement: Placement,
    result: PlacementResult,
    record: StepRecord,
    history: ScoreHistory,
    decisions: Decisions,
    position: int,
    step: int,
) -> FastPlan | None:
    """The fast plan, kept only when it gives this step exactly what the scheduler gave."""
    plan = plan_for(
        placement, result, history, decisions.fleet, decisions.budget, decisions.new_only
    )
    if plan is None:
        return None
    return plan if fast_step(plan, step, *decisions.counts(position)) == record else None


def _inputs_of(placement: Placement) -> _Inputs:
    prioritizers = configured_prioritizers(placement)
    coordinates = tuple(
        sorted(
            {
                (p.coordinate.addOn.resourceName, p.coordinate.addOn.scoreName)
                for p in prioritizers
                if p.coordinate.type == "AddOn" and p.coordinate.addOn is not None
            }
        )
    )
    balance = any(reads_of(p.name) is Reads.OTHER_DECISIONS for p in prioritizers)
    return _Inputs(coordinates, volatile(placement), balance)


def _score_versions(inputs: _Inputs, history: ScoreHistory) -> list[int]:
    """Step → how many times the Placement's AddOn coordinates changed so far (each count
    only grows, so their sum moves exactly when one of them does)."""
    total = np.zeros(len(history.steps), dtype=np.int64)
    for coordinate in inputs.coordinates:
        total += history.coordinate(*coordinate).changed.cumsum()
    return list(total.tolist())


def _key(
    inputs: _Inputs, versions: list[int], step: int, decisions: Decisions, position: int
) -> object:
    """The versions of everything the Placement reads at ``step``; None: always schedule."""
    if inputs.volatile:
        return None
    own = decisions.own_version[position]
    others = decisions.version - own if inputs.balance else 0
    return (versions[step], own, others)


def _record(
    result: PlacementResult, inputs: _Inputs, history: ScoreHistory, step: int
) -> StepRecord:
    margin = min(result.margins.values()) if result.margins else None
    candidates = result.ranking
    expired = any(
        bool(history.coordinate(*c).expired(step) & set(candidates)) for c in inputs.coordinates
    )
    return StepRecord(
        decisions=tuple(sorted(result.decisions)),
        margin=margin,
        loss=_loss(result),
        expired=expired,
        simulated=result.simulated,
    )


def _loss(result: PlacementResult) -> int:
    """Sum of the best ``n`` totals without the Steady term minus that sum over the decided."""
    count = len(result.decisions)
    if count == 0 or not result.totals:
        return 0
    steady = [p for p in result.prioritizers if reads_of(p.name) is Reads.OWN_DECISIONS]
    plain = {
        name: total - sum(p.weight * p.scores[name] for p in steady)
        for name, total in result.totals.items()
    }
    best = sorted(plain.values(), reverse=True)[:count]
    decided = sum(plain[name] for name in result.decisions if name in plain)
    return sum(best) - decided


def _lasting(result: PlacementResult) -> list[str]:
    """The warnings said once for the replay: not those of a step's scores (the scheduler
    marks them ``momentary``), which the step records say."""
    return [w for w in result.warnings if w not in result.momentary]
