"""OCM's placement scheduler, simulated offline: which clusters a Placement picks, and why.

This follows open-cluster-management-io/ocm ``pkg/placement`` step by step: cluster sets,
predicates and taints (:mod:`.filters`), prioritizer weights and scores
(:mod:`.prioritizers`), selection, then decision groups, PlacementDecisions and status
(:mod:`.decisions`), in the order OCM's scheduling controller runs them.

:func:`schedule` is those steps in sequence, one function each (``cluster_sets_step``,
``predicates_step`` and ``taints_step`` in :mod:`.filters`; ``weights_step``,
``scores_step``, ``selection_step`` and ``decide`` here), every step taking the frozen
outcome of the one before; a Placement OCM does not schedule, or a CEL selector the
simulation cannot run, ends after step 1 or 2 with ``simulated`` False
(``not_scheduled``, ``not_simulated``).

Pure: every input is a value, the time of the simulation included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from datetime import datetime

from dsf_compile.inputs.placements import (
    SCHEDULING_DISABLED_ANNOTATION,
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    PlacementSpec,
)
from dsf_compile.placement.decision_index import DecisionIndex
from dsf_compile.placement.decisions import (
    Condition,
    DecisionGroupStatus,
    DecisionObject,
    Misconfigured,
    SchedulingCounts,
    conditions,
    decision_groups,
    decision_objects,
    margins,
)
from dsf_compile.placement.filters import (
    GLOBAL_CLUSTER_SET as GLOBAL_CLUSTER_SET,
)
from dsf_compile.placement.filters import (
    ClusterSets,
    Filtered,
    cluster_sets_step,
    group_selects,
    predicates_step,
    taints_step,
)
from dsf_compile.placement.prioritizers import MAX_SCORE as MAX_SCORE
from dsf_compile.placement.prioritizers import (
    Prioritizer,
    PrioritizerResult,
    configured_prioritizers,
    prioritizer_misconfigured,
    score_prioritizers,
)

# What callers have always imported from here: the clusters and scores as the scheduler
# reads them (defined in state.py, beside the scores index).
from dsf_compile.placement.state import Cluster as Cluster
from dsf_compile.placement.state import ScoreIndex as ScoreIndex
from dsf_compile.placement.state import cel_view as cel_view
from dsf_compile.placement.state import cluster_from_inventory as cluster_from_inventory
from dsf_compile.placement.state import compile_cached as compile_cached
from dsf_compile.placement.state import format_time as format_time
from dsf_contract.records import frozen


@frozen
class PlacementResult:
    """Everything ``explain`` reports about one Placement.

    ``filtered_*`` are the clusters each step removed, sorted; ``ranking`` is every
    cluster left after step 3, best first, and ``decisions`` is its prefix of length
    ``numberOfClusters``. A Placement that is not simulated has ``simulated`` False,
    empty scores and decisions, and a warning saying why.
    """

    namespace: str
    name: str
    simulated: bool
    cluster_sets: tuple[str, ...]
    filtered_cluster_sets: tuple[str, ...]
    filtered_predicates: tuple[str, ...] = ()
    filtered_taints: tuple[str, ...] = ()
    prioritizers: tuple[PrioritizerResult, ...] = ()
    totals: Mapping[str, int] = field(default_factory=dict)
    ranking: tuple[str, ...] = ()
    decisions: tuple[str, ...] = ()
    unscheduled: int = 0
    warnings: tuple[str, ...] = ()
    #: Those of ``warnings`` true of this moment's scores only (none given, absent,
    #: expired): a replay over time says them per step, not once for the run.
    momentary: tuple[str, ...] = ()
    #: Step 7: the decision groups in order, and the PlacementDecisions OCM writes.
    decision_groups: tuple[DecisionGroupStatus, ...] = ()
    placement_decisions: tuple[DecisionObject, ...] = ()
    #: Step 8: PlacementMisconfigured and PlacementSatisfied (none when not scheduled).
    conditions: tuple[Condition, ...] = ()
    #: By how much each decided cluster beats the best one left out; None when none is.
    margins: Mapping[str, int] | None = None

    @property
    def not_simulated(self) -> str | None:
        """Why the scheduler decided nothing itself (scheduling disabled, a CEL selector it
        cannot run), as its last warning says; None when it simulated the Placement."""
        return None if self.simulated else self.warnings[-1]


def schedule(
    placement: Placement,
    clusters: Sequence[Cluster],
    bindings: Sequence[ManagedClusterSetBinding],
    scores: Sequence[AddOnPlacementScore] | ScoreIndex | None,
    decisions: Sequence[PlacementDecision] | DecisionIndex,
    at: datetime,
    *,
    set_members: Mapping[str, frozenset[str]] | None = None,
) -> PlacementResult:
    """Simulate OCM's scheduler for one Placement at the time ``at`` (time-zone aware).

    ``set_members`` gives each cluster set's members when they are known (a hub's sets,
    some selecting by labels); without it, ``global`` holds every cluster and any other
    set the clusters whose cluster-set label names it.

    ``scores`` is None when no AddOnPlacementScores were given at all (every AddOn score
    is then 0 and a warning says so), or a :class:`ScoreIndex` of them when many
    Placements are scheduled against the same scores; ``decisions`` are the
    PlacementDecisions of every Placement (Steady and NoSelectIfNew read this
    Placement's, Balance the others'), or a :class:`DecisionIndex` of them when many
    Placements are scheduled against the same decisions.
    """
    run = Run.start(placement, scores, decisions, at)
    sets = cluster_sets_step(placement, clusters, bindings, set_members)
    if scheduling_disabled(placement):
        return not_scheduled(run, sets)
    passed = predicates_step(placement, sets.members, run.index)
    if isinstance(passed, str):
        return not_simulated(run, sets, passed)
    left = taints_step(placement, passed, run.own, at)
    weights = weights_step(placement, left.misconfigured)
    scored = scores_step(run, weights, left)
    return decide(run, sets, left, selection_step(scored, placement.spec.numberOfClusters))


@frozen
class Run:
    """What every step of one scheduling run reads besides the clusters."""

    placement: Placement
    index: ScoreIndex
    decisions: DecisionIndex
    at: datetime
    #: The clusters this Placement's own PlacementDecisions hold (Steady, NoSelectIfNew).
    own: frozenset[str]
    #: Fields OCM accepts and never reads, said first.
    no_effect: tuple[str, ...]

    @classmethod
    def start(
        cls,
        placement: Placement,
        scores: Sequence[AddOnPlacementScore] | ScoreIndex | None,
        decisions: Sequence[PlacementDecision] | DecisionIndex,
        at: datetime,
    ) -> Run:
        """Index the scores and decisions once (an index given is used as it is)."""
        if at.tzinfo is None:
            raise ValueError("the time of the simulation must carry a time zone")
        found = DecisionIndex.of(decisions)
        index = scores if isinstance(scores, ScoreIndex) else ScoreIndex.of(scores)
        meta = placement.metadata
        own = frozenset(found.own_clusters(meta.namespace, meta.name))
        return cls(placement, index, found, at, own, tuple(_no_effect(placement, found)))


def scheduling_disabled(placement: Placement) -> bool:
    """Whether the Placement's annotation keeps OCM from scheduling it."""
    annotations = placement.metadata.annotations or {}
    return annotations.get(SCHEDULING_DISABLED_ANNOTATION) == "true"


