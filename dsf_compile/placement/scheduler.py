"""OCM's placement scheduler, simulated offline: which clusters a Placement picks, and why.

This follows open-cluster-management-io/ocm ``pkg/placement`` step by step: cluster sets,
predicates, taints and tolerations, prioritizer weights, scores, selection. Where OCM
computes in floating point and truncates (Balance, ResourceAllocatable*), so does this
module, with the same operations in the same order, so that a score on the edge of an
integer truncates the way the hub truncates it.

Pure: every input is a value, the time of the simulation included.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import Any

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
    ClusterSelector,
    GroupClusterSelector,
    ManagedClusterSetBinding,
    Placement,
    PlacementDecision,
    ScoreCoordinate,
    Toleration,
)
from dsf_compile.inputs.quantity import quantity_value
from dsf_compile.inputs.selectors import selector_matches
from dsf_compile.placement.cel import CelExpression, cluster_context, compile_expression, is_true
from dsf_compile.placement.decisions import (
    Condition,
    DecisionGroup,
    DecisionObject,
    Misconfigured,
    SchedulingCounts,
    conditions,
    decision_groups,
    decision_objects,
    margins,
)

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
    #: ``metadata.deletionTimestamp`` is set: never a candidate.
    deleting: bool = False
    #: The ManagedCluster as CEL's ``managedCluster`` sees it (OCM's unstructured form).
    view: Mapping[str, Any] = field(default_factory=dict)

    def cel_view(self) -> Mapping[str, Any]:
        """``managedCluster`` for CEL: the object as read, or its name and labels."""
        if self.view:
            return self.view
        metadata: dict[str, Any] = {"name": self.name}
        if self.labels:
            metadata["labels"] = dict(self.labels)
        return {"metadata": metadata, "spec": {"hubAcceptsClient": False}}


def cel_view(document: Mapping[str, Any]) -> dict[str, Any]:
    """OCM's conversion of a ManagedCluster for CEL: the object without apiVersion and kind.

    What ``kubectl get -o yaml`` prints is the typed object's JSON (empty fields
    omitted), which is what OCM's unstructured conversion gives; YAML's readings that
    JSON does not have are undone: times are RFC 3339 UTC strings, and a quantity written
    as a bare number (``cpu: 2``) is the string a Quantity marshals to.
    """
    view = {k: _json_like(v, 0) for k, v in document.items() if k not in ("apiVersion", "kind")}
    status = view.get("status")
    if isinstance(status, dict):
        for resources in ("allocatable", "capacity"):
            found = status.get(resources)
            if isinstance(found, dict):
                status[resources] = {
                    k: v if isinstance(v, str) else _number_text(v) for k, v in found.items()
                }
    return view


def _json_like(value: Any, depth: int) -> Any:
    if depth > _MAX_VIEW_DEPTH:
        return None
    if isinstance(value, dict):
        return {str(k): _json_like(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_like(v, depth + 1) for v in value]
    if isinstance(value, datetime):
        return format_time(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, date):
        return value.isoformat()
    return value


def _number_text(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    return repr(value) if isinstance(value, float) else str(value)


#: A ManagedCluster is a few levels deep; deeper input is cut rather than recursed into.
_MAX_VIEW_DEPTH = 32


def cluster_from_inventory(
    name: str,
    labels: Mapping[str, str],
    spec: ManagedClusterSpec | None = None,
    status: ManagedClusterStatus | None = None,
    *,
    deleting: bool = False,
    view: Mapping[str, Any] | None = None,
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
        deleting=deleting,
        view=view or {},
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
    #: Step 7: the decision groups in order, and the PlacementDecisions OCM writes.
    decision_groups: tuple[DecisionGroup, ...] = ()
    placement_decisions: tuple[DecisionObject, ...] = ()
    #: Step 8: PlacementMisconfigured and PlacementSatisfied (none when not scheduled).
    conditions: tuple[Condition, ...] = ()
    #: By how much each decided cluster beats the best one left out; None when none is.
    margins: Mapping[str, int] | None = None


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
    #: CEL's per-cluster contexts and results within one run: an expression's value for a
    #: cluster depends on nothing else, and many Placements share their expressions.
    cel_memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
    #: No scores were given at all (every AddOn score is 0, and a warning says so).
    absent: bool = False

    @classmethod
    def of(cls, scores: Iterable[AddOnPlacementScore] | None) -> ScoreIndex:
        """Index ``scores`` (None: no scores were given)."""
        if scores is None:
            return cls({}, {}, absent=True)
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

    def cel_true(self, expression: CelExpression, cluster: Cluster) -> bool:
        """Whether ``expression`` is true for ``cluster``, evaluated once per run."""
        key = (expression.source, cluster.name)
        found = self.cel_memo.get(key)
        if found is None:
            context = self.cel_memo.get(cluster.name)
            if context is None:
                context = cluster_context(cluster.cel_view(), self.cel_scores)
                self.cel_memo[cluster.name] = context
            found = is_true(expression, cluster.cel_view(), self.cel_scores, context)
            self.cel_memo[key] = found
        return bool(found)

    def cel_scores(self, cluster: str, name: str) -> list[dict[str, object]] | None:
        """``managedCluster.scores(name)``: the object's items in order; None when absent."""
        found = self.objects.get((cluster, name))
        if found is None:
            return None
        return [{"name": item.name, "value": item.value} for item in found.status.scores]


