"""Documents → validated models, with every problem located at its file, line and field.

Pure: takes the documents :mod:`dsf_compile.inputs.load` read and returns :class:`Inputs`, or
raises :class:`InputError` carrying every problem found, sorted.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from dsf_compile.errors import InputError
from dsf_compile.inputs.agent_image import check_default_image
from dsf_compile.inputs.inventory import DynamicScoringConfig, ManagedCluster, Mask
from dsf_compile.inputs.located import Located, M
from dsf_compile.inputs.messages import error_message
from dsf_compile.inputs.names import check_derived_names, check_settings_names
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.selectors import ClusterPart, is_glob, selects_cluster
from dsf_compile.inputs.settings import EXAMPLE_REPOSITORY_URL, Settings
from dsf_compile.inputs.settings_checks import check_agent_resources, check_external_secrets
from dsf_compile.untrusted import has_secret_query
from dsf_contract.bounded_yaml import Document, Pointer, format_pointer
from dsf_contract.problem import Problem
from dsf_contract.summary import CONFIG_NAME
from dsf_transport.connect_to import parse_resolve_entry

if TYPE_CHECKING:  # the models of placements/ are loaded only for a fleet that has one
    from dsf_compile.inputs.optimization import PlacementOptimization
    from dsf_compile.inputs.placements import (
        ManagedClusterSetBinding,
        Placement,
        PlacementObject,
    )


@dataclass(frozen=True)
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


def validate_model(
    model: type[M], document: Document, data: Any, base: Pointer = ()
) -> tuple[M | None, list[Problem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as err:
        problems = []
        for error in err.errors():
            # "[key]" marks an error about a mapping's key: the key's own position is its field's
            loc = tuple(
                p
                for p in error["loc"]
                if not (isinstance(p, str) and (p.startswith("function-") or p == "[key]"))
            )
            pointer = (*base, *loc)
            if any(pointer[: len(done)] == done for done in document.reported):
                continue  # loading refused what was written here and said so
            if _short_by_failed_items(error):
                continue  # the failing item is reported at its own field
            message = error_message(error, document.plain_text.get(pointer))
            problems.append(document.problem(pointer, message))
        return None, problems


def _short_by_failed_items(error: Any) -> bool:
    """A list "too short" only because some of its items failed (each reported itself)."""
    written = error.get("input")
    minimum = (error.get("ctx") or {}).get("min_length")
    return (
        error["type"] == "too_short"
        and isinstance(written, list | tuple)
        and isinstance(minimum, int)
        and len(written) >= minimum
    )


# --------------------------------------------------------------- pre-checks

_CREDENTIAL_KEYS = {
    "token",
    "password",
    "passwd",
    "secret",
    "apikey",
    "accesstoken",
    "bearertoken",
    "clientsecret",
    "privatekey",
    "credentials",
    "authorization",
}
_URL_WITH_CREDENTIALS = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]*@")


def _carries_credentials(url: str) -> bool:
    found = _URL_WITH_CREDENTIALS.match(url)
    if found is None:
        return False
    # ssh://git@host/repo names the login, not a secret; the key stays in a Secret
    return not (url[:6].lower() == "ssh://" and ":" not in found.group(0)[6:])


def _walk(value: Any, pointer: Pointer = ()) -> Iterator[tuple[Pointer, Any]]:
    yield pointer, value
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _walk(child, (*pointer, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _walk(child, (*pointer, index))


def precheck(document: Document) -> list[Problem]:
    """Credentials in Git: literal token/password fields and URLs with user:password@."""
    problems = []
    for pointer, value in _walk(document.data):
        if pointer and isinstance(pointer[-1], str):
            key = re.sub(r"[-_]", "", pointer[-1]).lower()
            if key in _CREDENTIAL_KEYS:
                problems.append(
                    document.problem(
                        pointer,
                        "credentials must not be written in Git; reference a Secret with auth.tokenSecretRef",
                    )
                )
                continue
        if isinstance(value, str) and _carries_credentials(value):
            problems.append(
                document.problem(
                    pointer, "URL carries credentials (user:password@host); use a Secret reference"
                )
            )
        elif isinstance(value, str) and "://" in value and has_secret_query(value):
            problems.append(
                document.problem(
                    pointer,
                    "URL carries a secret query parameter (token=, api_key=, ...); use a Secret reference",
                )
            )
    return problems


# --------------------------------------------------------------- documents


@dataclass
class _Collected:
    scorers: list[Located[DynamicScorer]]
    configs: list[Located[DynamicScoringConfig]]
    clusters: list[Located[ManagedCluster]]
    problems: list[Problem]
    placement_objects: list[Located[PlacementObject]] = field(default_factory=list)
    optimizations: list[Located[PlacementOptimization]] = field(default_factory=list)
    #: False when a document in clusters/ could not be read as a cluster: a mask that
    #: matches none of the clusters read may match the missing one.
    inventory_complete: bool = True


def _kind_of(document: Document, data: Any) -> str | None:
    if not isinstance(data, dict):
        return None
    kind = data.get("kind")
    return kind if isinstance(kind, str) else None


def _located(
    model: type[M], document: Document, data: Any, problems: list[Problem], base: Pointer = ()
) -> Located[M] | None:
    """``data`` validated as ``model``, located in ``document``; its problems go to ``problems``."""
    validated, found = validate_model(model, document, data, base)
    problems.extend(found)
    return None if validated is None else Located(validated, document, base)


def _collect(documents: Iterable[Document]) -> _Collected:
    out = _Collected([], [], [], [])
    for document in documents:
        in_scorers = document.path.startswith("scorers/")
        data = document.data
        if () in document.reported:
            out.inventory_complete = out.inventory_complete and in_scorers
            continue  # the whole document was refused while loading
        if not isinstance(data, dict):
            out.problems.append(
                document.problem((), "document must be a mapping with apiVersion and kind")
            )
            out.inventory_complete = out.inventory_complete and in_scorers
            continue
        out.problems.extend(precheck(document))
        folder = document.path.split("/", 1)[0]
        collect = _BY_FOLDER.get(folder, _collect_cluster_document)
        collect(document, data, _kind_of(document, data), out)
    return out


def _collect_scorer(
    document: Document, data: dict[str, Any], kind: str | None, out: _Collected
) -> None:
    if kind != "DynamicScorer":
        out.problems.append(
            document.problem(("kind",), "files in scorers/ hold DynamicScorer documents only")
        )
        return
    scorer = _located(DynamicScorer, document, data, out.problems)
    if scorer is not None:
        out.scorers.append(scorer)


def _collect_cluster_document(
    document: Document, data: dict[str, Any], kind: str | None, out: _Collected
) -> None:
    collect = _CLUSTERS_BY_KIND.get(kind or "")
    if collect is not None:
        collect(document, data, out)
        return
    out.inventory_complete = False
    out.problems.append(
        document.problem(
            ("kind",),
            "files in clusters/ hold ManagedCluster (or a List of them) and DynamicScoringConfig documents",
        )
    )


def _collect_config(document: Document, data: dict[str, Any], out: _Collected) -> None:
    metadata = data.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if isinstance(name, str) and name != CONFIG_NAME:
        out.problems.append(
            document.problem(
                ("metadata", "name"),
                f"must be {CONFIG_NAME}: the framework reads only that DynamicScoringConfig",
            )
        )
        return
    config = _located(DynamicScoringConfig, document, data, out.problems)
    if config is not None:
        out.configs.append(config)


def _collect_cluster(
    document: Document, data: dict[str, Any], out: _Collected, base: Pointer = ()
) -> None:
    cluster = _located(ManagedCluster, document, data, out.problems, base)
    if cluster is not None:
        out.clusters.append(cluster)
    else:
        out.inventory_complete = False


def _collect_cluster_list(document: Document, data: dict[str, Any], out: _Collected) -> None:
    items = data.get("items")
    if not isinstance(items, list):
        out.problems.append(document.problem(("items",), "must be a list of ManagedCluster"))
        out.inventory_complete = False
        return
    for index, item in enumerate(items):
        if not isinstance(item, dict) or item.get("kind", "ManagedCluster") != "ManagedCluster":
            out.problems.append(
                document.problem(("items", index, "kind"), "must be ManagedCluster")
            )
            out.inventory_complete = False
            continue
        _collect_cluster(document, {"kind": "ManagedCluster", **item}, out, ("items", index))


_CLUSTERS_BY_KIND: dict[str, Callable[[Document, dict[str, Any], _Collected], None]] = {
    "DynamicScoringConfig": _collect_config,
    "ManagedCluster": _collect_cluster,
    "List": _collect_cluster_list,
    "ManagedClusterList": _collect_cluster_list,
}


def _collect_placement_object(
    document: Document, data: dict[str, Any], kind: str | None, out: _Collected
) -> None:
    from dsf_compile.inputs.optimization import PlacementOptimization
    from dsf_compile.inputs.placements import OPTIMIZATION_KIND, PLACEMENT_KINDS

    if kind == OPTIMIZATION_KIND:
        optimization = _located(PlacementOptimization, document, data, out.problems)
        if optimization is not None:
            out.optimizations.append(optimization)
        return
    model_type = PLACEMENT_KINDS.get(kind or "")
    if model_type is None:
        known = sorted([*PLACEMENT_KINDS, OPTIMIZATION_KIND])
        close = difflib.get_close_matches(str(kind), known, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        out.problems.append(
            document.problem(
                ("kind",),
                f"{kind!r} is not read from placements/{hint}: it holds {', '.join(known)}",
            )
        )
        return
    located = _located(model_type, document, data, out.problems)
    if located is not None:
        out.placement_objects.append(located)


#: Where a document lies decides what it may be (the rest lie in clusters/).
_BY_FOLDER: dict[str, Callable[[Document, dict[str, Any], str | None, _Collected], None]] = {
    "scorers": _collect_scorer,
    "placements": _collect_placement_object,
}


# ----------------------------------------------------------------- semantics


def check_placement_objects(objects: Sequence[Located[PlacementObject]]) -> list[Problem]:
    """What holds within ``placements/`` alone: unique objects, bindings named after their set."""
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


def _check_scorer_namespaces(
    scorers: list[Located[DynamicScorer]], settings: Settings
) -> list[Problem]:
    return [
        located.problem(
            ("metadata", "namespace"),
            f"must be the hub namespace {settings.hubNamespace!r} (dsf.yaml hubNamespace) or be left out",
        )
        for located in scorers
        if located.model.metadata.namespace not in (None, settings.hubNamespace)
    ]


def mask_matches_cluster(mask: Mask, cluster: ManagedCluster) -> bool:
    """Whether the cluster part of ``mask`` (name glob and/or selector) selects ``cluster``."""
    return selects_cluster(mask, cluster.metadata.name, cluster.metadata.labels)


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


def _check_masks_clusters(
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


def _check_overrides_clusters(
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


def validate_documents(
    documents: Iterable[Document],
    settings: Settings,
    file_problems: Iterable[Problem] = (),
    settings_document: Document | None = None,
) -> Inputs:
    """Validate every document and the cross-document rules; raise InputError on any problem."""
    collected = _collect(documents)
    file_problems = list(file_problems)
    problems = file_problems + collected.problems
    problems += _check_unique_names(collected.scorers, "scorer")
    problems += _check_scorer_namespaces(collected.scorers, settings)
    problems += check_external_secrets(
        settings, settings_document, [s.model for s in collected.scorers]
    )
    problems += _check_unique_names(collected.clusters, "cluster")
    problems += check_placement_objects(collected.placement_objects)
    problems += check_default_image(settings_document, EXAMPLE_REPOSITORY_URL)
    problems += check_derived_names(
        collected.scorers, collected.placement_objects, collected.optimizations
    )
    problems += check_settings_names(settings, settings_document)
    config = None
    for extra in collected.configs[1:]:
        first = collected.configs[0].document
        line, _ = first.locate(("metadata", "name"))
        problems.append(
            extra.problem(
                ("metadata", "name"),
                f"a second DynamicScoringConfig (the first is {first.path}:{line})",
            )
        )
    # a file of clusters/ that could not be read in full may hold the cluster a mask means
    unreadable = any(p.path.startswith("clusters/") for p in file_problems)
    if collected.configs:
        config = collected.configs[0]
        if collected.inventory_complete and not unreadable:
            problems += _check_masks_clusters(config, ClusterLookup(collected.clusters))
    if collected.inventory_complete and not unreadable:
        lookup = ClusterLookup(collected.clusters)
        problems += _check_overrides_clusters(settings, settings_document, lookup)
    # per cluster only over a whole inventory; the fleet's own resources in any case
    every = collected.inventory_complete and not unreadable
    problems += check_agent_resources(
        settings,
        settings_document,
        ((c.model.metadata.name, c.model.metadata.labels) for c in collected.clusters)
        if every
        else (),
    )
    if any(p.severity == "error" for p in problems):
        raise InputError(problems)
    scorers = tuple(sorted(collected.scorers, key=lambda s: s.model.metadata.name))
    clusters = tuple(sorted(collected.clusters, key=lambda c: c.model.metadata.name))
    placement_objects = tuple(sorted(collected.placement_objects, key=_object_key))
    optimizations = tuple(sorted(collected.optimizations, key=_object_key))
    return Inputs(
        settings,
        scorers,
        config,
        clusters,
        tuple(problems),
        placement_objects,
        optimizations,
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
    more += _check_resolve(document)
    return (settings or Settings()), problems + more


def _check_resolve(document: Document) -> list[Problem]:
    """``sync.resolve``: what ``sync`` would refuse, said by ``validate`` at its line.

    Read from the document, so that it is checked even when another setting is wrong;
    an entry that is not a string to a string is the model's to report.
    """
    sync = document.data.get("sync") if isinstance(document.data, dict) else None
    entries = sync.get("resolve") if isinstance(sync, dict) else None
    if not isinstance(entries, dict):
        return []
    problems = []
    targets: dict[tuple[str, int], tuple[str, int]] = {}
    for key in sorted(entries):
        value = entries[key]
        if not isinstance(value, str):
            continue
        pointer: Pointer = ("sync", "resolve", key)
        try:
            address, target = parse_resolve_entry(key, value)
        except ValueError as err:
            problems.append(document.problem(pointer, str(err)))
            continue
        if targets.setdefault(address, target) != target:
            message = f"{address[0]}:{address[1]} is mapped twice to different addresses"
            problems.append(document.problem(pointer, message))
    return problems