@frozen
class Weights:
    """Step 4: the prioritizers with a weight, and why OCM decides none (None: it decides)."""

    prioritizers: tuple[Prioritizer, ...]
    misconfigured: Misconfigured | None


def weights_step(placement: Placement, misconfigured: Misconfigured | None) -> Weights:
    """Step 4: the configured prioritizers; a built-in OCM lacks makes it misconfigured."""
    prioritizers = configured_prioritizers(placement)
    if misconfigured is None:
        misconfigured = prioritizer_misconfigured(prioritizers)
    return Weights(tuple(prioritizers), misconfigured)


@frozen
class Scored:
    """Step 5: every prioritizer's scores for the clusters left (none when misconfigured)."""

    clusters: tuple[Cluster, ...]
    results: tuple[PrioritizerResult, ...]
    misconfigured: Misconfigured | None
    #: What steps 2 to 5 said, in order (the spread policy, the misconfiguration, scores).
    warnings: tuple[str, ...]
    #: Those of them true of this moment's scores only (see ``PlacementResult.momentary``).
    momentary: tuple[str, ...] = ()


def scores_step(run: Run, weights: Weights, left: Filtered) -> Scored:
    """Step 5: score the clusters left; a misconfigured Placement has no candidate."""
    warnings: list[str] = []
    spread = run.placement.spec.spreadPolicy
    if spread is not None and spread.spreadConstraints:
        warnings.append("spreadPolicy is not simulated: the decisions ignore it")
    misconfigured = weights.misconfigured
    if misconfigured is not None:
        first_line = misconfigured.message.splitlines()[0]  # cel-go's error has a snippet
        warnings.append(
            f"OCM reports the Placement misconfigured ({misconfigured.plugin}:{first_line}) "
            "and decides no cluster"
        )
        return Scored((), (), misconfigured, tuple(warnings))
    momentary: list[str] = []
    results = score_prioritizers(
        weights.prioritizers,
        left.kept,
        run.index,
        run.index.absent,
        run.placement,
        run.decisions,
        run.at,
        warnings,
        momentary,
    )
    return Scored(left.kept, tuple(results), None, tuple(warnings), tuple(momentary))


