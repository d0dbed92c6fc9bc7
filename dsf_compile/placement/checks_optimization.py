"""The checks of a PlacementOptimization: what makes it unusable, each at its field.

Pure. A Policy or workload not in ``placements/``, supply or demand labels missing or
not numbers, a cluster not in the inventory, a score no scorer publishes, a name listed
twice, or an object the plan would write that another plan or file already holds.
Registered in :mod:`.checks`; ``optimize`` (:mod:`.proposal`) runs only on an
optimization they pass.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from dsf_compile.inputs import names
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.optimization import (
    DEMAND_AMOUNT,
    DEMAND_APP,
    DEMAND_KIND,
    SUPPLY_AMOUNT,
    SUPPLY_DEVICE,
    SUPPLY_KIND,
    item_pattern,
)
from dsf_compile.inputs.placements import ManifestWorkReplicaSet, Policy
from dsf_compile.inputs.quantity import QuantityError, quantity_value
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.check_subjects import CheckedOptimization
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem

#: The labels a Policy supplies by (the device, the kind, then the amount: a quantity).
SUPPLY_LABELS = (SUPPLY_DEVICE, SUPPLY_KIND, SUPPLY_AMOUNT)
#: The labels a workload demands by (the app, the kind, then the amount: a quantity).
DEMAND_LABELS = (DEMAND_APP, DEMAND_KIND, DEMAND_AMOUNT)

#: An object a plan writes: (kind, namespace, name).
_Key = tuple[str, str, str]


def placement_object(
    inputs: Inputs, kind: type[Any], namespace: str, name: str
) -> Located[Any] | None:
    """The object of ``placements/`` of that kind, namespace and name, if there is one."""
    found = inputs.placement_index.get((kind.__name__, namespace, name))
    return found if found is not None and isinstance(found.model, kind) else None


def score_format(optimization: CheckedOptimization) -> Iterator[Problem]:
    """The score's dimension format names ``${app}`` and ``${device}``."""
    preference = optimization.located.model.spec.preference
    missing = {"app", "device"} - set(item_pattern(preference.scoreDimensionFormat).groupindex)
    if missing:
        yield optimization.located.problem(
            ("spec", "preference", "scoreDimensionFormat"),
            f"must name ${{app}} and ${{device}} (missing: {', '.join(sorted(missing))})",
        )


def published_score(optimization: CheckedOptimization) -> Iterator[Problem]:
    """The score it optimizes is one a scorer publishes."""
    catalog = optimization.fleet.catalog
    wanted = optimization.located.model.spec.preference.addOnPlacementScore
    if catalog.complete and wanted not in catalog.scores:
        yield optimization.located.problem(
            ("spec", "preference", "addOnPlacementScore"),
            f"no scorer publishes an AddOnPlacementScore named {wanted!r}; published: "
            f"{', '.join(sorted(catalog.scores)) or 'none'}",
        )


def listed_once(optimization: CheckedOptimization) -> Iterator[Problem]:
    """Clusters, target workloads and each cluster's Policies are each listed once."""
    located = optimization.located
    spec = located.model.spec
    yield from _repeated(located, ("spec", "clusters"), [c.name for c in spec.clusters], "name")
    yield from _repeated(located, ("spec", "targetWorkloads"), spec.targetWorkloads)
    for index, cluster in enumerate(spec.clusters):
        pointer = ("spec", "clusters", index, "availablePolicies")
        yield from _repeated(located, pointer, cluster.availablePolicies)


def _repeated(
    located: Located[Any], pointer: Pointer, listed: Sequence[str], field: str | None = None
) -> Iterator[Problem]:
    """A name listed twice: the model would hold two variables for one thing."""
    first: dict[str, int] = {}
    for index, name in enumerate(listed):
        if name in first:
            where = (*pointer, index, field) if field else (*pointer, index)
            yield located.problem(where, f"{name!r} is listed twice (first at index {first[name]})")
        first.setdefault(name, index)


def known_clusters(optimization: CheckedOptimization) -> Iterator[Problem]:
    """Every cluster it places on is in the inventory."""
    for index, cluster in enumerate(optimization.located.model.spec.clusters):
        if cluster.name not in optimization.fleet.inventory:
            yield optimization.located.problem(
                ("spec", "clusters", index, "name"),
                f"cluster {cluster.name!r} is not in the inventory (clusters/)",
            )


