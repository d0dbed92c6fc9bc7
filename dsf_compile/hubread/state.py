"""The hub's state for the scheduler's replay: snapshot files, or a hub read through its API.

Every read of a hub goes through here (over :mod:`dsf_compile.edges.hub`'s bounded
session): the I/O edge of ``explain`` (``--verify`` too), ``optimize``, ``render
--check``/``diff`` with ``--scores``, ``sync --clusters`` and ``dsf-mcp``; what it returns (:class:`HubState`) is plain values the pure
``placement/`` stages take.

``--scores PATH`` / ``--decisions PATH`` name a file or a folder of YAML/JSON holding
AddOnPlacementScores (PlacementDecisions) or ``List``s of them, as ``kubectl get … -A -o
yaml`` prints them, read through the project's safe loader with located errors.
A hub (``--hub-kubeconfig``, else ``$KUBECONFIG``, else ``~/.kube/config``, with
``--context``: :class:`~dsf_compile.edges.hub.HubAccess`) gives the same, and the hub's
ManagedClusterSetBindings, with list
calls only (:mod:`dsf_compile.edges.hub`, bounded): dsf never writes to a cluster.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from dsf_compile.edges.hub import (
    HubAccess,
    HubReadError,
    HubSession,
    format_object_problems,
    item_label,
    open_hub,
)
from dsf_compile.errors import InputError
from dsf_compile.inputs.load import list_input_files, read_yaml_file
from dsf_compile.inputs.placements import (
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    PlacementDecision,
)
from dsf_compile.inputs.schema import validate_model
from dsf_compile.inputs.settings import HubSettings
from dsf_contract.bounded_yaml import Document, Pointer
from dsf_contract.problem import Problem
from dsf_contract.records import frozen
from dsf_contract.scores import OCM_CLUSTER_GROUP, SCORE_KIND, SCORE_PLURAL, SCORE_VERSION

M = TypeVar("M", bound=BaseModel)

#: A snapshot is read from files like these; ``kubectl … -o json`` output is JSON.
SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")
#: A hub's scores outgrow a hand-written input's cap: one item per pod of 1,000 clusters
#: is tens of MiB.
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
#: The hub resources read, with the version OCM serves them at.
_HUB_RESOURCES = {
    SCORE_KIND: (SCORE_VERSION, SCORE_PLURAL),
    "PlacementDecision": ("v1beta1", "placementdecisions"),
    "ManagedClusterSetBinding": ("v1beta2", "managedclustersetbindings"),
    # explain --verify replays on the hub's own state: its Placements, clusters and sets
    "Placement": ("v1beta1", "placements"),
    "ManagedCluster": ("v1", "managedclusters"),
    "ManagedClusterSet": ("v1beta2", "managedclustersets"),
}


@frozen
class HubState:
    """What the scheduler needs from a hub (or from snapshots of one)."""

    scores: tuple[AddOnPlacementScore, ...] | None
    decisions: tuple[PlacementDecision, ...]
    bindings: tuple[ManagedClusterSetBinding, ...] = ()


def read_scores(path: str) -> tuple[AddOnPlacementScore, ...]:
    """Every AddOnPlacementScore of a snapshot file or folder; InputError on problems."""
    return tuple(_read_objects(path, AddOnPlacementScore))


def read_decisions(path: str) -> tuple[PlacementDecision, ...]:
    """Every PlacementDecision of a snapshot file or folder; InputError on problems."""
    return tuple(_read_objects(path, PlacementDecision))


def _read_objects(path: str, model: type[M]) -> list[M]:
    kind = model.__name__
    documents, problems = _snapshot_documents(path)
    objects: list[M] = []
    first: dict[tuple[str, str], tuple[Document, Pointer]] = {}
    for document in documents:
        for pointer, item in _entries(document, kind, problems):
            obj, found = validate_model(model, document, item, pointer)
            problems += found
            if obj is None:
                continue
            # Two snapshots of one object (two files of a folder): which one the scheduler
            # would read is an accident of file names, so neither is picked.
            meta = getattr(obj, "metadata")  # noqa: B009 - every model read here has one
            key = (meta.namespace, meta.name)
            if key in first:
                problems.append(_twice(kind, key, first[key], document, pointer))
                continue
            first[key] = (document, pointer)
            objects.append(obj)
    if problems:
        raise InputError(problems)
    return objects


def _snapshot_documents(path: str) -> tuple[list[Document], list[Problem]]:
    """The documents of a snapshot file, or of every snapshot file of a folder."""
    target = Path(path)
    if target.is_symlink():
        # Named on the command line, a link is the user's choice (latest.yaml -> a dated
        # snapshot); links inside a snapshot folder are still refused, as in every input.
        target = Path(os.path.relpath(target.resolve()))
        path = str(target)
    if not target.is_dir():
        return read_yaml_file(Path.cwd(), path, max_bytes=MAX_SNAPSHOT_BYTES)
    documents: list[Document] = []
    files, problems = list_input_files(target.parent, target.name, suffixes=SNAPSHOT_SUFFIXES)
    if not files and not problems:
        problems.append(Problem(path, 0, 0, "", "holds no .yaml, .yml or .json file"))
    for relative in files:
        docs, found = read_yaml_file(target.parent, relative, max_bytes=MAX_SNAPSHOT_BYTES)
        documents += docs
        problems += found
    return documents, problems


def _entries(document: Document, kind: str, problems: list[Problem]) -> list[tuple[Pointer, Any]]:
    """The objects of ``kind`` a document holds (itself, or a List's items), located."""
    data = document.data
    entries: list[tuple[Pointer, Any]] = [((), data)]
    if isinstance(data, dict) and data.get("kind") in ("List", f"{kind}List"):
        items = data.get("items")
        if items is None:
            return []  # an empty list, as some clients print it
        if not isinstance(items, list):
            problems.append(document.problem(("items",), f"must be a list of {kind}"))
            return []
        entries = [(("items", index), item) for index, item in enumerate(items)]
    kept = []
    for pointer, item in entries:
        if isinstance(item, dict) and item.get("kind") == kind:
            kept.append((pointer, item))
        else:
            problems.append(
                document.problem((*pointer, "kind"), f"must be {kind} (or a List of them)")
            )
    return kept


def _twice(
    kind: str,
    key: tuple[str, str],
    first: tuple[Document, Pointer],
    document: Document,
    pointer: Pointer,
) -> Problem:
    other, other_pointer = first
    line, _ = other.locate((*other_pointer, "metadata", "name"))
    return document.problem(
        (*pointer, "metadata", "name"),
        f"{kind} {key[0]}/{key[1]} is also in {other.path}:{line}; keep one snapshot of it",
    )


# ------------------------------------------------------------------------- hub


def read_hub(access: HubAccess, settings: HubSettings | None = None) -> HubState:
    """Scores, decisions and bindings from a live hub, with list calls only.

    Within ``settings`` (``dsf.yaml`` ``hub``: pages, items, bytes, a deadline for the
    whole read): see :func:`hub_state`.
    """
    with open_hub(access, settings or HubSettings()) as hub:
        return hub_state(hub)


def hub_state(hub: HubSession) -> HubState:
    """Scores, decisions and bindings read in ``hub``'s session.

    Every object is validated as a snapshot file's would be; a malformed one is an error,
    not skipped: a real API server validates objects against their CRD before storing
    them, so a malformed one means the answer cannot be trusted, and leaving it out would
    make the replay differ from the hub without a word.
    """
    problems: list[str] = []
    state = HubState(
        scores=tuple(_listed(hub, AddOnPlacementScore, problems)),
        decisions=tuple(_listed(hub, PlacementDecision, problems)),
        bindings=tuple(_listed(hub, ManagedClusterSetBinding, problems)),
    )
    if problems:
        raise HubReadError("malformed objects", format_object_problems(problems))
    return state


@frozen
class HubObjects:
    """What ``explain --verify`` reads besides :class:`HubState`: objects as the hub has them."""

    placements: tuple[Any, ...]
    clusters: tuple[Any, ...]
    cluster_sets: tuple[dict[str, Any], ...]


def hub_objects(hub: HubSession) -> HubObjects:
    """The hub's Placements, ManagedClusters and ManagedClusterSets (list calls only).

    Returned as read (any JSON value): the caller validates them against its models, so
    that a Placement the replay cannot read is reported by name rather than failing the read.
    """

    def listed(kind: str) -> list[Any]:
        return hub.list_objects(OCM_CLUSTER_GROUP, *_HUB_RESOURCES[kind])

    return HubObjects(
        placements=tuple(listed("Placement")),
        clusters=tuple(listed("ManagedCluster")),
        cluster_sets=tuple(s for s in listed("ManagedClusterSet") if isinstance(s, dict)),
    )


def read_hub_replay(access: HubAccess, settings: HubSettings) -> tuple[HubState, HubObjects]:
    """``explain --verify``'s read: :func:`hub_state` and :func:`hub_objects` in one session
    (one deadline for all six lists)."""
    with open_hub(access, settings) as hub:
        return hub_state(hub), hub_objects(hub)


def list_managed_clusters(access: HubAccess, settings: HubSettings) -> list[Any]:
    """``sync --clusters``' read: the hub's ManagedClusters as listed (any JSON value).

    The caller validates and cleans each one (:mod:`dsf_compile.sync.clusters`).
    """
    with open_hub(access, settings) as hub:
        return hub.list_objects(OCM_CLUSTER_GROUP, *_HUB_RESOURCES["ManagedCluster"])


def _listed(hub: HubSession, model: type[M], problems: list[str]) -> list[M]:
    items = hub.list_objects(OCM_CLUSTER_GROUP, *_HUB_RESOURCES[model.__name__])
    return validated_objects(model, items, problems)


def validated_objects(model: type[M], items: list[Any], problems: list[str]) -> list[M]:
    """``items`` of one hub list validated as ``model``, as Git input is; ``problems`` gets a line per fault."""
    kind = model.__name__
    version, plural = _HUB_RESOURCES[kind]
    objects: list[M] = []
    seen: set[tuple[object, object]] = set()
    for index, item in enumerate(items):
        where = item_label(plural, index, item)
        if not isinstance(item, dict):
            problems.append(f"{where}: not an object")
            continue
        item = {"apiVersion": f"{OCM_CLUSTER_GROUP}/{version}", "kind": kind, **item}
        if model is ManagedClusterSetBinding:
            item = _binding_part(item)
        document = Document(path="hub", index=0, data=item, positions={})
        obj, found = validate_model(model, document, item)
        for problem in found:
            field = f"{problem.field}: " if problem.field else ""
            problems.append(f"{where}: {field}{problem.message}")
        if obj is None:
            continue
        meta = getattr(obj, "metadata")  # noqa: B009 - every model read here has one
        key = (meta.namespace, meta.name)
        if key in seen:
            problems.append(f"{where}: listed twice")
            continue
        seen.add(key)
        objects.append(obj)
    return objects


def _binding_part(item: dict[str, Any]) -> dict[str, Any]:
    # Our model of a binding is strict (it validates what users write): keep what is read.
    meta = item.get("metadata")
    spec = item.get("spec")
    return {
        "apiVersion": item["apiVersion"],
        "kind": item["kind"],
        "metadata": {k: meta[k] for k in ("name", "namespace") if k in meta}
        if isinstance(meta, dict)
        else meta,
        "spec": {"clusterSet": spec.get("clusterSet")} if isinstance(spec, dict) else spec,
    }
