"""OCM's placement scheduler, simulated offline: which clusters a Placement picks, and why.

This follows open-cluster-management-io/ocm ``pkg/placement`` step by step: cluster sets,
predicates, taints and tolerations, prioritizer weights, scores, selection. Where OCM
computes in floating point and truncates (Balance, ResourceAllocatable*), so does this
module, with the same operations in the same order, so that a score on the edge of an
integer truncates the way the hub truncates it.

Pure: every input is a value, the time of the simulation included.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fractions import Fraction

from dsf_compile.inputs.inventory import (
    ClusterTaint,
    LabelSelector,
    LabelSelectorRequirement,
    ManagedClusterSpec,
    ManagedClusterStatus,
)
from dsf_compile.inputs.placements import (
    CLUSTERSET_LABEL,
    SCHEDULING_DISABLED_ANNOTATION,
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    ScoreCoordinate,
    Toleration,
)
from dsf_compile.inputs.quantity import quantity_value
from dsf_compile.inputs.selectors import selector_matches

GLOBAL_CLUSTER_SET = "global"
MAX_SCORE = 100
_RESOURCES = {"ResourceAllocatableCPU": "cpu", "ResourceAllocatableMemory": "memory"}
_DEFAULT_WEIGHTS = (("Balance", 1), ("Steady", 1))
#: How many cluster names a warning lists before it says "and N more".
_NAMED_IN_WARNING = 5


@dataclass(frozen=True)
class Cluster:
    """What the scheduler knows of one managed cluster of the inventory."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    claims: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[ClusterTaint, ...] = ()
    allocatable: Mapping[str, Fraction] = field(default_factory=dict)
    capacity: Mapping[str, Fraction] = field(default_factory=dict)


def cluster_from_inventory(
    name: str,
    labels: Mapping[str, str],
    spec: ManagedClusterSpec | None = None,
    status: ManagedClusterStatus | None = None,
) -> Cluster:
    """Build a :class:`Cluster` from a validated ManagedCluster's parts."""
    spec = spec or ManagedClusterSpec()
    status = status or ManagedClusterStatus()
    # A later claim of the same name wins, as in OCM's GetClusterClaims.
    claims = {claim.name: claim.value for claim in status.clusterClaims}
    return Cluster(
        name=name,
        labels=dict(labels),
        claims=claims,
        taints=tuple(spec.taints),
        allocatable={k: quantity_value(v) for k, v in status.allocatable.items()},
        capacity={k: quantity_value(v) for k, v in status.capacity.items()},
    )


@dataclass(frozen=True)
class PrioritizerResult:
    """One prioritizer whose weight is not 0: its score for every cluster left after step 3."""

    name: str
    weight: int
    scores: Mapping[str, int]


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


@dataclass(frozen=True)
class ScoreIndex:
    """AddOnPlacementScores by (cluster namespace, name), and their items by name.

    Built once and passed to every :func:`schedule` call of a run, so that a fleet's
    snapshot is indexed once rather than once per Placement. A later object with the
    same namespace and name replaces an earlier one; an item named twice keeps its last
    value, as OCM's loop does.
    """

    objects: Mapping[tuple[str, str], AddOnPlacementScore]
    items: Mapping[tuple[str, str], Mapping[str, int]]
    #: The keys of the objects whose agent reports them failing, sorted (usually few).
    failing: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, scores: Iterable[AddOnPlacementScore]) -> ScoreIndex:
        """Index ``scores``."""
        objects = {(s.metadata.namespace, s.metadata.name): s for s in scores}
        items = {
            key: {item.name: item.value for item in s.status.scores} for key, s in objects.items()
        }
        failing = sorted(
            key
            for key, s in objects.items()
            if any(c.type == "ScoresAvailable" and c.status == "False" for c in s.status.conditions)
        )
        return cls(objects, items, tuple(failing))


@dataclass(frozen=True)
class _Prioritizer:
    name: str
    weight: int
    coordinate: ScoreCoordinate


