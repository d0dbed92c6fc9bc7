"""The rules between documents that no single model can check, each a check of the registry.

Each public ``check_*`` here takes the :class:`CrossFile` view of what was read and is
listed, with what it checks, in :data:`dsf_compile.inputs.checks.CHECKS`; ``validate``
runs them in that order once every document has been read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Any

from dsf_compile.inputs.agent_image import check_default_image
from dsf_compile.inputs.agent_settings import EXAMPLE_REPOSITORY_URL
from dsf_compile.inputs.collect import Collected
from dsf_compile.inputs.inventory import DynamicScoringConfig, ManagedCluster
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.names import check_derived_names, check_settings_names
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.selectors import ClusterPart, is_glob, selects_cluster
from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.settings_checks import check_agent_resources, check_external_secrets
from dsf_contract.bounded_yaml import Document, Pointer, format_pointer
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:  # the models of placements/ are loaded only for a fleet that has one
    from dsf_compile.inputs.placements import PlacementObject


@frozen
class CrossFile:
    """What the cross-file rules read: the models, ``dsf.yaml``, and what could not be read."""

    collected: Collected
    settings: Settings
    settings_document: Document | None
    file_problems: tuple[Problem, ...]

    @cached_property
    def whole_inventory(self) -> bool:
        """Every file of ``clusters/`` read in full: only then may "matches no cluster" be said.

        A file that could not be read may hold the cluster a mask or override means.
        """
        unreadable = any(p.path.startswith("clusters/") for p in self.file_problems)
        return self.collected.inventory_complete and not unreadable

    @cached_property
    def lookup(self) -> ClusterLookup:
        """The clusters read, by name."""
        return ClusterLookup(self.collected.clusters)


def check_placement_objects(view: CrossFile) -> list[Problem]:
    """What holds within ``placements/`` alone: unique objects, bindings named after their set."""
    return _placement_object_problems(view.collected.placement_objects)


def _placement_object_problems(objects: Sequence[Located[PlacementObject]]) -> list[Problem]:
    """:func:`check_placement_objects` over ``objects``."""
    if not objects:
        return []  # and the models of placements/ stay unloaded
    from dsf_compile.inputs.placements import ManagedClusterSetBinding

    problems: list[Problem] = []
    seen: dict[tuple[str, str, str], Located[PlacementObject]] = {}
    for located in objects:
        model = located.model
        key = (model.kind, model.metadata.namespace, model.metadata.name)
        if key in seen:
            first = seen[key]
            line, _ = first.document.locate((*first.base, "metadata", "name"))
            problems.append(
                located.problem(
                    ("metadata", "name"),
                    f"a second {model.kind} {key[1]}/{key[2]} (the first is "
                    f"{first.document.path}:{line}; names are unique per kind and namespace)",
                )
            )
        seen.setdefault(key, located)
        if (
            isinstance(model, ManagedClusterSetBinding)
            and model.metadata.name != model.spec.clusterSet
        ):
            problems.append(
                located.problem(
                    ("spec", "clusterSet"),
                    f"must equal metadata.name {model.metadata.name!r}: OCM admits a "
                    "ManagedClusterSetBinding only when it is named after its cluster set",
                )
            )
    return problems


def _check_unique_names(items: Sequence[Located[Any]], what: str) -> list[Problem]:
    """Each ``metadata.name`` once; a repeat points back at the first definition."""
    problems: list[Problem] = []
    first: dict[str, Located[Any]] = {}
    for located in items:
        name = located.model.metadata.name
        if name not in first:
            first[name] = located
            continue
        other = first[name]
        line, _ = other.document.locate((*other.base, "metadata", "name"))
        problems.append(
            located.problem(
                ("metadata", "name"),
                f"duplicate {what} name {name!r} (also in {other.document.path}:{line})",
            )
        )
    return problems


def check_unique_scorers(view: CrossFile) -> list[Problem]:
    """Each scorer's name once over ``scorers/``."""
    return _check_unique_names(view.collected.scorers, "scorer")


def check_unique_clusters(view: CrossFile) -> list[Problem]:
    """Each cluster's name once over ``clusters/``."""
    return _check_unique_names(view.collected.clusters, "cluster")


def check_scorer_namespaces(view: CrossFile) -> list[Problem]:
    """A scorer's namespace, when written, is ``dsf.yaml``'s ``hubNamespace``."""
    return _scorer_namespaces(view.collected.scorers, view.settings)


def _scorer_namespaces(scorers: list[Located[DynamicScorer]], settings: Settings) -> list[Problem]:
    return [
        located.problem(
            ("metadata", "namespace"),
            f"must be the hub namespace {settings.hubNamespace!r} (dsf.yaml hubNamespace) or be left out",
        )
        for located in scorers
        if located.model.metadata.namespace not in (None, settings.hubNamespace)
    ]