@frozen
class Selection:
    """Step 6: the totals, every candidate best first, and the ones decided."""

    scored: Scored
    totals: Mapping[str, int]
    ranking: tuple[str, ...]
    decisions: tuple[str, ...]
    unscheduled: int
    margins: Mapping[str, int] | None


def selection_step(scored: Scored, wanted: int | None) -> Selection:
    """Step 6: total = Σ weight × score; total descending, then name; the first ``wanted``
    (``numberOfClusters``; None: every one)."""
    names = [c.name for c in scored.clusters]
    totals = {n: sum(r.weight * r.scores[n] for r in scored.results) for n in names}
    ranking = tuple(sorted(names, key=lambda n: (-totals[n], n)))
    chosen = ranking if wanted is None else ranking[:wanted]
    unscheduled = 0 if wanted is None or scored.misconfigured else max(0, wanted - len(chosen))
    found = margins(ranking, len(chosen), totals)
    return Selection(scored, totals, ranking, chosen, unscheduled, found)


def decide(run: Run, sets: ClusterSets, left: Filtered, selection: Selection) -> PlacementResult:
    """Steps 7 and 8: decision groups, PlacementDecisions and the conditions."""
    placement, scored = run.placement, selection.scored
    clusters = {c.name: c for c in scored.clusters}
    groups = decision_groups(
        placement,
        selection.decisions,
        lambda selector, name: group_selects(selector, clusters[name]),
    )
    misconfigured = scored.misconfigured
    said: tuple[str, ...] = ()
    if isinstance(groups, Misconfigured):
        # OCM writes no PlacementDecision at all then (and deletes the old ones)
        said = (
            f"OCM reports the Placement misconfigured (:{groups.message}) and writes "
            "no PlacementDecision",
        )
        misconfigured, groups = groups, ()
    counts = SchedulingCounts(
        placement.spec.clusterSets,
        sets.names,
        sets.bound,
        len(sets.members),
        len(selection.decisions),
        selection.unscheduled,
    )
    return PlacementResult(
        namespace=placement.metadata.namespace,
        name=placement.metadata.name,
        simulated=True,
        cluster_sets=sets.names,
        filtered_cluster_sets=sets.filtered,
        filtered_predicates=left.earlier,
        filtered_taints=left.removed,
        prioritizers=scored.results,
        totals=selection.totals,
        ranking=selection.ranking,
        decisions=selection.decisions,
        unscheduled=selection.unscheduled,
        warnings=(*run.no_effect, *sets.warnings, *scored.warnings, *said),
        momentary=scored.momentary,
        decision_groups=groups,
        placement_decisions=decision_objects(placement.metadata.name, groups),
        conditions=conditions(counts, misconfigured),
        margins=selection.margins,
    )