#: Every distinct expression is compiled once per run, however many Placements use it.
compile_cached = functools.lru_cache(maxsize=4096)(compile_expression)


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
    Placement's, Balance the others').
    """
    if at.tzinfo is None:
        raise ValueError("the time of the simulation must carry a time zone")
    namespace, name = placement.metadata.namespace, placement.metadata.name
    spec = placement.spec
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
    members = [c for c in by_name if _in_sets(c, cluster_sets, set_members) and not c.deleting]
    deleting = sorted(
        c.name for c in by_name if c.deleting and _in_sets(c, cluster_sets, set_members)
    )
    if deleting:
        warnings.append(f"being deleted, never a candidate: {_some(deleting)}")
    base = PlacementResult(
        namespace=namespace,
        name=name,
        simulated=True,
        cluster_sets=cluster_sets,
        filtered_cluster_sets=_removed(by_name, members),
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
    selectors = _compiled_predicates(placement) if members and spec.predicates else []
    unsupported = next((u for _, e in selectors for u in _unsupported(e)), None)
    if unsupported is not None:
        return replace(
            base,
            simulated=False,
            warnings=(*warnings, f"not simulated: a celSelector {unsupported}"),
        )
    misconfigured = next((m for m in (_cel_misconfigured(selectors),) if m), None)
    passed = members if misconfigured else [c for c in members if _passes(selectors, c, index)]
    # 3. taints and tolerations
    if misconfigured is None and passed:
        misconfigured = _toleration_misconfigured(spec.tolerations)
    own = _own_decisions(placement, decisions)
    left = (
        passed
        if misconfigured
        else [c for c in passed if _tolerated(c, spec.tolerations, c.name in own, at)]
    )
    prioritizers = _prioritizers(placement)
    if misconfigured is None:
        misconfigured = _prioritizer_misconfigured(prioritizers)
    if spec.spreadPolicy is not None and spec.spreadPolicy.spreadConstraints:
        warnings.append("spreadPolicy is not simulated: the decisions ignore it")
    base = replace(
        base,
        filtered_predicates=_removed(members, passed),
        filtered_taints=_removed(passed, left),
    )
    if misconfigured is not None:
        first_line = misconfigured.message.splitlines()[0]  # cel-go's error has a snippet
        warnings.append(
            f"OCM reports the Placement misconfigured ({misconfigured.plugin}:{first_line}) "
            "and decides no cluster"
        )
        return _with_decisions(base, placement, (), {}, counts, misconfigured, warnings)

    # 4, 5. weights and scores
    results = _score(prioritizers, left, index, index.absent, placement, decisions, at, warnings)
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
        placement, chosen, lambda selector, name: _group_selects(selector, clusters[name])
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


def _score(
    prioritizers: Sequence[_Prioritizer],
    left: Sequence[Cluster],
    index: ScoreIndex,
    no_scores: bool,
    placement: Placement,
    decisions: Sequence[PlacementDecision],
    at: datetime,
    warnings: list[str],
) -> list[PrioritizerResult]:
    """Steps 4 and 5: every prioritizer's score for the clusters left; warnings appended."""
    names = [c.name for c in left]
    own = _own_decisions(placement, decisions)
    results: list[PrioritizerResult] = []
    addon_zero: dict[str, list[str]] = {}
    expired: set[tuple[str, str, datetime]] = set()
    used_resources: set[str] = set()
    for prioritizer in prioritizers:
        coordinate = prioritizer.coordinate
        if coordinate.type == "AddOn" and coordinate.addOn is not None:
            values, missing, stale = _addon_scores(
                left, index, coordinate.addOn.resourceName, coordinate.addOn.scoreName, at
            )
            if missing and not no_scores:
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

    if no_scores and any(p.coordinate.type == "AddOn" for p in prioritizers):
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
    return results


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


def _in_sets(
    cluster: Cluster,
    cluster_sets: Sequence[str],
    set_members: Mapping[str, frozenset[str]] | None = None,
) -> bool:
    if set_members is not None:
        return any(cluster.name in set_members.get(s, frozenset()) for s in cluster_sets)
    return any(
        s == GLOBAL_CLUSTER_SET or cluster.labels.get(CLUSTERSET_LABEL) == s for s in cluster_sets
    )


