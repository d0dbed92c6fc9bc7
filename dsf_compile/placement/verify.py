"""``explain --verify``: the replay on the hub's own state, against the hub's PlacementDecisions.

Everything comes from the hub — its Placements, ManagedClusters, ManagedClusterSets and
bindings, AddOnPlacementScores and PlacementDecisions — and nothing from Git: the
question is whether the replay and OCM agree on the same state (a gap in the replay, or
a hub whose scheduler has not caught up), not what a change in Git would do. Pure: the
objects are read by :mod:`dsf_compile.hub_state`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from dsf_compile.inputs.inventory import LabelSelector, ManagedCluster
from dsf_compile.inputs.placements import CLUSTERSET_LABEL, Placement, PlacementDecision
from dsf_compile.inputs.selectors import selector_matches
from dsf_compile.placement.decisions import GROUP_INDEX_LABEL, GROUP_NAME_LABEL
from dsf_compile.placement.scheduler import (
    Cluster,
    PlacementResult,
    cel_view,
    cluster_from_inventory,
)
from dsf_contract.escaping import terminal
from dsf_contract.scores import OCM_CLUSTER_GROUP


@dataclass(frozen=True)
class Drift:
    """A Placement whose replayed PlacementDecisions differ from the hub's: one line each."""

    placement: str
    lines: tuple[str, ...]


def hub_placement(item: Mapping[str, Any]) -> Placement:
    """A Placement as the hub serves it, reduced to what a user writes (ValueError if unreadable)."""
    metadata = item.get("metadata") or {}
    written = {
        "apiVersion": f"{OCM_CLUSTER_GROUP}/v1beta1",
        "kind": "Placement",
        "metadata": {
            key: metadata[key]
            for key in ("name", "namespace", "labels", "annotations")
            if metadata.get(key) is not None
        },
        "spec": item.get("spec") or {},
    }
    return Placement.model_validate(written)


def hub_cluster(item: Mapping[str, Any]) -> Cluster:
    """A ManagedCluster as the hub serves it (ValueError if unreadable)."""
    data = {"apiVersion": f"{OCM_CLUSTER_GROUP}/v1", "kind": "ManagedCluster", **item}
    model = ManagedCluster.model_validate(data)
    return cluster_from_inventory(
        model.metadata.name,
        model.metadata.labels,
        model.spec,
        model.status,
        deleting=model.metadata.deletionTimestamp is not None,
        view=cel_view(data),
    )


def set_members(
    cluster_sets: Sequence[Mapping[str, Any]], clusters: Sequence[Cluster]
) -> dict[str, frozenset[str]]:
    """Each ManagedClusterSet's members, as sdk-go's ``GetClustersFromClusterSet`` finds them.

    ``ExclusiveClusterSetLabel`` (the default): the clusters whose cluster-set label names
    the set; ``LabelSelector``: the clusters its selector matches (``global`` has an empty
    one: every cluster). A selector dsf cannot read selects nothing.
    """
    members: dict[str, frozenset[str]] = {}
    for item in cluster_sets:
        name = str((item.get("metadata") or {}).get("name"))
        selector = (item.get("spec") or {}).get("clusterSelector") or {}
        if selector.get("selectorType", "ExclusiveClusterSetLabel") == "LabelSelector":
            try:
                wanted = LabelSelector.model_validate(selector.get("labelSelector") or {})
            except ValidationError:
                members[name] = frozenset()
                continue
            members[name] = frozenset(
                c.name for c in clusters if selector_matches(wanted, c.labels)
            )
        else:
            members[name] = frozenset(
                c.name for c in clusters if c.labels.get(CLUSTERSET_LABEL) == name
            )
    return members


def unreadable(kind: str, item: object, err: ValidationError | ValueError) -> str:
    """One line naming an object the replay cannot read."""
    meta = item.get("metadata") if isinstance(item, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    first = err.errors()[0]["msg"] if isinstance(err, ValidationError) else str(err)
    return f"the hub's {kind} {terminal(str(name))} cannot be replayed: {terminal(first)}"


def compare(result: PlacementResult, hub: Sequence[PlacementDecision]) -> Drift | None:
    """The differences between the replay's PlacementDecisions and the hub's, or None."""
    own = sorted(
        (
            pd
            for pd in hub
            if pd.metadata.namespace == result.namespace and pd.placement_name == result.name
        ),
        key=lambda pd: pd.metadata.name,
    )
    theirs = {
        pd.metadata.name: (
            _group(pd.metadata.labels),
            tuple(sorted(d.clusterName for d in pd.status.decisions)),
        )
        for pd in own
    }
    ours = {
        o.name: (_group(o.labels), tuple(sorted(o.clusters))) for o in result.placement_decisions
    }
    lines: list[str] = []
    replayed = sorted(c for _, clusters in ours.values() for c in clusters)
    held = sorted(c for _, clusters in theirs.values() for c in clusters)
    if replayed != held:
        lines.append(
            f"the replay decides {_names(replayed)}; the hub's decisions hold {_names(held)}"
        )
    for name in sorted(set(ours) | set(theirs)):
        if ours.get(name) == theirs.get(name):
            continue
        lines.append(
            f"PlacementDecision {terminal(name)}: replay {_describe(ours.get(name))}; "
            f"hub {_describe(theirs.get(name))}"
        )
    if not lines:
        return None
    return Drift(f"{result.namespace}/{result.name}", tuple(lines))


def format_drifts(drifts: Sequence[Drift]) -> str:
    """``placement NS/NAME differs from the hub`` and the differences, indented."""
    out = []
    for drift in drifts:
        out.append(f"placement {terminal(drift.placement)} differs from the hub:")
        out.extend(f"  {line}" for line in drift.lines)
    return "".join(f"{line}\n" for line in out)


def _group(labels: Mapping[str, str]) -> tuple[str, str]:
    return labels.get(GROUP_NAME_LABEL, ""), labels.get(GROUP_INDEX_LABEL, "")


def _describe(found: tuple[tuple[str, str], tuple[str, ...]] | None) -> str:
    if found is None:
        return "none"
    (group_name, group_index), clusters = found
    return (
        f"group {terminal(group_index)} {terminal(group_name) or '(unnamed)'}: {_names(clusters)}"
    )


def _names(names: Sequence[str]) -> str:
    return ", ".join(terminal(n) for n in names) if names else "none"