def supply(optimization: CheckedOptimization) -> Iterator[Problem]:
    """Every available Policy is in ``placements/``, with its supply labels."""
    located = optimization.located
    namespace = located.model.metadata.namespace
    for index, cluster in enumerate(located.model.spec.clusters):
        for position, name in enumerate(cluster.availablePolicies):
            policy = placement_object(optimization.fleet.inputs, Policy, namespace, name)
            if policy is None:
                pointer = ("spec", "clusters", index, "availablePolicies", position)
                yield located.problem(pointer, f"no Policy {namespace}/{name} in placements/")
            else:
                yield from _label_problems(policy, SUPPLY_LABELS)


def demand(optimization: CheckedOptimization) -> Iterator[Problem]:
    """Every target workload is a ManifestWorkReplicaSet of ``placements/``, with its demand labels."""
    located = optimization.located
    namespace = located.model.metadata.namespace
    for index, name in enumerate(located.model.spec.targetWorkloads):
        workload = placement_object(
            optimization.fleet.inputs, ManifestWorkReplicaSet, namespace, name
        )
        if workload is None:
            yield located.problem(
                ("spec", "targetWorkloads", index),
                f"no ManifestWorkReplicaSet {namespace}/{name} in placements/",
            )
        else:
            yield from _label_problems(workload, DEMAND_LABELS)


def _label_problems(located: Located[Any], required: Sequence[str]) -> Iterator[Problem]:
    """The labels ``required`` (the last one a non-negative quantity) missing or wrong."""
    labels = located.model.metadata.labels or {}
    for key in required:
        if key not in labels:
            yield located.problem(("metadata", "labels"), f"needs the label {key} for optimize")
    number = required[-1]
    if number not in labels:
        return
    try:
        amount = quantity_value(labels[number])
    except QuantityError as err:
        yield located.problem(("metadata", "labels", number), str(err))
        return
    if amount < 0:
        yield located.problem(("metadata", "labels", number), "must not be negative")


def written_names(optimization: CheckedOptimization) -> Iterator[Problem]:
    """The objects its plan would write are not written elsewhere.

    Two target workloads sharing a Placement, one workload in two optimizations, or a
    Placement or PlacementBinding of that name already in another file of
    ``placements/`` would make the written plan collide with it (OCM keeps one object
    per kind, namespace and name): caught here, before anything is written.
    """
    located = optimization.located
    meta = located.model.metadata
    plan = names.optimized_path(meta.namespace, meta.name)
    written = optimization.fleet.written
    for key, pointer, by in _claims(optimization.fleet.inputs, located):
        owner = written.get(key) or _elsewhere(optimization.fleet.inputs, key, plan)
        if owner is None:
            written[key] = f"{plan} (for {by})"
            continue
        yield located.problem(
            pointer,
            f"the plan writes {key[0]} {key[1]}/{key[2]} for {by} into {plan}, but "
            f"{owner} already has it (one object per kind, namespace and name)",
        )


def _claims(inputs: Inputs, located: Located[Any]) -> Iterator[tuple[_Key, Pointer, str]]:
    """The objects the plan writes: each key, the field that asks for it, and for what."""
    meta = located.model.metadata
    cluster_names = [c.name for c in located.model.spec.clusters]
    first_cluster = _first_indexes(cluster_names)
    for index, cluster in enumerate(cluster_names):
        if first_cluster[cluster] != index:
            continue  # listed twice: reported by listed_once
        name = names.plan_object_name(meta.name, cluster)
        for kind in ("Placement", "PlacementBinding"):
            yield (kind, meta.namespace, name), ("spec", "clusters", index, "name"), cluster
    targets = located.model.spec.targetWorkloads
    first_target = _first_indexes(targets)
    for index, workload_name in enumerate(targets):
        workload = placement_object(inputs, ManifestWorkReplicaSet, meta.namespace, workload_name)
        # a missing or repeated workload is reported by demand and listed_once
        if workload is not None and first_target[workload_name] == index:
            placement = workload.model.spec.placementRefs[0].name
            key = ("Placement", meta.namespace, placement)
            yield key, ("spec", "targetWorkloads", index), workload_name


def _first_indexes(listed: Sequence[str]) -> dict[str, int]:
    """Each name's first index in ``listed`` (a dict: no rescan of the list per name)."""
    first: dict[str, int] = {}
    for index, name in enumerate(listed):
        first.setdefault(name, index)
    return first


def _elsewhere(inputs: Inputs, key: _Key, plan: str) -> str | None:
    """The file of ``placements/`` other than ``plan`` that holds the object ``key``."""
    found = inputs.placement_index.get(key)
    if found is None or found.document.path == plan:
        return None
    return found.document.path
