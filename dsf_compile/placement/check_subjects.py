"""What a bad-input check of ``placements/`` is given: the object it checks, and the fleet.

Pure. The registry (:mod:`.checks`) runs each Placement check on a
:class:`CheckedPlacement` and each PlacementOptimization check on a
:class:`CheckedOptimization`. What several checks read is worked out once, here: the
scores a Placement ranks by, what it selects of the inventory (scheduled once per group
of look-alike clusters), the objects the plans checked so far write.
"""

from __future__ import annotations

from dataclasses import field
from datetime import datetime
from functools import cached_property

from dsf_compile.inputs.located import Located
from dsf_compile.inputs.optimization import PlacementOptimization
from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.cluster_groups import ClusterGroups, Grouping
from dsf_compile.placement.published_scores import PublishedScore, ScoreCatalog, ranked_by
from dsf_compile.placement.scheduler import ScoreIndex, schedule
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.records import frozen


@frozen
class PlacementFleet:
    """What every Placement is checked against; each part built on first use, once."""

    inputs: Inputs
    catalog: ScoreCatalog
    at: datetime

    @cached_property
    def bindings(self) -> list[ManagedClusterSetBinding]:
        """The ManagedClusterSetBindings of ``placements/``."""
        return [b.model for b in self.inputs.bindings]

    @cached_property
    def bound(self) -> frozenset[str]:
        """The namespaces some binding binds a cluster set to."""
        return frozenset(b.metadata.namespace for b in self.bindings)

    @cached_property
    def groups(self) -> ClusterGroups:
        """The inventory as the scheduler sees it, in groups of look-alike clusters."""
        return ClusterGroups(self.inputs)

    @cached_property
    def index(self) -> ScoreIndex:
        """One index for every Placement: each cluster's CEL context is built once, and an
        expression's result per cluster shared (validate gives no scores: every one absent)."""
        return ScoreIndex.of(None)


@frozen
class Selection:
    """What a Placement selects of the inventory, by group."""

    grouping: Grouping
    selected: frozenset[int]  # indexes of the selected groups
    clusters: int  # how many clusters those groups hold


@frozen
class CheckedPlacement:
    """One Placement under check, with what several checks read of it."""

    fleet: PlacementFleet
    located: Located[Placement]

    @cached_property
    def ranked_by(self) -> list[tuple[Pointer, PublishedScore]]:
        """The published scores it ranks by, each at its coordinate."""
        return ranked_by(self.located.model, self.fleet.catalog)

    @property
    def bound(self) -> bool:
        """Whether a binding of ``placements/`` binds a cluster set to its namespace."""
        return self.located.model.metadata.namespace in self.fleet.bound

    @cached_property
    def selection(self) -> Selection | None:
        """What it selects; None when it is not bound, not simulated, or misconfigured
        (the checks of those say so)."""
        if not self.bound:
            return None
        fleet = self.fleet
        grouping = fleet.groups.for_placement(self.located.model)
        representatives = [g.representative for g in grouping.groups]
        result = schedule(
            self.located.model, representatives, fleet.bindings, fleet.index, (), fleet.at
        )
        misconfigured = any(
            c.type == "PlacementMisconfigured" and c.status == "True" for c in result.conditions
        )
        if not result.simulated or misconfigured:
            return None
        chosen = set(result.ranking)
        selected = frozenset(
            i for i, g in enumerate(grouping.groups) if g.representative.name in chosen
        )
        clusters = sum(len(grouping.groups[i].members) for i in selected)
        return Selection(grouping, selected, clusters)


@frozen
class OptimizationFleet:
    """What every PlacementOptimization is checked against."""

    inputs: Inputs
    catalog: ScoreCatalog
    #: (kind, namespace, name) → the plan that writes it, and for what: filled as the
    #: optimizations are checked, in order, so the first plan to claim an object keeps it.
    written: dict[tuple[str, str, str], str] = field(default_factory=dict)

    @cached_property
    def inventory(self) -> frozenset[str]:
        """The names of the inventory's clusters."""
        return frozenset(c.model.metadata.name for c in self.inputs.clusters)


@frozen
class CheckedOptimization:
    """One PlacementOptimization under check."""

    fleet: OptimizationFleet
    located: Located[PlacementOptimization]
