"""The PlacementDecisions of every Placement as a replay leaves them, with versions: what
``Steady`` and ``NoSelectIfNew`` read of a Placement's own, and ``Balance`` of the others'
(per fleet cluster, as count vectors for the fast path)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dsf_compile.backtest.fast import Held, Own
from dsf_compile.backtest.fast_plan import Budget, IntArray
from dsf_compile.inputs.placements import (
    PLACEMENT_API_VERSION,
    PLACEMENT_LABEL,
    Placement,
    PlacementDecision,
)
from dsf_compile.placement.decisions import GROUP_INDEX_LABEL, GROUP_NAME_LABEL, DecisionObject
from dsf_compile.placement.scheduler import Cluster, PlacementResult


class Decisions:
    """The PlacementDecisions of every Placement as the replay leaves them, with versions."""

    def __init__(
        self,
        ordered: Sequence[Placement],
        initial: Sequence[PlacementDecision],
        clusters: Sequence[Cluster],
        budget: Budget | None = None,
    ) -> None:
        names = {(p.metadata.namespace, p.metadata.name) for p in ordered}
        self._keys = [(p.metadata.namespace, p.metadata.name) for p in ordered]
        given = [
            tuple(d for d in initial if (d.metadata.namespace, d.placement_name) == key)
            for key in self._keys
        ]
        #: Each Placement's PlacementDecisions (None: not made yet, see :attr:`all`).
        self._own: list[tuple[PlacementDecision, ...] | None] = list(given)
        # decisions of Placements not in placements/ stay as they are (Balance counts them)
        self._foreign = tuple(
            d for d in initial if (d.metadata.namespace, d.placement_name) not in names
        )
        self._clusters = [_clusters_of(own) for own in given]
        self._sorted = [tuple(sorted(c)) for c in self._clusters]
        #: Every cluster a decision may name → its position in the count vectors.
        self.fleet = _fleet(clusters, initial)
        self._owns = [self._own_of(c) for c in self._clusters]
        self._total = self._vector(_clusters_of(self._foreign)) + sum(
            (own.vector for own in self._owns), np.zeros(len(self.fleet), dtype=np.int64)
        )
        self.own_version = [0] * len(ordered)
        #: What the fast plans may precompute together.
        self.budget = budget if budget is not None else Budget()
        #: The clusters with a ``NoSelectIfNew`` taint.
        self.new_only = _new_only(clusters)
        self.version = 0
        self._held: Held | None = None
        self._all: tuple[PlacementDecision, ...] | None = None

    def _own_of(self, clusters: Sequence[str]) -> Own:
        return Own.of([self.fleet[name] for name in clusters], len(self.fleet))

    def _vector(self, clusters: Sequence[str]) -> IntArray:
        vector = np.zeros(len(self.fleet), dtype=np.int64)
        for name in clusters:
            vector[self.fleet[name]] += 1
        return vector

    def counts(self, position: int) -> tuple[Own, Held]:
        """Per fleet cluster: this Placement's decisions; and every Placement's, at this
        version (one :class:`Held` per version, shared by the Placements stepped at it)."""
        held = self._held
        if held is None or held.version != self.version:
            held = self._held = Held.of(self.version, self._total)
        return self._owns[position], held

    def update(self, position: int, result: PlacementResult) -> None:
        """Take ``result``'s PlacementDecisions when its decided clusters changed (the
        scheduler reads nothing else of them: Steady, NoSelectIfNew and Balance count clusters)."""
        clusters = tuple(c for o in result.placement_decisions for c in o.clusters)
        if clusters == self._clusters[position]:
            return
        namespace, _ = self._keys[position]
        objects = tuple(_decision_object(namespace, o) for o in result.placement_decisions)
        self._replace(position, objects, clusters)

    def set_clusters(self, position: int, clusters: tuple[str, ...]) -> None:
        """A fast step's decisions (sorted), as one PlacementDecision when they changed
        (made when the scheduler next reads them: :attr:`all`)."""
        if clusters == self._sorted[position]:
            return
        self._replace(position, None, clusters)

    @property
    def all(self) -> tuple[PlacementDecision, ...]:
        """Every PlacementDecision as the replay has left them (what the scheduler reads)."""
        if self._all is None:
            for position, objects in enumerate(self._own):
                if objects is None:
                    self._own[position] = self._fast_objects(position)
            self._all = (*self._foreign, *(d for own in self._own if own for d in own))
        return self._all

    def _fast_objects(self, position: int) -> tuple[PlacementDecision, ...]:
        """The one PlacementDecision of a fast step's decisions."""
        namespace, name = self._keys[position]
        found = DecisionObject(
            f"{name}-decision-1",
            {PLACEMENT_LABEL: name, GROUP_NAME_LABEL: "", GROUP_INDEX_LABEL: "0"},
            self._clusters[position],
        )
        return (_decision_object(namespace, found),)

    def _replace(
        self,
        position: int,
        objects: tuple[PlacementDecision, ...] | None,
        clusters: tuple[str, ...],
    ) -> None:
        self._own[position] = objects
        self._clusters[position] = clusters
        self._sorted[position] = tuple(sorted(clusters))
        own = self._own_of(clusters)
        self._total += own.vector - self._owns[position].vector
        self._owns[position] = own
        self.own_version[position] += 1
        self.version += 1
        self._all = None


def _fleet(clusters: Sequence[Cluster], initial: Sequence[PlacementDecision]) -> dict[str, int]:
    """Every cluster of the inventory or of a decision, by name → its position."""
    every = {c.name for c in clusters} | {
        d.clusterName for o in initial for d in o.status.decisions
    }
    return {name: i for i, name in enumerate(sorted(every))}


def _new_only(clusters: Sequence[Cluster]) -> frozenset[str]:
    return frozenset(c.name for c in clusters if any(t.effect == "NoSelectIfNew" for t in c.taints))


def _clusters_of(objects: Sequence[PlacementDecision]) -> tuple[str, ...]:
    return tuple(d.clusterName for o in objects for d in o.status.decisions)


def _decision_object(namespace: str, found: Any) -> PlacementDecision:
    """A PlacementDecision as the hub would hold it after this step."""
    return PlacementDecision.model_validate(
        {
            "apiVersion": PLACEMENT_API_VERSION,
            "kind": "PlacementDecision",
            "metadata": {"name": found.name, "namespace": namespace, "labels": dict(found.labels)},
            "status": {"decisions": [{"clusterName": c, "reason": ""} for c in found.clusters]},
        }
    )
