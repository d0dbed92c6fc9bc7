"""What the scheduler reads: the clusters as it sees them, and the scores, indexed once.

Pure values. :class:`ScoreIndex` also keeps, for one run, each cluster's CEL context and
each expression's result for it (an expression's value for a cluster depends on nothing
else, and many Placements share their expressions).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import field
from datetime import UTC, date, datetime, timedelta
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from dsf_compile.inputs.inventory import ClusterTaint, ManagedClusterSpec, ManagedClusterStatus
from dsf_compile.inputs.placements import AddOnPlacementScore
from dsf_compile.inputs.quantity import quantity_value
from dsf_contract.fields import in_utc
from dsf_contract.records import frozen
from dsf_contract.scores import CONDITION_TYPE

if TYPE_CHECKING:  # the CEL engine is loaded by a fleet's first expression, where it is used
    from dsf_compile.placement.cel import CelExpression, Cost


@frozen
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


#: After an expression passed OCM's cost limit on this many clusters of a run, the rest
#: are taken to pass it too (see :meth:`ScoreIndex.cel_true`).
CEL_LIMIT_CLUSTERS = 5


@frozen
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
    #: What one run computes once for every Placement: CEL's per-cluster contexts and
    #: results (an expression's value for a cluster depends on nothing else, and many
    #: Placements share their expressions) and each AddOn coordinate's table.
    memo: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)
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
            if any(c.type == CONDITION_TYPE and c.status == "False" for c in s.status.conditions)
        )
        return cls(objects, items, tuple(failing))

    def cel_true(self, expression: CelExpression, cluster: Cluster) -> bool:
        """Whether ``expression`` is true for ``cluster``, evaluated once per run."""
        key = (expression.source, cluster.name)
        found = self.memo.get(key)
        if found is None:
            context = self.memo.get(cluster.name)
            if context is None:
                # the context holds the lookup, and the memo the context: a lookup bound
                # to this index would make a cycle through the interpreter's context,
                # which Python's collector cannot see into, and no run would be freed
                from dsf_compile.placement.cel import cluster_context

                context = cluster_context(cluster.cel_view(), self.scores_lookup())
                self.memo[cluster.name] = context
            found = self._cel_outcome(expression, cluster, context)
            self.memo[key] = found
        return bool(found)

    def _cel_outcome(self, expression: CelExpression, cluster: Cluster, context: Any) -> bool:
        # Metering an expression up to OCM's limit takes a second or two here; once it
        # passed the limit on CEL_LIMIT_CLUSTERS clusters of a run, it is taken to pass it
        # on the rest (OCM drops them too), so that a hostile expression cannot make a run
        # last a fleet's size in seconds.
        from dsf_compile.placement.cel import CelEvaluationError, evaluate_costed
        from dsf_compile.placement.cel_cost import LIMIT_MESSAGE

        over = ("cel-over-limit", expression.source)
        if self.memo.get(over, 0) >= CEL_LIMIT_CLUSTERS:
            return False
        try:
            value, cost = evaluate_costed(
                expression, cluster.cel_view(), self.scores_lookup(), context
            )
        except CelEvaluationError as err:
            if str(err) == LIMIT_MESSAGE:
                self.memo[over] = self.memo.get(over, 0) + 1
            return False
        self.memo["cel-cost", expression.source, cluster.name] = cost
        return value is True

    def cel_all_true(self, expressions: Iterable[CelExpression], cluster: Cluster) -> bool:
        """Whether every expression of one CEL selector is true for ``cluster``, within
        OCM's budget for them all (``RuntimeCELCostBudget``: past it, the cluster fails).

        The costs are their worst cases unless metered; only when those pass the budget
        are the expressions so far metered, to know whether the real costs do.
        """
        spent: list[CelExpression] = []
        total = 0
        for expression in expressions:
            if not self.cel_true(expression, cluster):
                return False
            from dsf_compile.placement.cel_cost import RUNTIME_BUDGET  # loaded by compile_cached

            spent.append(expression)
            total += self._cel_cost(expression, cluster, exact=False)
            if total > RUNTIME_BUDGET:
                total = sum(self._cel_cost(e, cluster, exact=True) for e in spent)
                if total > RUNTIME_BUDGET:
                    return False
        return True

    def _cel_cost(self, expression: CelExpression, cluster: Cluster, *, exact: bool) -> int:
        """What ``expression`` cost on ``cluster``: at most, or (``exact``) as metered."""
        key = ("cel-cost", expression.source, cluster.name)
        cost: Cost | None = self.memo.get(key)
        if cost is None:
            return 0
        if exact and not cost.exact:
            from dsf_compile.placement.cel import CelEvaluationError, Cost, exact_cost
            from dsf_compile.placement.cel_cost import RUNTIME_BUDGET

            try:
                units = exact_cost(expression, cluster.cel_view(), self.scores_lookup())
            except CelEvaluationError:
                units = RUNTIME_BUDGET + 1  # not metered: the cluster is not kept
            cost = self.memo[key] = Cost(units, exact=True)
        return cost.units

    def addon_table(
        self, resource_name: str, score_name: str
    ) -> Mapping[str, tuple[int | None, datetime | None]]:
        """Cluster → (the item's value or None, validUntil) of one AddOn coordinate."""
        key = ("addon", resource_name, score_name)
        found = self.memo.get(key)
        if found is None:
            found = {
                cluster: (self.items[cluster, resource].get(score_name), obj.status.validUntil)
                for (cluster, resource), obj in self.objects.items()
                if resource == resource_name
            }
            self.memo[key] = found
        return found

    def cel_scores(self, cluster: str, name: str) -> list[dict[str, object]] | None:
        """``managedCluster.scores(name)``: the object's items in order; None when absent."""
        return _cel_scores(self.objects, cluster, name)

    def scores_lookup(self) -> functools.partial[list[dict[str, object]] | None]:
        """:meth:`cel_scores` without a reference to this index (see :meth:`cel_true`)."""
        return functools.partial(_cel_scores, self.objects)


def _cel_scores(
    objects: Mapping[tuple[str, str], AddOnPlacementScore], cluster: str, name: str
) -> list[dict[str, object]] | None:
    found = objects.get((cluster, name))
    if found is None:
        return None
    return [{"name": item.name, "value": item.value} for item in found.status.scores]


@functools.lru_cache(maxsize=4096)
def compile_cached(source: str) -> CelExpression:
    """``source`` compiled: every distinct expression once per run, however many
    Placements use it. The CEL engine is loaded here, by a fleet's first expression: a
    fleet without one (most) never loads it."""
    from dsf_compile.placement.cel import compile_expression

    return compile_expression(source)


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with a ``Z``, the way Kubernetes prints times."""
    text = in_utc(moment).isoformat()  # clamped: a time past Python's range prints its end
    return text.removesuffix("+00:00") + "Z"


def snapshot_moment(
    scores: Iterable[AddOnPlacementScore], windows: Mapping[str, int]
) -> datetime | None:
    """When a snapshot of scores was taken: its newest write, each object's ``validUntil``
    less the validity window (seconds) of the score it holds (``windows``, by
    AddOnPlacementScore name, :func:`dsf_contract.placement_scores.validity_seconds`).

    None when no object both has a ``validUntil`` and is a score the fleet publishes.
    """
    written = [
        _written(found.status.validUntil, windows[found.metadata.name])
        for found in scores
        if found.status.validUntil is not None and found.metadata.name in windows
    ]
    return max((moment for moment in written if moment is not None), default=None)


def _written(valid_until: datetime, window: int) -> datetime | None:
    """``valid_until`` less ``window`` seconds; None before the first representable moment."""
    try:
        return in_utc(valid_until) - timedelta(seconds=window)
    except OverflowError:
        return None