def schedule(
    placement: Placement,
    clusters: Sequence[Cluster],
    bindings: Sequence[ManagedClusterSetBinding],
    scores: Sequence[AddOnPlacementScore] | ScoreIndex | None,
    decisions: Sequence[PlacementDecision],
    at: datetime,
) -> PlacementResult:
    """Simulate OCM's scheduler for one Placement at the time ``at`` (time-zone aware).

    ``scores`` is None when no AddOnPlacementScores were given at all (every AddOn score
    is then 0 and a warning says so), or a :class:`ScoreIndex` of them when many
    Placements are scheduled against the same scores; ``decisions`` are the
    PlacementDecisions of every Placement (Steady and NoSelectIfNew read this
    Placement's, Balance the others').
    """
    if at.tzinfo is None:
        raise ValueError("the time of the simulation must carry a time zone")
    namespace, name = placement.metadata.namespace, placement.metadata.name
    spec = placement.spec
    warnings: list[str] = []
    by_name = sorted(clusters, key=lambda c: c.name)

    # 1. cluster sets
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
    members = [c for c in by_name if _in_sets(c, cluster_sets)]
    removed_by_sets = _removed(by_name, members)

    def not_simulated(reason: str) -> PlacementResult:
        return PlacementResult(
            namespace=namespace,
            name=name,
            simulated=False,
            cluster_sets=cluster_sets,
            filtered_cluster_sets=removed_by_sets,
            filtered_predicates=(),
            filtered_taints=(),
            prioritizers=(),
            totals={},
            ranking=(),
            decisions=(),
            unscheduled=0,
            warnings=(*warnings, reason),
        )

    if (placement.metadata.annotations or {}).get(SCHEDULING_DISABLED_ANNOTATION) == "true":
        return not_simulated(
            f'not simulated: the annotation {SCHEDULING_DISABLED_ANNOTATION}: "true" '
            "keeps OCM from scheduling this Placement"
        )
    if any(
        p.requiredClusterSelector is not None
        and p.requiredClusterSelector.celSelector is not None
        and p.requiredClusterSelector.celSelector.celExpressions
        for p in spec.predicates
    ):
        return not_simulated(
            "not simulated: a predicate uses celSelector, which dsf does not evaluate"
        )
    prioritizers = _prioritizers(placement)
    unknown = sorted(
        {p.name for p in prioritizers if p.coordinate.type == "BuiltIn"}
        - {"Balance", "Steady", *_RESOURCES}
    )
    if unknown:
        return not_simulated(
            f"not simulated: OCM reports the Placement misconfigured (unknown built-in "
            f"prioritizer {', '.join(unknown)})"
        )
    if spec.spreadPolicy is not None and spec.spreadPolicy.spreadConstraints:
        warnings.append("spreadPolicy is not simulated: the decisions ignore it")

    # 2. predicates
    passed = [c for c in members if _passes_predicates(placement, c)]
    # 3. taints and tolerations
    own = _own_decisions(placement, decisions)
    left = [c for c in passed if _tolerated(c, spec.tolerations, c.name in own, at)]
    names = [c.name for c in left]

    # 4, 5. weights and scores
    results: list[PrioritizerResult] = []
    addon_zero: dict[str, list[str]] = {}
    expired: set[tuple[str, str, datetime]] = set()
    used_resources: set[str] = set()
    index = scores if isinstance(scores, ScoreIndex) else ScoreIndex.of(scores or ())
    for prioritizer in prioritizers:
        coordinate = prioritizer.coordinate
        if coordinate.type == "AddOn" and coordinate.addOn is not None:
            values, missing, stale = _addon_scores(
                left, index, coordinate.addOn.resourceName, coordinate.addOn.scoreName, at
            )
            if missing and scores is not None:
                addon_zero.setdefault(prioritizer.name, []).extend(missing)
            expired |= stale
            used_resources.add(coordinate.addOn.resourceName)
        elif prioritizer.name == "Steady":
            values = {n: MAX_SCORE if n in own else 0 for n in names}
        elif prioritizer.name == "Balance":
            values = _balance_scores(placement, names, decisions)
        else:
            values = _resource_scores(left, _RESOURCES[prioritizer.name])
        results.append(PrioritizerResult(prioritizer.name, prioritizer.weight, values))
    results.sort(key=lambda r: r.name)

    if scores is None and any(p.coordinate.type == "AddOn" for p in prioritizers):
        warnings.append("no AddOnPlacementScores were given: every AddOn score is 0")
    for prioritizer_name, zero in sorted(addon_zero.items()):
        warnings.append(
            f"{prioritizer_name}: no such score for {_some(sorted(set(zero)))}: they score 0"
        )
    for score_namespace, score_name, until in sorted(expired):
        warnings.append(
            f"AddOnPlacementScore {score_namespace}/{score_name} expired at "
            f"{format_time(until)}: it scores 0"
        )
    left_names = set(names)
    failing = [
        (cluster, resource)
        for cluster, resource in index.failing
        if resource in used_resources and cluster in left_names
    ]
    warnings += _failing_scores(index.objects, failing)
    twice = sorted(n for n, k in Counter(p.name for p in prioritizers).items() if k > 1)
    if twice:
        warnings.append(f"prioritizer configured more than once, OCM adds each: {', '.join(twice)}")

    # 6. selection
    totals = {n: sum(r.weight * r.scores[n] for r in results) for n in names}
    ranking = tuple(sorted(names, key=lambda n: (-totals[n], n)))
    wanted_count = spec.numberOfClusters
    chosen = ranking if wanted_count is None else ranking[:wanted_count]
    return PlacementResult(
        namespace=namespace,
        name=name,
        simulated=True,
        cluster_sets=cluster_sets,
        filtered_cluster_sets=removed_by_sets,
        filtered_predicates=_removed(members, passed),
        filtered_taints=_removed(passed, left),
        prioritizers=tuple(results),
        totals=totals,
        ranking=ranking,
        decisions=chosen,
        unscheduled=0 if wanted_count is None else max(0, wanted_count - len(chosen)),
        warnings=tuple(warnings),
    )


