"""Documents → validated models, with every problem located at its file, line and field.

Pure: takes the documents :mod:`dsf_compile.inputs.load` read and returns :class:`Inputs`, or
raises :class:`InputError` carrying every problem found, sorted. The documents are read
as their kinds by :mod:`~dsf_compile.inputs.collect`; the rules between them are the
``cross-file`` rows of :mod:`dsf_compile.inputs.checks`, the list of every check.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING

from dsf_compile.errors import InputError
from dsf_compile.inputs.checks import run_cross_file
from dsf_compile.inputs.collect import collect
from dsf_compile.inputs.cross_file import ClusterLookup, CrossFile
from dsf_compile.inputs.inventory import DynamicScoringConfig, ManagedCluster, Mask
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.schema import precheck, validate_model
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.settings_checks import check_resolve_entries
from dsf_contract.bounded_yaml import Document, Pointer, format_pointer
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:  # the models of placements/ are loaded only for a fleet that has one
    from dsf_compile.inputs.optimization import PlacementOptimization
    from dsf_compile.inputs.placements import (
        ManagedClusterSetBinding,
        Placement,
        PlacementObject,
    )


@frozen
class Inputs:
    """Everything the repository declares, validated; scorers and clusters sorted by name."""

    settings: Settings
    scorers: tuple[Located[DynamicScorer], ...]
    config: Located[DynamicScoringConfig] | None
    clusters: tuple[Located[ManagedCluster], ...]
    warnings: tuple[Problem, ...] = ()
    #: The objects of ``placements/`` (Placements, bindings and the pass-through kinds),
    #: sorted by kind, namespace and name.
    placement_objects: tuple[Located[PlacementObject], ...] = ()
    #: ``PlacementOptimization``s, read by ``optimize`` and never rendered.
    optimizations: tuple[Located[PlacementOptimization], ...] = ()
    #: ``dsf.yaml`` as read (None without one): where render locates a problem of a setting.
    settings_document: Document | None = None

    def settings_problem(self, pointer: Pointer, message: str, severity: str = "error") -> Problem:
        """A problem of the setting at ``pointer``, located in ``dsf.yaml`` when there is one."""
        if self.settings_document is None:
            return Problem("dsf.yaml", 0, 0, format_pointer(pointer), message, severity)
        found = self.settings_document.problem(pointer, message)
        return found if severity == "error" else replace(found, severity=severity)

    @property
    def placements(self) -> tuple[Located[Placement], ...]:
        from dsf_compile.inputs.placements import Placement

        return tuple(o for o in self.placement_objects if isinstance(o.model, Placement))  # type: ignore[misc]

    @property
    def bindings(self) -> tuple[Located[ManagedClusterSetBinding], ...]:
        from dsf_compile.inputs.placements import ManagedClusterSetBinding

        return tuple(
            o  # type: ignore[misc]
            for o in self.placement_objects
            if isinstance(o.model, ManagedClusterSetBinding)
        )

    @cached_property
    def placement_index(self) -> dict[tuple[str, str, str], Located[PlacementObject]]:
        """``(kind, namespace, name)`` → the object of ``placements/`` (the first, if repeated).

        Built once: every reference ``validate`` and ``optimize`` follow is one lookup,
        not a scan of every object (which made validate quadratic in references).
        """
        index: dict[tuple[str, str, str], Located[PlacementObject]] = {}
        for located in self.placement_objects:
            meta = located.model.metadata
            index.setdefault((located.model.kind, meta.namespace, meta.name), located)
        return index

    @cached_property
    def cluster_lookup(self) -> ClusterLookup:
        """The clusters by name, for what selects clusters by name or glob."""
        return ClusterLookup(self.clusters)

    @property
    def masks(self) -> tuple[Mask, ...]:
        return self.config.model.spec.masks if self.config else ()

    def scorer(self, name: str) -> Located[DynamicScorer]:
        return self._scorers_by_name[name]

    @cached_property
    def _scorers_by_name(self) -> dict[str, Located[DynamicScorer]]:
        found: dict[str, Located[DynamicScorer]] = {}
        for located in self.scorers:
            found.setdefault(located.model.metadata.name, located)
        return found


# ------------------------------------------------------------------- messages


def validate_documents(
    documents: Iterable[Document],
    settings: Settings,
    file_problems: Iterable[Problem] = (),
    settings_document: Document | None = None,
) -> Inputs:
    """Validate every document and the cross-document rules; raise InputError on any problem."""
    collected = collect(documents)
    view = CrossFile(collected, settings, settings_document, tuple(file_problems))
    problems = [*view.file_problems, *collected.problems, *run_cross_file(view)]
    if any(p.severity == "error" for p in problems):
        raise InputError(problems)
    return Inputs(
        settings,
        tuple(sorted(collected.scorers, key=lambda s: s.model.metadata.name)),
        collected.configs[0] if collected.configs else None,
        tuple(sorted(collected.clusters, key=lambda c: c.model.metadata.name)),
        tuple(problems),
        tuple(sorted(collected.placement_objects, key=_object_key)),
        tuple(sorted(collected.optimizations, key=_object_key)),
        settings_document,
    )


def _object_key(
    located: Located[PlacementObject] | Located[PlacementOptimization],
) -> tuple[str, str, str]:
    meta = located.model.metadata
    return (located.model.kind, meta.namespace, meta.name)


def validate_settings(document: Document | None) -> tuple[Settings, list[Problem]]:
    """``dsf.yaml`` → Settings (all defaults when there is none)."""
    if document is None:
        return Settings(), []
    problems = precheck(document)
    if document.data is None:
        return Settings(), problems
    settings, more = validate_model(Settings, document, document.data)
    more += check_resolve_entries(document)
    return (settings or Settings()), problems + more
