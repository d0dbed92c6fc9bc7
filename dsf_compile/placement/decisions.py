"""Decision groups, PlacementDecisions and the Placement's status, as OCM writes them.

Follows ocm ``pkg/placement/controllers/scheduling/scheduling_controller.go``:
``generateDecisionGroups``, ``divideDecisionGroups``, ``calculateLength``,
``generateDecision``, ``newSatisfiedCondition`` and ``newMisconfiguredCondition``. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from dsf_compile.inputs.placements import PLACEMENT_LABEL, GroupClusterSelector, Placement
from dsf_contract.records import frozen
from dsf_contract.scores import OCM_CLUSTER_GROUP

#: OCM's ``maxNumOfClusterDecisions``: clusters per PlacementDecision object.
MAX_DECISIONS_PER_OBJECT = 100
GROUP_NAME_LABEL = f"{OCM_CLUSTER_GROUP}/decision-group-name"
GROUP_INDEX_LABEL = f"{OCM_CLUSTER_GROUP}/decision-group-index"


@frozen
class DecisionGroupStatus:
    """One decision group as decided (OCM's ``status.decisionGroups`` entry): its name (``""``
    for the unnamed rest), index and clusters. What a Placement asks for is
    :class:`~dsf_compile.inputs.placements.DecisionGroup`."""

    name: str
    index: int
    clusters: tuple[str, ...]


@frozen
class Misconfigured:
    """OCM's framework status with code Misconfigured: the plugin and its message."""

    plugin: str
    message: str


def group_length(per_group: int | str, total: int) -> int | Misconfigured:
    """``calculateLength``: clusters per group, or why OCM cannot parse the setting."""
    length = total
    if isinstance(per_group, int):
        length = per_group
    elif per_group.endswith("%"):
        try:
            percent = float(per_group[:-1])
        except ValueError:
            return Misconfigured("", f"{per_group} invalid type: string is not a percentage")
        # float64, as Go computes it: 28 % of 25 is ceil(7.000000000000001) = 8
        length = math.ceil(percent / 100 * float(total))
    else:
        return Misconfigured("", f"{per_group} invalid type: string is not a percentage")
    if length <= 0 or length > total:
        length = total
    return length


def decision_groups(
    placement: Placement,
    decided: Sequence[str],
    selects: Callable[[GroupClusterSelector, str], bool],
) -> tuple[DecisionGroupStatus, ...] | Misconfigured:
    """``generateDecisionGroups``: named groups first, then the unnamed rest.

    ``decided`` keeps the score order; ``selects(groupClusterSelector, cluster)`` says
    whether a group's selector matches a cluster. Every piece takes the next index; a
    named group that matches nothing takes none. No decisions: one empty group.
    """
    strategy = placement.spec.decisionStrategy
    per_group = strategy.groupStrategy.clustersPerDecisionGroup if strategy else "100%"
    named = strategy.groupStrategy.decisionGroups if strategy else ()
    length = group_length(per_group, len(decided))
    if isinstance(length, Misconfigured):
        return length
    left = dict.fromkeys(decided)
    pieces: list[tuple[str, list[str]]] = []
    for group in named:
        matched = [c for c in decided if c in left and selects(group.groupClusterSelector, c)]
        for cluster in matched:
            del left[cluster]
        pieces += _divide(group.groupName, matched, length)
    pieces += _divide("", list(left), length)
    if not pieces:
        pieces = [("", [])]
    return tuple(
        DecisionGroupStatus(name, index, tuple(c)) for index, (name, c) in enumerate(pieces)
    )


def _divide(name: str, clusters: list[str], length: int) -> list[tuple[str, list[str]]]:
    ordered = sorted(clusters)
    return [(name, ordered[i : i + length]) for i in range(0, len(ordered), max(length, 1))]


@frozen
class DecisionObject:
    """One PlacementDecision as OCM names, labels and fills it."""

    name: str
    labels: Mapping[str, str]
    clusters: tuple[str, ...]


def decision_objects(
    placement_name: str, groups: Sequence[DecisionGroupStatus]
) -> tuple[DecisionObject, ...]:
    """``generateDecision`` for every group: objects of at most 100 clusters, numbered from 1."""
    objects: list[DecisionObject] = []
    for group in groups:
        labels = {
            PLACEMENT_LABEL: placement_name,
            GROUP_NAME_LABEL: group.name,
            GROUP_INDEX_LABEL: str(group.index),
        }
        slices = [
            group.clusters[i : i + MAX_DECISIONS_PER_OBJECT]
            for i in range(0, len(group.clusters), MAX_DECISIONS_PER_OBJECT)
        ] or [()]
        for piece in slices:
            name = f"{placement_name}-decision-{len(objects) + 1}"
            objects.append(DecisionObject(name, labels, tuple(piece)))
    return tuple(objects)


@frozen
class Condition:
    """A ``status.conditions`` entry of the Placement."""

    type: str
    status: str
    reason: str
    message: str


@frozen
class SchedulingCounts:
    """What ``newSatisfiedCondition`` reads of one scheduling run."""

    cluster_sets_in_spec: Sequence[str]
    eligible_cluster_sets: Sequence[str]
    bindings: int
    available_clusters: int
    decisions: int
    unscheduled: int


def conditions(
    counts: SchedulingCounts, misconfigured: Misconfigured | None
) -> tuple[Condition, ...]:
    """Both conditions, sorted by type, with OCM's reasons and messages."""
    if misconfigured is not None:
        first = Condition(
            "PlacementMisconfigured",
            "True",
            "Misconfigured",
            f"{misconfigured.plugin}:{misconfigured.message}",
        )
    else:
        first = Condition(
            "PlacementMisconfigured",
            "False",
            "Succeedconfigured",
            "Placement configurations check pass",
        )
    return first, _satisfied(counts)


def _satisfied(counts: SchedulingCounts) -> Condition:
    kind = "PlacementSatisfied"
    if counts.bindings == 0:
        return Condition(
            kind,
            "False",
            "NoManagedClusterSetBindings",
            "No valid ManagedClusterSetBindings found in placement namespace",
        )
    if not counts.eligible_cluster_sets:
        named = ",".join(counts.cluster_sets_in_spec)
        return Condition(
            kind,
            "False",
            "NoIntersection",
            f"None of ManagedClusterSets [{named}] is bound to placement namespace",
        )
    if counts.available_clusters == 0:
        named = ",".join(counts.eligible_cluster_sets)
        return Condition(
            kind,
            "False",
            "AllManagedClusterSetsEmpty",
            f"All ManagedClusterSets [{named}] have no member ManagedCluster",
        )
    if counts.decisions == 0:
        return Condition(
            kind,
            "False",
            "NoManagedClusterMatched",
            "No ManagedCluster matches any of the cluster predicate",
        )
    if counts.unscheduled == 0:
        return Condition(kind, "True", "AllDecisionsScheduled", "All cluster decisions scheduled")
    return Condition(
        kind,
        "False",
        "NotAllDecisionsScheduled",
        f"{counts.unscheduled} cluster decisions unscheduled",
    )


def margins(
    ranking: Sequence[str], decided: int, totals: Mapping[str, int]
) -> dict[str, int] | None:
    """By how many points each decided cluster beats the best one left out (None: none left out)."""
    if decided >= len(ranking):
        return None
    if decided == 0:
        return {}
    best_left_out = totals[ranking[decided]]
    return {name: totals[name] - best_left_out for name in ranking[:decided]}