def _removed(before: Sequence[Cluster], after: Sequence[Cluster]) -> tuple[str, ...]:
    kept = {c.name for c in after}
    return tuple(sorted(c.name for c in before if c.name not in kept))


def _no_effect(placement: Placement, decisions: Sequence[PlacementDecision]) -> list[str]:
    """Fields in OCM's API that its scheduler never reads: accepted, said to do nothing."""
    fields = sorted({"sortBy", "scoreRateLimit"} & placement.spec.model_fields_set)
    said = [f"spec.{f} has no effect: OCM's scheduler does not read it" for f in fields]
    scored = any(
        d.score is not None
        for pd in decisions
        if pd.metadata.namespace == placement.metadata.namespace
        and pd.placement_name == placement.metadata.name
        for d in pd.status.decisions
    )
    if scored:
        said.append("ClusterDecision.score has no effect: OCM's scheduler does not read it")
    return said


def _existing_objects(
    placement: Placement, decisions: Sequence[PlacementDecision]
) -> tuple[DecisionObject, ...]:
    """This Placement's PlacementDecisions as they are, sorted by name."""
    own = [
        pd
        for pd in decisions
        if pd.metadata.namespace == placement.metadata.namespace
        and pd.placement_name == placement.metadata.name
    ]
    return tuple(
        DecisionObject(
            pd.metadata.name,
            dict(sorted(pd.metadata.labels.items())),
            tuple(d.clusterName for d in pd.status.decisions),
        )
        for pd in sorted(own, key=lambda pd: pd.metadata.name)
    )


_Selector = tuple[ClusterSelector | None, tuple[CelExpression, ...]]


def _compiled_predicates(placement: Placement) -> list[_Selector]:
    """Each predicate's selector and its CEL expressions, compiled once for every cluster."""
    out: list[_Selector] = []
    for predicate in placement.spec.predicates:
        selector = predicate.requiredClusterSelector
        cel_selector = selector.celSelector if selector is not None else None
        sources = (cel_selector.celExpressions or ()) if cel_selector is not None else ()
        out.append((selector, tuple(compile_cached(source) for source in sources)))
    return out


def _unsupported(expressions: Sequence[CelExpression]) -> list[str]:
    return [e.unsupported for e in expressions if e.unsupported is not None]


def _cel_misconfigured(selectors: Sequence[_Selector]) -> Misconfigured | None:
    """The Predicate plugin's first compile error, as OCM reports it."""
    for _, expressions in selectors:
        for expression in expressions:
            if expression.error is not None:
                return Misconfigured("Predicate", expression.error)
    return None


def _passes(selectors: Sequence[_Selector], cluster: Cluster, index: ScoreIndex) -> bool:
    """Step 2: the cluster matches any predicate (no predicates: every cluster passes)."""
    if not selectors:
        return True
    for selector, expressions in selectors:
        if selector is None:
            return True
        labels_ok = selector.labelSelector is None or selector_matches(
            selector.labelSelector, cluster.labels
        )
        claims = selector.claimSelector
        claims_ok = claims is None or _expressions_match(claims.matchExpressions, cluster.claims)
        if labels_ok and claims_ok and all(index.cel_true(e, cluster) for e in expressions):
            return True
    return False


def _group_selects(selector: GroupClusterSelector, cluster: Cluster) -> bool:
    """A decision group's selector: labels and claims (an empty one selects every cluster)."""
    labels_ok = selector.labelSelector is None or selector_matches(
        selector.labelSelector, cluster.labels
    )
    claims = selector.claimSelector
    return labels_ok and (
        claims is None or _expressions_match(claims.matchExpressions, cluster.claims)
    )


def _toleration_misconfigured(tolerations: Sequence[Toleration]) -> Misconfigured | None:
    """The TaintToleration plugin's check of the tolerations, with OCM's messages."""
    for toleration in tolerations:
        if not toleration.key and toleration.operator != "Exists":
            return Misconfigured("TaintToleration", "If the key is empty, operator must be Exists.")
        if toleration.operator == "Exists" and toleration.value:
            return Misconfigured(
                "TaintToleration", "If the operator is Exists, the value should be empty."
            )
    return None


def _prioritizer_misconfigured(prioritizers: Sequence[_Prioritizer]) -> Misconfigured | None:
    """``getPrioritizers``: a built-in OCM does not implement (Spread) with a weight."""
    unknown = sorted(
        {p.name for p in prioritizers if p.coordinate.type == "BuiltIn"}
        - {"Balance", "Steady", *_RESOURCES}
    )
    # OCM walks a Go map, so which of several it names varies; the first by name here
    return Misconfigured("", f"incorrect builtin prioritizer: {unknown[0]}") if unknown else None


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
