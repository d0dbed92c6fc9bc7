"""``explain --verify``: the replay on the hub's own state, against the hub's PlacementDecisions.

Everything comes from the hub — its Placements, ManagedClusters, ManagedClusterSets and
bindings, AddOnPlacementScores and PlacementDecisions — and nothing from Git: the
question is whether the replay and OCM agree on the same state (a gap in the replay, or
a hub whose scheduler has not caught up), not what a change in Git would do. Pure: the
objects are read by :mod:`dsf_compile.hubread.state`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from dsf_compile.inputs.inventory import LabelSelector, ManagedCluster
from dsf_compile.inputs.placements import CLUSTERSET_LABEL, Placement
from dsf_compile.inputs.selectors import selector_matches
from dsf_compile.placement.decision_index import DecisionIndex
from dsf_compile.placement.decisions import GROUP_INDEX_LABEL, GROUP_NAME_LABEL
from dsf_compile.placement.scheduler import (
    Cluster,
    PlacementResult,
    cel_view,
    cluster_from_inventory,
)
from dsf_contract.escaping import terminal
from dsf_contract.records import frozen
from dsf_contract.scores import OCM_CLUSTER_GROUP
from dsf_contract.validation_errors import described


class Outcome(enum.Enum):
    """What ``--verify`` found for one Placement; only the first two were compared."""

    AGREE = "agrees"
    DIFFER = "differs"
    #: The replay does not decide it (scheduling disabled, a CEL the replay cannot run).
    NOT_SIMULATED = "not simulated"
    #: The hub's object cannot be read as a Placement.
    UNREADABLE = "unreadable"


COMPARED = (Outcome.AGREE, Outcome.DIFFER)


@frozen
class Verdict:
    """One Placement's outcome; ``lines`` are the differences, or the reason it was not compared."""

    placement: str
    outcome: Outcome
    lines: tuple[str, ...] = ()


@frozen
class Verification:
    """Every chosen Placement's verdict, and the hub's ManagedClusters the replay cannot read."""

    verdicts: tuple[Verdict, ...]
    #: (name, why) of each ManagedCluster the replay cannot read: every replay may be off.
    unreadable_clusters: tuple[tuple[str, str], ...] = ()

    def count(self, *outcomes: Outcome) -> int:
        """How many Placements ended with one of ``outcomes``."""
        return sum(1 for v in self.verdicts if v.outcome in outcomes)

    def of(self, outcome: Outcome) -> list[Verdict]:
        """The verdicts with ``outcome``, in order."""
        return [v for v in self.verdicts if v.outcome is outcome]


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


def raw_name(item: object, *, namespaced: bool) -> str:
    """``NAMESPACE/NAME`` (or ``NAME``) as an object the replay cannot read says it, unescaped.

    What is not a string shows as ``(none)``: a user naming the Placement finds it by the
    name the hub lists, and an unreadable one is then reported as such, not as missing.
    """
    meta = item.get("metadata") if isinstance(item, dict) else None
    meta = meta if isinstance(meta, dict) else {}
    parts = [meta.get("namespace"), meta.get("name")] if namespaced else [meta.get("name")]
    return "/".join(p if isinstance(p, str) else "(none)" for p in parts)


def unreadable_reason(err: ValidationError | ValueError) -> str:
    """Why the replay cannot read an object: the first problem, escaped."""
    if isinstance(err, ValidationError):
        return terminal(described(err.errors()[0]))
    return terminal(str(err))


def verdict(result: PlacementResult, hub: DecisionIndex) -> Verdict:
    """The replay's outcome against the hub's decisions: compared only when it was simulated.

    A Placement the replay does not decide (``simulated`` False: scheduling disabled, or a
    CEL it cannot run) is *not simulated*, whatever its decisions look like: a disabled
    Placement's replay is the hub's own decisions, and counting it as agreeing would say
    the replay was checked when it was not.
    """
    placement = f"{result.namespace}/{result.name}"
    if result.not_simulated is not None:
        return Verdict(placement, Outcome.NOT_SIMULATED, (result.not_simulated,))
    drift = compare(result, hub)
    if drift:
        return Verdict(placement, Outcome.DIFFER, drift)
    return Verdict(placement, Outcome.AGREE)


