"""Steps 1 to 3 of OCM's scheduler: cluster sets, predicates (CEL included), taints.

Follows ocm ``pkg/placement``: ``controllers/scheduling/helpers.go`` (cluster sets),
``plugins/predicate`` and ``helpers/clusters.go`` (predicates), ``plugins/tainttoleration``
(taints and tolerations, and the tolerations it calls misconfigured). Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from dsf_compile.inputs.inventory import ClusterTaint, LabelSelector, LabelSelectorRequirement
from dsf_compile.inputs.placements import (
    CLUSTERSET_LABEL,
    ClusterSelector,
    GroupClusterSelector,
    Placement,
    PlacementToleration,
)
from dsf_compile.inputs.selectors import selector_matches
from dsf_compile.placement.cel import CelExpression
from dsf_compile.placement.decisions import Misconfigured
from dsf_compile.placement.state import Cluster, ScoreIndex, compile_cached
from dsf_contract.fields import add_seconds

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
PredicateSelector = tuple[ClusterSelector | None, tuple[CelExpression, ...]]


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