def not_scheduled(run: Run, sets: ClusterSets) -> PlacementResult:
    """The scheduling-disabled annotation: OCM leaves the existing decisions as they are."""
    existing = _existing_objects(run.placement, run.decisions)
    return _unscheduled(
        run,
        sets,
        f'not scheduled: the annotation {SCHEDULING_DISABLED_ANNOTATION}: "true" '
        "keeps OCM from scheduling this Placement; its existing decisions stay",
        existing,
    )


def not_simulated(run: Run, sets: ClusterSets, unsupported: str) -> PlacementResult:
    """A celSelector the replay cannot evaluate: no decision is claimed."""
    return _unscheduled(run, sets, f"not simulated: a celSelector {unsupported}", ())


def _unscheduled(
    run: Run, sets: ClusterSets, why: str, existing: tuple[DecisionObject, ...]
) -> PlacementResult:
    meta = run.placement.metadata
    return PlacementResult(
        meta.namespace,
        meta.name,
        False,
        sets.names,
        sets.filtered,
        decisions=tuple(c for o in existing for c in o.clusters),
        warnings=(*run.no_effect, *sets.warnings, why),
        placement_decisions=existing,
    )


def _no_effect(placement: Placement, decisions: DecisionIndex) -> list[str]:
    """Fields in OCM's API that its scheduler never reads, said to do nothing when their
    value is not the CRD's default (a hub serves every Placement with the defaults filled
    in: those would change nothing if OCM read them)."""
    spec = placement.spec
    said = [
        f"spec.{name} {value!r} has no effect: OCM's scheduler does not read it (it behaves "
        f"as with the default {default!r})"
        for name, value, default in (
            ("sortBy", spec.sortBy, _default("sortBy")),
            ("scoreRateLimit", spec.scoreRateLimit, _default("scoreRateLimit")),
        )
        if _effective(value) != _effective(default)
    ]
    own = decisions.own(placement.metadata.namespace, placement.metadata.name)
    scored = any(d.score is not None for pd in own for d in pd.status.decisions)
    if scored:
        said.append("ClusterDecision.score has no effect: OCM's scheduler does not read it")
    return said


def _default(name: str) -> str:
    """The CRD's default of a field of a Placement's spec (the model's, which copies it)."""
    return str(PlacementSpec.model_fields[name].default)


_SECONDS = {"s": 1, "m": 60, "h": 3600}


def _effective(value: str) -> str | int:
    """A duration as seconds (``60s`` is ``1m``), any other value as it is."""
    if value[:-1].isdigit() and value[-1:] in _SECONDS:
        return int(value[:-1]) * _SECONDS[value[-1]]
    return value


def _existing_objects(placement: Placement, decisions: DecisionIndex) -> tuple[DecisionObject, ...]:
    """This Placement's PlacementDecisions as they are, sorted by name."""
    own = decisions.own(placement.metadata.namespace, placement.metadata.name)
    return tuple(
        DecisionObject(
            pd.metadata.name,
            dict(sorted(pd.metadata.labels.items())),
            tuple(d.clusterName for d in pd.status.decisions),
        )
        for pd in sorted(own, key=lambda pd: pd.metadata.name)
    )
