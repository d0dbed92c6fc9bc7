"""What the hub needs beyond OCM's core for the kinds ``placements/`` uses (docs/install.md).

Said by ``validate`` as ``info`` lines, once per prerequisite, on the first object that
needs it. Not warnings: nothing in the inputs is wrong, the hub merely has to be ready,
and ``validate --strict`` must keep passing on a fleet that uses these kinds on purpose.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.inputs.located import Located
    from dsf_compile.inputs.placements import PlacementObject

INFO = "info"

#: (kinds, what the hub needs for them) — in the order they are reported.
PREREQUISITES: tuple[tuple[frozenset[str], str], ...] = (
    (
        frozenset({"Policy", "PlacementBinding"}),
        "needs the governance policy framework on the hub (its propagator serves Policy "
        "and PlacementBinding; OCM's core does not), or the GitOps sync of rendered/ fails "
        "on an unknown kind (docs/install.md)",
    ),
    (
        frozenset({"ManifestWorkReplicaSet"}),
        "needs the hub's ManifestWorkReplicaSet feature gate (ClusterManager "
        "spec.workConfiguration.featureGates, off by default): without it no ManifestWork "
        "is made from it (docs/install.md)",
    ),
)


def prerequisite_notes(objects: Iterable[Located[PlacementObject]]) -> list[Problem]:
    """One ``info`` per prerequisite, on the first object (by file and line) that needs it."""
    ordered = sorted(objects, key=lambda o: (o.document.path, o.document.locate(o.base)))
    notes = []
    for kinds, message in PREREQUISITES:
        first = next((o for o in ordered if o.model.kind in kinds), None)
        if first is not None:
            notes.append(first.problem(("kind",), f"{first.model.kind} {message}", INFO))
    return notes