def compare(result: PlacementResult, hub: DecisionIndex) -> tuple[str, ...]:
    """The differences between the replay's PlacementDecisions and the hub's (none: agree)."""
    own = sorted(hub.own(result.namespace, result.name), key=lambda pd: pd.metadata.name)
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
    return tuple(lines)


def drifts_text(verification: Verification) -> str:
    """``placement NS/NAME differs from the hub`` and the differences, indented (stdout)."""
    out = []
    for drift in verification.of(Outcome.DIFFER):
        out.append(f"placement {terminal(drift.placement)} differs from the hub:")
        out.extend(f"  {line}" for line in drift.lines)
    return "".join(f"{line}\n" for line in out)


def verification_document(verification: Verification) -> dict[str, Any]:
    """``explain --verify --format json``'s result: a record per Placement and per
    unreadable ManagedCluster, and the summary line."""
    return {
        "placements": [
            {"placement": v.placement, "outcome": v.outcome.value, "lines": list(v.lines)}
            for v in verification.verdicts
        ],
        "unreadableClusters": [
            {"name": name, "reason": why} for name, why in verification.unreadable_clusters
        ],
        "summary": summary(verification),
    }


def not_compared_lines(verification: Verification) -> list[str]:
    """One line per object that was not compared, and why (stderr, before the summary)."""
    lines = [
        f"error: the hub's ManagedCluster {terminal(name)} cannot be read, every replay may "
        f"differ: {why}"
        for name, why in verification.unreadable_clusters
    ]
    for found in verification.verdicts:
        if found.outcome is Outcome.UNREADABLE:
            lines.append(
                f"error: the hub's Placement {terminal(found.placement)} cannot be read, "
                f"not compared: {found.lines[0]}"
            )
        elif found.outcome is Outcome.NOT_SIMULATED:
            lines.append(
                f"warning: placement {terminal(found.placement)} not compared: {found.lines[0]}"
            )
    return lines


def summary(verification: Verification) -> str:
    """The last line: how many Placements were compared and how they ended, the rest counted."""
    compared = verification.count(*COMPARED)
    differ = verification.count(Outcome.DIFFER)
    if differ:
        head = f"{differ} of {_placements(compared)} differ from the hub's decisions"
    elif compared:
        verb = "agrees" if compared == 1 else "agree"
        head = f"{_placements(compared)} {verb} with the hub's decisions"
    elif verification.verdicts:
        head = "no Placement could be compared with the hub's decisions"
    else:
        head = "no Placement on the hub: nothing to compare"
    tail = [
        f"{n} {outcome.value}, not compared"
        for outcome in (Outcome.NOT_SIMULATED, Outcome.UNREADABLE)
        if (n := verification.count(outcome))
    ]
    return "; ".join([head, *tail])


def exit_code(verification: Verification) -> int:
    """1 when a compared Placement differs; 2 when the check could not be made; else 0.

    A difference is the finding the command exists for, so it wins. Otherwise an object
    the replay cannot read (a Placement, or a ManagedCluster every replay depends on), or
    Placements of which none could be compared, mean the check was not made: 2, as for
    any hub answer that cannot be used. Placements not simulated beside compared ones
    that agree are named and counted but do not fail the run: a fleet that disables
    scheduling on purpose would otherwise never see a passing check.
    """
    if verification.count(Outcome.DIFFER):
        return 1
    if verification.unreadable_clusters or verification.count(Outcome.UNREADABLE):
        return 2
    if verification.verdicts and not verification.count(*COMPARED):
        return 2
    return 0


def _placements(count: int) -> str:
    return f"{count} Placement" + ("" if count == 1 else "s")


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
