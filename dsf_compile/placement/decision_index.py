"""PlacementDecisions indexed once per run by the Placement their label names.

OCM finds a Placement's decisions by the ``cluster.open-cluster-management.io/placement``
label. Filtering every decision for every Placement made a hub of 100 Placements and
100,000 small decisions take a minute (``explain --verify``): the index is built once and
passed to every :func:`~dsf_compile.placement.scheduler.schedule` call of a run, so each
Placement reads only its own decisions, and Balance reads one fleet-wide count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from dsf_compile.inputs.placements import PlacementDecision
from dsf_contract.records import frozen

#: (namespace, the placement label's value or None when the label is absent)
Owner = tuple[str, str | None]


@frozen
class DecisionIndex:
    """Every PlacementDecision by its owner, and how many decisions name each cluster."""

    by_owner: Mapping[Owner, tuple[PlacementDecision, ...]]
    #: Each cluster's count over every decision of every Placement (Balance's input).
    counts: Mapping[str, int]

    @classmethod
    def of(cls, decisions: Iterable[PlacementDecision] | DecisionIndex) -> DecisionIndex:
        """Index ``decisions`` (an index is returned as it is)."""
        if isinstance(decisions, DecisionIndex):
            return decisions
        by_owner: dict[Owner, list[PlacementDecision]] = {}
        counts: Counter[str] = Counter()
        for pd in decisions:
            by_owner.setdefault((pd.metadata.namespace, pd.placement_name), []).append(pd)
            counts.update(d.clusterName for d in pd.status.decisions)
        return cls({key: tuple(value) for key, value in by_owner.items()}, counts)

    def own(self, namespace: str, name: str) -> tuple[PlacementDecision, ...]:
        """The decisions of the Placement ``namespace/name``, in the order given."""
        return self.by_owner.get((namespace, name), ())

    def own_clusters(self, namespace: str, name: str) -> set[str]:
        """The clusters in the decisions of ``namespace/name``."""
        return {d.clusterName for pd in self.own(namespace, name) for d in pd.status.decisions}

    def others_counts(self, namespace: str, name: str) -> Counter[str]:
        """Each cluster's count over the decisions of every other Placement (zeros left out)."""
        mine = Counter(
            d.clusterName for pd in self.own(namespace, name) for d in pd.status.decisions
        )
        return Counter(self.counts) - mine
