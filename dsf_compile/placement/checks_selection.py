"""The checks of what a Placement selects: its tolerations, its cluster sets, the inventory.

Pure. A toleration OCM calls misconfigured is an error; a namespace no
ManagedClusterSetBinding of ``placements/`` binds, or a Placement that selects no
cluster of the inventory, a warning (it will not select what its author expects).
Registered in :mod:`.checks`.
"""

from __future__ import annotations

from collections.abc import Iterator

from dsf_compile.placement.check_subjects import CheckedPlacement
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem


def tolerations(placement: CheckedPlacement) -> Iterator[Problem]:
    """Tolerations the CRD accepts and OCM's TaintToleration plugin calls misconfigured."""
    located = placement.located
    for index, toleration in enumerate(located.model.spec.tolerations):
        base: Pointer = ("spec", "tolerations", index)
        if not toleration.key and toleration.operator != "Exists":
            yield located.problem(
                (*base, "operator"),
                "a toleration without a key must use operator Exists "
                "(OCM reports the Placement misconfigured)",
            )
        elif toleration.operator == "Exists" and toleration.value:
            yield located.problem(
                (*base, "value"),
                "a toleration with operator Exists takes no value "
                "(OCM reports the Placement misconfigured)",
            )


def cluster_set_bound(placement: CheckedPlacement) -> Iterator[Problem]:
    """A namespace no binding of ``placements/`` binds a cluster set to selects nothing."""
    if not placement.bound:
        namespace = placement.located.model.metadata.namespace
        yield placement.located.problem(
            ("metadata", "namespace"),
            f"no ManagedClusterSetBinding in placements/ binds a cluster set to namespace "
            f"{namespace!r}: on a hub without one it selects no cluster",
            "warning",
        )


def selects_clusters(placement: CheckedPlacement) -> Iterator[Problem]:
    """A Placement that, scheduled on the inventory, selects no cluster."""
    selection = placement.selection
    if selection is not None and not selection.clusters:
        yield placement.located.problem(("spec",), "selects no cluster of the inventory", "warning")
