"""The inventory as the scheduler sees it, in groups of clusters a Placement cannot tell apart.

Pure. :func:`inventory_clusters` turns ``clusters/`` into the scheduler's clusters;
:class:`ClusterGroups` groups them so that ``validate`` schedules each Placement once per
group instead of once per cluster, and counts the clusters a mask keeps a score off.
"""

from __future__ import annotations

from dataclasses import fields
from fnmatch import fnmatchcase
from typing import Any

from dsf_compile.inputs.placements import CLUSTERSET_LABEL, Placement
from dsf_compile.inputs.selectors import is_glob
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.scheduler import Cluster, cel_view, cluster_from_inventory
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.records import frozen

#: How many cluster names a warning lists.
NAMED = 5


def inventory_clusters(inputs: Inputs) -> tuple[Cluster, ...]:
    """The inventory as the scheduler sees it."""
    return tuple(
        cluster_from_inventory(
            c.model.metadata.name,
            c.model.metadata.labels,
            c.model.spec,
            c.model.status,
            deleting=c.model.metadata.deletionTimestamp is not None,
            view=cel_view(_document_at(c.document.data, c.base)),
        )
        for c in inputs.clusters
    )


def _document_at(data: object, pointer: Pointer) -> dict[str, Any]:
    for part in pointer:
        data = data[part] if isinstance(data, dict | list) else None  # type: ignore[index]
    return data if isinstance(data, dict) else {}


@frozen
class Group:
    """Clusters a Placement cannot tell apart: what decides whether it selects one decides for all."""

    representative: Cluster
    members: tuple[str, ...]  # sorted
    masks: tuple[int, ...]  # the broad masks (by index) that select these clusters


@frozen
class Grouping:
    """The groups of the inventory for one set of keys a Placement reads."""

    groups: list[Group]
    group_of: dict[str, int]  # cluster name -> its group's index


class ClusterGroups:
    """The inventory in groups of clusters that look alike to a Placement, for ``validate``.

    Scheduling every Placement against every cluster is Placements × clusters (10⁷ for
    1,000 × 10,000). Whether a Placement can select a cluster depends only on the labels
    and claims its cluster sets and selectors name, on the cluster's taints and on the
    rest of what the scheduler knows of it but its name and resources (which only rank).
    Clusters equal in all that, and selected by the same broad masks (a name glob or a
    selector), form one group, scheduled once through one representative; Placements that
    name the same keys share the grouping. A mask naming one cluster (upstream's form, as
    many as the clusters) is looked up per score instead of splitting the groups. The
    work is about Placements × (groups + such masks per score) plus clusters × distinct
    key sets. A Placement with a CEL expression (which may read anything) gets one group
    per cluster.
    """

    def __init__(self, inputs: Inputs) -> None:
        self.clusters = inventory_clusters(inputs)
        self.masks = inputs.masks
        selecting: dict[str, list[int]] = {}
        # the one-cluster masks: clusters by score name, and (score name glob, cluster) pairs
        self.narrow_by_score: dict[str, list[str]] = {}
        self.narrow_globs: list[tuple[str, str]] = []
        for i, mask in enumerate(self.masks):
            found = [c.model.metadata.name for c in inputs.cluster_lookup.selected_by(mask)]
            if mask.clusterName is not None and not is_glob(mask.clusterName):
                if is_glob(mask.scoreName):
                    self.narrow_globs += [(mask.scoreName, name) for name in found]
                else:
                    self.narrow_by_score.setdefault(mask.scoreName, []).extend(found)
                continue
            for name in found:
                selecting.setdefault(name, []).append(i)
        self.mask_sets = [tuple(selecting.get(c.name, ())) for c in self.clusters]
        self._groupings: dict[tuple[frozenset[str], frozenset[str]] | None, Grouping] = {}
        self._narrowly_masked: dict[str, list[str]] = {}

    def for_placement(self, placement: Placement) -> Grouping:
        """The grouping for what ``placement`` reads (shared by Placements reading the same)."""
        keys = _keys_read(placement)
        if keys not in self._groupings:
            self._groupings[keys] = self._group(keys)
        return self._groupings[keys]

    def _group(self, keys: tuple[frozenset[str], frozenset[str]] | None) -> Grouping:
        found: dict[object, list[int]] = {}
        for index, cluster in enumerate(self.clusters):
            signature = (
                (index,) if keys is None else (_signature(cluster, *keys), self.mask_sets[index])
            )
            found.setdefault(signature, []).append(index)
        groups = [
            Group(
                self.clusters[indexes[0]],
                tuple(sorted(self.clusters[i].name for i in indexes)),
                self.mask_sets[indexes[0]],
            )
            for indexes in found.values()
        ]
        group_of = {name: i for i, g in enumerate(groups) for name in g.members}
        return Grouping(groups, group_of)

    def masked(
        self, grouping: Grouping, selected: frozenset[int], score_name: str
    ) -> tuple[int, list[str]]:
        """How many clusters of the ``selected`` groups a mask keeps ``score_name`` off,
        and the first names of them (sorted)."""
        broad = {
            i
            for i in selected
            if any(
                fnmatchcase(score_name, self.masks[m].scoreName) for m in grouping.groups[i].masks
            )
        }
        count = sum(len(grouping.groups[i].members) for i in broad)
        # the first names of every group hold the first names of all of them
        names = [n for i in broad for n in grouping.groups[i].members[:NAMED]]
        for name in self._narrow_for(score_name):
            group = grouping.group_of[name]
            if group in selected and group not in broad:
                count += 1
                names.append(name)
        return count, sorted(names)[:NAMED]

    def _narrow_for(self, score_name: str) -> list[str]:
        """The clusters a one-cluster mask keeps ``score_name`` off (once per score)."""
        if score_name not in self._narrowly_masked:
            self._narrowly_masked[score_name] = sorted(
                {
                    *self.narrow_by_score.get(score_name, ()),
                    *(n for pattern, n in self.narrow_globs if fnmatchcase(score_name, pattern)),
                }
            )
        return self._narrowly_masked[score_name]


def _keys_read(placement: Placement) -> tuple[frozenset[str], frozenset[str]] | None:
    """The label and claim keys the Placement's cluster sets and predicates read; None for CEL."""
    labels, claims = {CLUSTERSET_LABEL}, set()
    for predicate in placement.spec.predicates:
        selector = predicate.requiredClusterSelector
        if selector is None:
            continue
        if selector.celSelector is not None and selector.celSelector.celExpressions:
            return None
        if selector.labelSelector is not None:
            labels |= set(selector.labelSelector.matchLabels or {})
            labels |= {e.key for e in selector.labelSelector.matchExpressions or ()}
        if selector.claimSelector is not None:
            claims |= {e.key for e in selector.claimSelector.matchExpressions or ()}
    return frozenset(labels), frozenset(claims)


#: What the scheduler knows of a cluster that only ranks it, or that only CEL reads (a
#: Placement with CEL gets a group per cluster): never part of a group's signature.
_RANKING_ONLY = frozenset({"name", "labels", "claims", "allocatable", "capacity", "view"})


def _signature(cluster: Cluster, labels: frozenset[str], claims: frozenset[str]) -> object:
    return (
        tuple(sorted((k, v) for k, v in cluster.labels.items() if k in labels)),
        tuple(sorted((k, v) for k, v in cluster.claims.items() if k in claims)),
        # every other field, whatever a later scheduler adds (a deletion time, ...)
        tuple(
            repr(getattr(cluster, f.name)) for f in fields(cluster) if f.name not in _RANKING_ONLY
        ),
    )