def _failing_scores(
    index: Mapping[tuple[str, str], AddOnPlacementScore], used: Sequence[tuple[str, str]]
) -> list[str]:
    """Scores whose agent reports them failing (the ``ScoresAvailable`` condition is False)."""
    out = []
    for cluster, resource in used:
        found = index.get((cluster, resource))
        for condition in found.status.conditions if found is not None else ():
            if condition.type == "ScoresAvailable" and condition.status == "False":
                since = (
                    f" since {format_time(condition.lastTransitionTime)}"
                    if condition.lastTransitionTime
                    else ""
                )
                out.append(
                    f"score {resource} failing on cluster {cluster}{since} ({condition.reason}): "
                    "its last good values are used until they expire"
                )
    return out


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, the way Kubernetes prints times."""
    text = moment.astimezone(UTC).isoformat()
    return text.removesuffix("+00:00") + "Z"


# ------------------------------------------------------------------------ steps


def _in_sets(cluster: Cluster, cluster_sets: Sequence[str]) -> bool:
    return any(
        s == GLOBAL_CLUSTER_SET or cluster.labels.get(CLUSTERSET_LABEL) == s for s in cluster_sets
    )


def _removed(before: Sequence[Cluster], after: Sequence[Cluster]) -> tuple[str, ...]:
    kept = {c.name for c in after}
    return tuple(sorted(c.name for c in before if c.name not in kept))


def _passes_predicates(placement: Placement, cluster: Cluster) -> bool:
    predicates = placement.spec.predicates
    if not predicates:
        return True
    for predicate in predicates:
        selector = predicate.requiredClusterSelector
        if selector is None:
            return True
        labels_ok = selector.labelSelector is None or selector_matches(
            selector.labelSelector, cluster.labels
        )
        claims = selector.claimSelector
        claims_ok = claims is None or _expressions_match(claims.matchExpressions, cluster.claims)
        if labels_ok and claims_ok:
            return True
    return False


def _expressions_match(
    expressions: Sequence[LabelSelectorRequirement] | None, labels: Mapping[str, str]
) -> bool:
    return selector_matches(LabelSelector(matchExpressions=tuple(expressions or ())), labels)


def _own_decisions(placement: Placement, decisions: Sequence[PlacementDecision]) -> set[str]:
    """The clusters in this Placement's decisions (found by label, as OCM finds them)."""
    return {
        d.clusterName
        for pd in decisions
        if pd.metadata.namespace == placement.metadata.namespace
        and pd.placement_name == placement.metadata.name
        for d in pd.status.decisions
    }


def _tolerated(
    cluster: Cluster, tolerations: Sequence[Toleration], decided: bool, at: datetime
) -> bool:
    for taint in cluster.taints:
        if taint.effect == "PreferNoSelect":
            continue
        if taint.effect == "NoSelectIfNew" and decided:
            continue
        if not any(_tolerates(t, taint, at) for t in tolerations):
            return False
    return True


