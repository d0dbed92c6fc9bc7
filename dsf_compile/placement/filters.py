"""Steps 1 to 3 of OCM's scheduler: cluster sets, predicates (CEL included), taints.

Each step is a function over the one before (``cluster_sets_step``, ``predicates_step``,
``taints_step``), built on the tests a cluster must pass (``in_sets``,
``passes_predicates``, ``tolerated``) and the settings OCM refuses.

Follows ocm ``pkg/placement``: ``controllers/scheduling/helpers.go`` (cluster sets),
``plugins/predicate`` and ``helpers/clusters.go`` (predicates), ``plugins/tainttoleration``
(taints and tolerations, and the tolerations it calls misconfigured). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from dsf_compile.inputs.inventory import ClusterTaint, LabelSelector, LabelSelectorRequirement
from dsf_compile.inputs.placements import (
    CLUSTERSET_LABEL,
    ClusterSelector,
    GroupClusterSelector,
    ManagedClusterSetBinding,
    Placement,
    PlacementToleration,
)
from dsf_compile.inputs.selectors import selector_matches
from dsf_compile.placement.decisions import Misconfigured
from dsf_compile.placement.prioritizers import some_names
from dsf_compile.placement.state import Cluster, ScoreIndex, compile_cached
from dsf_contract.fields import add_seconds
from dsf_contract.records import frozen

if TYPE_CHECKING:  # the CEL engine is loaded by compile_cached, for a fleet's first expression
    from dsf_compile.placement.cel import CelExpression

GLOBAL_CLUSTER_SET = "global"


def in_sets(
    cluster: Cluster,
    cluster_sets: Sequence[str],
    set_members: Mapping[str, frozenset[str]] | None = None,
) -> bool:
    """Step 1: the cluster is a member of one of ``cluster_sets``."""
    if set_members is not None:
        return any(cluster.name in set_members.get(s, frozenset()) for s in cluster_sets)
    return any(
        s == GLOBAL_CLUSTER_SET or cluster.labels.get(CLUSTERSET_LABEL) == s for s in cluster_sets
    )


def removed(before: Sequence[Cluster], after: Sequence[Cluster]) -> tuple[str, ...]:
    """The clusters a step removed, sorted by name."""
    kept = {c.name for c in after}
    return tuple(sorted(c.name for c in before if c.name not in kept))


#: One predicate: its label and claim selectors, and its CEL expressions compiled.
PredicateSelector = tuple[ClusterSelector | None, tuple["CelExpression", ...]]


def compiled_predicates(placement: Placement) -> list[PredicateSelector]:
    """Each predicate's selector and its CEL expressions, compiled once for every cluster."""
    out: list[PredicateSelector] = []
    for predicate in placement.spec.predicates:
        selector = predicate.requiredClusterSelector
        cel_selector = selector.celSelector if selector is not None else None
        sources = (cel_selector.celExpressions or ()) if cel_selector is not None else ()
        out.append((selector, tuple(compile_cached(source) for source in sources)))
    return out


def unsupported_reasons(expressions: Sequence[CelExpression]) -> list[str]:
    return [e.unsupported for e in expressions if e.unsupported is not None]


def cel_misconfigured(selectors: Sequence[PredicateSelector]) -> Misconfigured | None:
    """The Predicate plugin's first compile error, as OCM reports it."""
    for _, expressions in selectors:
        for expression in expressions:
            if expression.error is not None:
                return Misconfigured("Predicate", expression.error)
    return None


def passes_predicates(
    selectors: Sequence[PredicateSelector], cluster: Cluster, index: ScoreIndex
) -> bool:
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
        if labels_ok and claims_ok and index.cel_all_true(expressions, cluster):
            return True
    return False


def group_selects(selector: GroupClusterSelector, cluster: Cluster) -> bool:
    """A decision group's selector: labels and claims (an empty one selects every cluster)."""
    labels_ok = selector.labelSelector is None or selector_matches(
        selector.labelSelector, cluster.labels
    )
    claims = selector.claimSelector
    return labels_ok and (
        claims is None or _expressions_match(claims.matchExpressions, cluster.claims)
    )


def toleration_misconfigured(tolerations: Sequence[PlacementToleration]) -> Misconfigured | None:
    """The TaintToleration plugin's check of the tolerations, with OCM's messages."""
    for toleration in tolerations:
        if not toleration.key and toleration.operator != "Exists":
            return Misconfigured("TaintToleration", "If the key is empty, operator must be Exists.")
        if toleration.operator == "Exists" and toleration.value:
            return Misconfigured(
                "TaintToleration", "If the operator is Exists, the value should be empty."
            )
    return None


def _expressions_match(
    expressions: Sequence[LabelSelectorRequirement] | None, labels: Mapping[str, str]
) -> bool:
    return selector_matches(LabelSelector(matchExpressions=tuple(expressions or ())), labels)


