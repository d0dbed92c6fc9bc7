"""OCM's placement scheduler, simulated offline: which clusters a Placement picks, and why.

This follows open-cluster-management-io/ocm ``pkg/placement`` step by step: cluster sets,
predicates and taints (:mod:`.filters`), prioritizer weights and scores
(:mod:`.prioritizers`), selection, then decision groups, PlacementDecisions and status
(:mod:`.decisions`), in the order OCM's scheduling controller runs them.

Pure: every input is a value, the time of the simulation included.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from dsf_compile.inputs.placements import (
    SCHEDULING_DISABLED_ANNOTATION,
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
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
    cel_misconfigured,
    compiled_predicates,
    group_selects,
    in_sets,
    passes_predicates,
    removed,
    tolerated,
    toleration_misconfigured,
    unsupported_reasons,
)
from dsf_compile.placement.prioritizers import MAX_SCORE as MAX_SCORE
from dsf_compile.placement.prioritizers import (
    PrioritizerResult,
    configured_prioritizers,
    prioritizer_misconfigured,
    score_prioritizers,
    some_names,
)

# What callers have always imported from here: the clusters and scores as the scheduler
# reads them (defined in state.py, beside the scores index).
from dsf_compile.placement.state import Cluster as Cluster
from dsf_compile.placement.state import ScoreIndex as ScoreIndex
from dsf_compile.placement.state import cel_view as cel_view
from dsf_compile.placement.state import cluster_from_inventory as cluster_from_inventory
from dsf_compile.placement.state import compile_cached as compile_cached
from dsf_compile.placement.state import format_time as format_time


@dataclass(frozen=True)
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
    filtered_predicates: tuple[str, ...]
    filtered_taints: tuple[str, ...]
    prioritizers: tuple[PrioritizerResult, ...]
    totals: Mapping[str, int]
    ranking: tuple[str, ...]
    decisions: tuple[str, ...]
    unscheduled: int
    warnings: tuple[str, ...]
    #: Step 7: the decision groups in order, and the PlacementDecisions OCM writes.
    decision_groups: tuple[DecisionGroupStatus, ...] = ()
    placement_decisions: tuple[DecisionObject, ...] = ()
    #: Step 8: PlacementMisconfigured and PlacementSatisfied (none when not scheduled).
    conditions: tuple[Condition, ...] = ()
    #: By how much each decided cluster beats the best one left out; None when none is.
    margins: Mapping[str, int] | None = None


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
    if at.tzinfo is None:
        raise ValueError("the time of the simulation must carry a time zone")
    namespace, name = placement.metadata.namespace, placement.metadata.name
    spec = placement.spec
    decisions = DecisionIndex.of(decisions)
    warnings: list[str] = _no_effect(placement, decisions)
    by_name = sorted(clusters, key=lambda c: c.name)

    # 1. cluster sets (a cluster being deleted is never available: GetAvailableClusters)
    bound = sorted({b.metadata.name for b in bindings if b.metadata.namespace == namespace})
    wanted = set(spec.clusterSets)
    cluster_sets = tuple(s for s in bound if s in wanted) if wanted else tuple(bound)
    if not bound:
        warnings.append(
            f"no ManagedClusterSetBinding binds a cluster set to namespace {namespace}: "
            "the Placement selects no cluster"
        )
    elif wanted - set(bound):
        unbound = ", ".join(sorted(wanted - set(bound)))
        warnings.append(
            f"spec.clusterSets names sets not bound to namespace {namespace}: {unbound}"
        )
    members = [c for c in by_name if in_sets(c, cluster_sets, set_members) and not c.deleting]
    deleting = sorted(
        c.name for c in by_name if c.deleting and in_sets(c, cluster_sets, set_members)
    )
    if deleting:
        warnings.append(f"being deleted, never a candidate: {some_names(deleting)}")
    base = PlacementResult(
        namespace=namespace,
        name=name,
        simulated=True,
        cluster_sets=cluster_sets,
        filtered_cluster_sets=removed(by_name, members),
        filtered_predicates=(),
        filtered_taints=(),
        prioritizers=(),
        totals={},
        ranking=(),
        decisions=(),
        unscheduled=0,
        warnings=(),
    )
    counts = SchedulingCounts(spec.clusterSets, cluster_sets, len(bound), len(members), 0, 0)

    if (placement.metadata.annotations or {}).get(SCHEDULING_DISABLED_ANNOTATION) == "true":
        existing = _existing_objects(placement, decisions)
        return replace(
            base,
            simulated=False,
            decisions=tuple(c for o in existing for c in o.clusters),
            placement_decisions=existing,
            warnings=(
                *warnings,
                f'not scheduled: the annotation {SCHEDULING_DISABLED_ANNOTATION}: "true" '
                "keeps OCM from scheduling this Placement; its existing decisions stay",
            ),
        )
    index = scores if isinstance(scores, ScoreIndex) else ScoreIndex.of(scores)

    # 2. predicates (OCM compiles CEL only when there are clusters to filter)
    selectors = compiled_predicates(placement) if members and spec.predicates else []
    unsupported = next((u for _, e in selectors for u in unsupported_reasons(e)), None)
    if unsupported is not None:
        return replace(
            base,
            simulated=False,
            warnings=(*warnings, f"not simulated: a celSelector {unsupported}"),
        )
    misconfigured = next((m for m in (cel_misconfigured(selectors),) if m), None)
    passed = (
        members if misconfigured else [c for c in members if passes_predicates(selectors, c, index)]
    )
    # 3. taints and tolerations
    if misconfigured is None and passed:
        misconfigured = toleration_misconfigured(spec.tolerations)
    own = decisions.own_clusters(namespace, name)
    left = (
        passed
        if misconfigured
        else [c for c in passed if tolerated(c, spec.tolerations, c.name in own, at)]
    )
    prioritizers = configured_prioritizers(placement)
    if misconfigured is None:
        misconfigured = prioritizer_misconfigured(prioritizers)
    if spec.spreadPolicy is not None and spec.spreadPolicy.spreadConstraints:
        warnings.append("spreadPolicy is not simulated: the decisions ignore it")
    base = replace(
        base,
        filtered_predicates=removed(members, passed),
        filtered_taints=removed(passed, left),
    )
    if misconfigured is not None:
        first_line = misconfigured.message.splitlines()[0]  # cel-go's error has a snippet
        warnings.append(
            f"OCM reports the Placement misconfigured ({misconfigured.plugin}:{first_line}) "
            "and decides no cluster"
        )
        return _with_decisions(base, placement, (), {}, counts, misconfigured, warnings)

    # 4, 5. weights and scores
    results = score_prioritizers(
        prioritizers, left, index, index.absent, placement, decisions, at, warnings
    )
    names = [c.name for c in left]

    # 6. selection
    totals = {n: sum(r.weight * r.scores[n] for r in results) for n in names}
    ranking = tuple(sorted(names, key=lambda n: (-totals[n], n)))
    wanted_count = spec.numberOfClusters
    chosen = ranking if wanted_count is None else ranking[:wanted_count]
    unscheduled = 0 if wanted_count is None else max(0, wanted_count - len(chosen))
    base = replace(
        base,
        prioritizers=tuple(results),
        totals=totals,
        ranking=ranking,
        decisions=chosen,
        unscheduled=unscheduled,
        margins=margins(ranking, len(chosen), totals),
    )
    counts = replace(counts, decisions=len(chosen), unscheduled=unscheduled)
    labels = {c.name: c for c in left}
    return _with_decisions(base, placement, chosen, labels, counts, None, warnings)


def _with_decisions(
    result: PlacementResult,
    placement: Placement,
    chosen: Sequence[str],
    clusters: Mapping[str, Cluster],
    counts: SchedulingCounts,
    misconfigured: Misconfigured | None,
    warnings: list[str],
) -> PlacementResult:
    """Step 7 and 8: groups, PlacementDecisions and the conditions."""
    groups = decision_groups(
        placement, chosen, lambda selector, name: group_selects(selector, clusters[name])
    )
    if isinstance(groups, Misconfigured):
        # OCM writes no PlacementDecision at all then (and deletes the old ones)
        warnings.append(
            f"OCM reports the Placement misconfigured (:{groups.message}) and writes "
            "no PlacementDecision"
        )
        misconfigured, groups = groups, ()
    return replace(
        result,
        decision_groups=groups,
        placement_decisions=decision_objects(placement.metadata.name, groups),
        conditions=conditions(counts, misconfigured),
        warnings=tuple(warnings),
    )


def _no_effect(placement: Placement, decisions: DecisionIndex) -> list[str]:
    """Fields in OCM's API that its scheduler never reads: accepted, said to do nothing."""
    fields = sorted({"sortBy", "scoreRateLimit"} & placement.spec.model_fields_set)
    said = [f"spec.{f} has no effect: OCM's scheduler does not read it" for f in fields]
    own = decisions.own(placement.metadata.namespace, placement.metadata.name)
    scored = any(d.score is not None for pd in own for d in pd.status.decisions)
    if scored:
        said.append("ClusterDecision.score has no effect: OCM's scheduler does not read it")
    return said


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