class ClusterLookup:
    """The inventory by name, for masks and overrides.

    A mask or override that names one cluster (upstream's form: ``clusterName: worker02``)
    looks it up; only a glob or a bare selector reads every cluster. A fleet with a mask
    per cluster would otherwise cost masks × clusters.
    """

    def __init__(self, clusters: Iterable[Located[ManagedCluster]]) -> None:
        self.clusters = list(clusters)
        self.by_name: dict[str, Located[ManagedCluster]] = {}
        for located in self.clusters:
            self.by_name.setdefault(located.model.metadata.name, located)

    def selected_by(self, part: ClusterPart) -> list[Located[ManagedCluster]]:
        """The clusters whose name and labels ``part`` selects, in inventory order."""
        name = part.clusterName
        if name is not None and not is_glob(name):
            found = self.by_name.get(name)
            candidates = [found] if found is not None else []
        else:
            candidates = self.clusters
        return [
            c
            for c in candidates
            if selects_cluster(part, c.model.metadata.name, c.model.metadata.labels)
        ]


def check_masks_clusters(view: CrossFile) -> list[Problem]:
    """Each mask of the DynamicScoringConfig selects a cluster (over a whole inventory)."""
    configs = view.collected.configs
    if not configs or not view.whole_inventory:
        return []
    return _masks_clusters(configs[0], view.lookup)


def _masks_clusters(
    config: Located[DynamicScoringConfig], clusters: ClusterLookup
) -> list[Problem]:
    problems = []
    for index, mask in enumerate(config.model.spec.masks):
        if not clusters.selected_by(mask):
            field = "clusterName" if mask.clusterName is not None else "clusterSelector"
            problems.append(
                config.problem(
                    ("spec", "masks", index, field), "matches no cluster of the inventory (a typo?)"
                )
            )
    return problems


def check_overrides_clusters(view: CrossFile) -> list[Problem]:
    """Each ``agent.overrides`` entry selects a cluster (over a whole inventory)."""
    if not view.whole_inventory:
        return []
    return _overrides_clusters(view.settings, view.settings_document, view.lookup)


def _overrides_clusters(
    settings: Settings, document: Document | None, clusters: ClusterLookup
) -> list[Problem]:
    problems = []
    for index, override in enumerate(settings.agent.overrides):
        if not clusters.selected_by(override):
            field = "clusterName" if override.clusterName is not None else "clusterSelector"
            pointer: Pointer = ("agent", "overrides", index, field)
            message = "selects no cluster of the inventory (a typo?)"
            if document is None:
                problems.append(Problem("dsf.yaml", 0, 0, format_pointer(pointer), message))
            else:
                problems.append(document.problem(pointer, message))
    return problems


def check_one_config(view: CrossFile) -> list[Problem]:
    """One DynamicScoringConfig in the whole of ``clusters/``."""
    configs = view.collected.configs
    if not configs:
        return []
    first = configs[0].document
    line, _ = first.locate(("metadata", "name"))
    return [
        extra.problem(
            ("metadata", "name"),
            f"a second DynamicScoringConfig (the first is {first.path}:{line})",
        )
        for extra in configs[1:]
    ]


def check_secrets(view: CrossFile) -> list[Problem]:
    """:func:`check_external_secrets` over the scorers read."""
    scorers = [s.model for s in view.collected.scorers]
    return check_external_secrets(view.settings, view.settings_document, scorers)


def check_image(view: CrossFile) -> list[Problem]:
    """:func:`check_default_image` of ``dsf.yaml``."""
    return check_default_image(view.settings_document, EXAMPLE_REPOSITORY_URL)


def check_object_names(view: CrossFile) -> list[Problem]:
    """:func:`check_derived_names` over ``scorers/`` and ``placements/``."""
    found = view.collected
    return check_derived_names(found.scorers, found.placement_objects, found.optimizations)


def check_addon_names(view: CrossFile) -> list[Problem]:
    """:func:`check_settings_names` of ``dsf.yaml``."""
    return check_settings_names(view.settings, view.settings_document)


def check_resources(view: CrossFile) -> list[Problem]:
    """:func:`check_agent_resources`: per cluster only over a whole inventory; the fleet's always."""
    clusters: Iterable[tuple[str, Mapping[str, str]]] = ()
    if view.whole_inventory:
        clusters = (
            (c.model.metadata.name, c.model.metadata.labels) for c in view.collected.clusters
        )
    return check_agent_resources(view.settings, view.settings_document, clusters)
