"""Documents → models, by the folder each lies in and the kind it declares.

``scorers/`` holds DynamicScorers, ``placements/`` the Placement kinds and
PlacementOptimizations, ``clusters/`` ManagedClusters (alone or in a List) and the
DynamicScoringConfig; a document anywhere else is a problem at its ``kind``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dsf_compile.inputs.inventory import DynamicScoringConfig, ManagedCluster
from dsf_compile.inputs.located import Located, M
from dsf_compile.inputs.schema import precheck, validate_model
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_contract.bounded_yaml import Document, Pointer
from dsf_contract.problem import Problem
from dsf_contract.summary import CONFIG_NAME

if TYPE_CHECKING:  # the models of placements/ are loaded only for a fleet that has one
    from dsf_compile.inputs.optimization import PlacementOptimization
    from dsf_compile.inputs.placements import PlacementObject


@dataclass
class Collected:
    """The models read from the documents, unsorted, and the problems found reading them."""

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


def collect(documents: Iterable[Document]) -> Collected:
    """Every document validated as its kind, with the problems of those that are not."""
    out = Collected([], [], [], [])
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
        read = _BY_FOLDER.get(folder, _collect_cluster_document)
        read(document, data, _kind_of(document, data), out)
    return out


def _collect_scorer(
    document: Document, data: dict[str, Any], kind: str | None, out: Collected
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
    document: Document, data: dict[str, Any], kind: str | None, out: Collected
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


def _collect_config(document: Document, data: dict[str, Any], out: Collected) -> None:
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
    document: Document, data: dict[str, Any], out: Collected, base: Pointer = ()
) -> None:
    cluster = _located(ManagedCluster, document, data, out.problems, base)
    if cluster is not None:
        out.clusters.append(cluster)
    else:
        out.inventory_complete = False


def _collect_cluster_list(document: Document, data: dict[str, Any], out: Collected) -> None:
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


_CLUSTERS_BY_KIND: dict[str, Callable[[Document, dict[str, Any], Collected], None]] = {
    "DynamicScoringConfig": _collect_config,
    "ManagedCluster": _collect_cluster,
    "List": _collect_cluster_list,
    "ManagedClusterList": _collect_cluster_list,
}


def _collect_placement_object(
    document: Document, data: dict[str, Any], kind: str | None, out: Collected
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
        import difflib  # only to suggest a kind: valid fleets never load it

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
_BY_FOLDER: dict[str, Callable[[Document, dict[str, Any], str | None, Collected], None]] = {
    "scorers": _collect_scorer,
    "placements": _collect_placement_object,
}


# ----------------------------------------------------------------- semantics