def tolerated(
    cluster: Cluster, tolerations: Sequence[PlacementToleration], decided: bool, at: datetime
) -> bool:
    for taint in cluster.taints:
        if taint.effect == "PreferNoSelect":
            continue
        if taint.effect == "NoSelectIfNew" and decided:
            continue
        if not any(_tolerates(t, taint, at) for t in tolerations):
            return False
    return True


def _tolerates(toleration: PlacementToleration, taint: ClusterTaint, at: datetime) -> bool:
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
    return at < add_seconds(taint.timeAdded, toleration.tolerationSeconds)


@frozen
class ClusterSets:
    """Step 1: the cluster sets the Placement selects from and their available members."""

    names: tuple[str, ...]
    #: How many cluster sets are bound to the Placement's namespace.
    bound: int
    #: The members not being deleted, sorted by name.
    members: tuple[Cluster, ...]
    #: Every cluster that is not one of ``members``, sorted.
    filtered: tuple[str, ...]
    warnings: tuple[str, ...]


def cluster_sets_step(
    placement: Placement,
    clusters: Sequence[Cluster],
    bindings: Sequence[ManagedClusterSetBinding],
    set_members: Mapping[str, frozenset[str]] | None,
) -> ClusterSets:
    """Step 1: the bound sets the spec names (all bound ones when it names none), and
    their members; a cluster being deleted is never available (``GetAvailableClusters``)."""
    namespace = placement.metadata.namespace
    by_name = sorted(clusters, key=lambda c: c.name)
    bound = sorted({b.metadata.name for b in bindings if b.metadata.namespace == namespace})
    wanted = set(placement.spec.clusterSets)
    names = tuple(s for s in bound if s in wanted) if wanted else tuple(bound)
    warnings = _binding_warnings(namespace, bound, wanted)
    in_any = [c for c in by_name if in_sets(c, names, set_members)]
    members = tuple(c for c in in_any if not c.deleting)
    deleting = [c.name for c in in_any if c.deleting]
    if deleting:
        warnings.append(f"being deleted, never a candidate: {some_names(deleting)}")
    return ClusterSets(names, len(bound), members, removed(by_name, members), tuple(warnings))


def _binding_warnings(namespace: str, bound: Sequence[str], wanted: set[str]) -> list[str]:
    """No set bound at all, or sets the spec names that are not bound."""
    if not bound:
        return [
            f"no ManagedClusterSetBinding binds a cluster set to namespace {namespace}: "
            "the Placement selects no cluster"
        ]
    unbound = sorted(wanted - set(bound))
    if not unbound:
        return []
    return [f"spec.clusterSets names sets not bound to namespace {namespace}: {', '.join(unbound)}"]


@frozen
class Filtered:
    """Steps 2 and 3: the clusters each kept, and why OCM decides none (None: it decides)."""

    before: tuple[Cluster, ...]
    kept: tuple[Cluster, ...]
    misconfigured: Misconfigured | None
    #: The clusters removed by the steps before this one (step 3: by the predicates).
    earlier: tuple[str, ...] = ()

    @property
    def removed(self) -> tuple[str, ...]:
        """The clusters this step removed, sorted."""
        return removed(self.before, self.kept)


def predicates_step(
    placement: Placement, members: Sequence[Cluster], index: ScoreIndex
) -> Filtered | str:
    """Step 2: the members any predicate selects, or why a celSelector cannot be simulated.

    OCM compiles CEL only when there are clusters to filter; a compile error makes the
    Placement misconfigured, and the step then keeps every member.
    """
    spec = placement.spec
    selectors = compiled_predicates(placement) if members and spec.predicates else []
    unsupported = next((u for _, e in selectors for u in unsupported_reasons(e)), None)
    if unsupported is not None:
        return unsupported
    misconfigured = cel_misconfigured(selectors)
    if misconfigured is not None:
        return Filtered(tuple(members), tuple(members), misconfigured)
    passed = tuple(c for c in members if passes_predicates(selectors, c, index))
    return Filtered(tuple(members), passed, None)


def taints_step(
    placement: Placement, passed: Filtered, own: frozenset[str], at: datetime
) -> Filtered:
    """Step 3: the clusters whose taints the Placement tolerates (``NoSelectIfNew`` only
    keeps out clusters it has not decided), unless OCM already calls it misconfigured."""
    tolerations = placement.spec.tolerations
    misconfigured = passed.misconfigured
    if misconfigured is None and passed.kept:
        misconfigured = toleration_misconfigured(tolerations)
    kept = passed.kept
    if misconfigured is None:
        kept = tuple(c for c in kept if tolerated(c, tolerations, c.name in own, at))
    return Filtered(passed.kept, kept, misconfigured, passed.removed)