def _tolerates(toleration: Toleration, taint: ClusterTaint, at: datetime) -> bool:
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    if toleration.operator == "Equal" and (toleration.value or "") != taint.value:
        return False
    if toleration.tolerationSeconds is None:
        return True
    if taint.timeAdded is None:
        # OCM adds the seconds to a zero time: long expired.
        return False
    try:
        until = taint.timeAdded + timedelta(seconds=toleration.tolerationSeconds)
    except OverflowError:
        return toleration.tolerationSeconds > 0
    return at < until


def _prioritizers(placement: Placement) -> list[_Prioritizer]:
    """Step 4: the prioritizers whose weight is not 0, in configuration order.

    OCM keys weights by the score coordinate, whose ``addOn`` is a pointer: a built-in
    configuration overrides the default weight, but two configurations of the same
    AddOn score are two prioritizers, both counted.
    """
    policy = placement.spec.prioritizerPolicy
    weights: dict[tuple[str, str, int], tuple[int, ScoreCoordinate]] = {}
    if policy.mode == "Additive":
        for builtin, weight in _DEFAULT_WEIGHTS:
            weights["BuiltIn", builtin, -1] = (
                weight,
                ScoreCoordinate(type="BuiltIn", builtIn=builtin),
            )
    for position, config in enumerate(placement.spec.prioritizerPolicy.configurations):
        coordinate = config.scoreCoordinate
        distinct = -1 if coordinate.addOn is None else position
        weights[coordinate.type, coordinate.builtIn or "", distinct] = (config.weight, coordinate)
    return [_Prioritizer(c.name, w, c) for w, c in weights.values() if w != 0]


def _addon_scores(
    clusters: Sequence[Cluster],
    index: ScoreIndex,
    resource_name: str,
    score_name: str,
    at: datetime,
) -> tuple[dict[str, int], list[str], set[tuple[str, str, datetime]]]:
    values: dict[str, int] = {}
    missing: list[str] = []
    expired: set[tuple[str, str, datetime]] = set()
    objects, items = index.objects, index.items
    for cluster in clusters:
        values[cluster.name] = 0
        key = (cluster.name, resource_name)
        found = objects.get(key)
        if found is None:
            missing.append(cluster.name)
            continue
        until = found.status.validUntil
        if until is not None and at > until:
            expired.add((cluster.name, resource_name, until))
            continue
        value = items[key].get(score_name)  # the last item of that name, as in OCM's loop
        if value is None:
            missing.append(cluster.name)
        else:
            values[cluster.name] = value
    return values, missing, expired


def _balance_scores(
    placement: Placement, names: Sequence[str], decisions: Sequence[PlacementDecision]
) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for pd in decisions:
        if (
            pd.metadata.namespace == placement.metadata.namespace
            and pd.placement_name == placement.metadata.name
        ):
            continue
        counts.update(d.clusterName for d in pd.status.decisions)
    most = max(counts.values(), default=0)
    values = {}
    for name in names:
        count = counts.get(name, 0)
        if count == 0:
            values[name] = MAX_SCORE
        else:
            # float64 and truncation toward zero, as OCM computes it
            usage = float(count) / float(most)
            values[name] = 2 * int(float(MAX_SCORE) * (0.5 - usage))
    return values


def _resource_scores(clusters: Sequence[Cluster], resource: str) -> dict[str, int]:
    # OCM reads quantities with AsApproximateFloat64 and computes in float64.
    reported = {
        c.name: float(c.allocatable[resource])
        for c in clusters
        if resource in c.allocatable and resource in c.capacity
    }
    values = {c.name: 0 for c in clusters}
    if not reported:
        return values
    low, high = min(reported.values()), max(reported.values())
    for name, allocatable in reported.items():
        if high - low != 0:
            ratio = (allocatable - low) / (high - low)
            values[name] = int((ratio - 0.5) * 2.0 * 100.0)
        else:
            values[name] = MAX_SCORE
    return values


def _some(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_NAMED_IN_WARNING])
    more = len(names) - _NAMED_IN_WARNING
    return f"{shown} and {more} more" if more > 0 else shown
