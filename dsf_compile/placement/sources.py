"""Where ``explain`` gets the hub's state: snapshot files, or a hub read through its API.

``--scores PATH`` / ``--decisions PATH`` name a file or a folder of YAML/JSON holding
AddOnPlacementScores (PlacementDecisions) or ``List``s of them, as ``kubectl get … -A -o
yaml`` prints them, read through the project's safe loader with located errors.
``--hub-kubeconfig`` reads the same, and the hub's ManagedClusterSetBindings, with list
calls only (the official ``kubernetes`` client): dsf never writes to a cluster.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from dsf_compile.errors import DsfError, InputError, Problem
from dsf_compile.inputs.load import Document, Pointer, list_input_files, read_yaml_file
from dsf_compile.inputs.placements import (
    AddOnPlacementScore,
    ManagedClusterSetBinding,
    PlacementDecision,
)
from dsf_compile.inputs.validate import validate_model

M = TypeVar("M", bound=BaseModel)

#: A snapshot is read from files like these; ``kubectl … -o json`` output is JSON.
SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")
#: A hub's scores outgrow a hand-written input's cap: one item per pod of 1,000 clusters
#: is tens of MiB.
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
#: Objects asked for per list call; the API server pages longer lists (as kubectl does).
PAGE_SIZE = 500

CLUSTER_GROUP = "cluster.open-cluster-management.io"
#: The hub resources read, with the version OCM serves them at.
_HUB_RESOURCES = {
    "AddOnPlacementScore": ("v1alpha1", "addonplacementscores"),
    "PlacementDecision": ("v1beta1", "placementdecisions"),
    "ManagedClusterSetBinding": ("v1beta2", "managedclustersetbindings"),
    # explain --verify replays on the hub's own state: its Placements, clusters and sets
    "Placement": ("v1beta1", "placements"),
    "ManagedCluster": ("v1", "managedclusters"),
    "ManagedClusterSet": ("v1beta2", "managedclustersets"),
}


@dataclass(frozen=True)
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
    documents: list[Document] = []
    problems: list[Problem] = []
    target = Path(path)
    if target.is_symlink():
        # Named on the command line, a link is the user's choice (latest.yaml -> a dated
        # snapshot); links inside a snapshot folder are still refused, as in every input.
        target = Path(os.path.relpath(target.resolve()))
        path = str(target)
    if target.is_dir():
        files, found = list_input_files(target.parent, target.name, suffixes=SNAPSHOT_SUFFIXES)
        problems += found
        if not files and not found:
            problems.append(Problem(path, 0, 0, "", "holds no .yaml, .yml or .json file"))
        for relative in files:
            docs, found = read_yaml_file(target.parent, relative, max_bytes=MAX_SNAPSHOT_BYTES)
            documents += docs
            problems += found
    else:
        documents, problems = read_yaml_file(Path.cwd(), path, max_bytes=MAX_SNAPSHOT_BYTES)
    objects: list[M] = []
    first: dict[tuple[str, str], tuple[Document, Pointer]] = {}
    for document in documents:
        data = document.data
        if isinstance(data, dict) and data.get("kind") in ("List", f"{kind}List"):
            items = data.get("items")
            if items is None:
                continue  # an empty list, as some clients print it
            if not isinstance(items, list):
                problems.append(document.problem(("items",), f"must be a list of {kind}"))
                continue
            entries: list[tuple[Pointer, Any]] = [
                (("items", index), item) for index, item in enumerate(items)
            ]
        else:
            entries = [((), data)]
        for pointer, item in entries:
            found_kind = item.get("kind") if isinstance(item, dict) else None
            if found_kind != kind:
                problems.append(
                    document.problem((*pointer, "kind"), f"must be {kind} (or a List of them)")
                )
                continue
            obj, found = validate_model(model, document, item, pointer)
            problems += found
            if obj is None:
                continue
            # Two snapshots of one object (two files of a folder): which one the scheduler
            # would read is an accident of file names, so neither is picked.
            meta = getattr(obj, "metadata")  # noqa: B009 - every model read here has one
            key = (meta.namespace, meta.name)
            if key in first:
                other, other_pointer = first[key]
                line, _ = other.locate((*other_pointer, "metadata", "name"))
                problems.append(
                    document.problem(
                        (*pointer, "metadata", "name"),
                        f"{kind} {key[0]}/{key[1]} is also in {other.path}:{line}; "
                        "keep one snapshot of it",
                    )
                )
                continue
            first[key] = (document, pointer)
            objects.append(obj)
    if problems:
        raise InputError(problems)
    return objects


# ------------------------------------------------------------------------- hub


class HubReadError(DsfError):
    """The hub could not be read (kubeconfig, connection, permissions)."""


def read_hub(kubeconfig: str, *, api_factory: Callable[[str], Any] | None = None) -> HubState:
    """Scores, decisions and bindings from a live hub, with list calls only."""
    api = (api_factory or _custom_objects_api)(kubeconfig)
    return HubState(
        scores=tuple(_list(api, AddOnPlacementScore)),
        decisions=tuple(_list(api, PlacementDecision)),
        bindings=tuple(_list(api, ManagedClusterSetBinding)),
    )


def _custom_objects_api(kubeconfig: str) -> Any:
    from kubernetes import client, config  # only this command needs it

    try:
        api_client = config.new_client_from_config(config_file=kubeconfig)  # type: ignore[no-untyped-call]
    except Exception as err:  # the client raises several unrelated types here
        raise HubReadError(f"--hub-kubeconfig {kubeconfig}: {err}") from err
    return client.CustomObjectsApi(api_client)


@dataclass(frozen=True)
class HubObjects:
    """What ``explain --verify`` reads besides :class:`HubState`: objects as the hub has them."""

    placements: tuple[dict[str, Any], ...]
    clusters: tuple[dict[str, Any], ...]
    cluster_sets: tuple[dict[str, Any], ...]


def read_hub_objects(
    kubeconfig: str, *, api_factory: Callable[[str], Any] | None = None
) -> HubObjects:
    """The hub's Placements, ManagedClusters and ManagedClusterSets (list calls only).

    Returned as read (dicts): the caller validates them against its models, so that a
    Placement the replay cannot read is reported by name rather than failing the read.
    """
    api = (api_factory or _custom_objects_api)(kubeconfig)
    return HubObjects(
        placements=tuple(_list_items(api, "Placement")),
        clusters=tuple(_list_items(api, "ManagedCluster")),
        cluster_sets=tuple(s for s in _list_items(api, "ManagedClusterSet") if isinstance(s, dict)),
    )


def _list_items(api: Any, kind: str) -> list[Any]:
    version, plural = _HUB_RESOURCES[kind]
    items: list[Any] = []
    token = ""
    while True:
        # In pages, as kubectl lists: one answer with every score of a large hub is slow
        # for the API server and may outlast the request's timeout.
        options: dict[str, Any] = {"limit": PAGE_SIZE}
        if token:
            options["_continue"] = token
        try:
            answer = api.list_cluster_custom_object(CLUSTER_GROUP, version, plural, **options)
        except Exception as err:  # ApiException, urllib3 errors: one line, exit 2
            reason = getattr(err, "reason", None) or type(err).__name__
            raise HubReadError(f"cannot list {plural} on the hub: {reason}") from err
        items += answer.get("items") or []
        token = (answer.get("metadata") or {}).get("continue") or ""
        if not token:
            break
    return items


def _list(api: Any, model: type[M]) -> list[M]:
    kind = model.__name__
    version, _ = _HUB_RESOURCES[kind]
    items = _list_items(api, kind)
    objects = []
    for item in items:
        item.setdefault("apiVersion", f"{CLUSTER_GROUP}/{version}")
        item.setdefault("kind", kind)
        if model is ManagedClusterSetBinding:
            # our model of it is strict (it validates what users write); keep what is read
            meta = item.get("metadata", {})
            item = {
                "apiVersion": item["apiVersion"],
                "kind": kind,
                "metadata": {"name": meta.get("name"), "namespace": meta.get("namespace")},
                "spec": {"clusterSet": item.get("spec", {}).get("clusterSet")},
            }
        try:
            objects.append(model.model_validate(item))
        except ValueError as err:
            name = item.get("metadata", {}).get("name", "?")
            raise HubReadError(f"the hub's {kind} {name} is not readable: {err}") from err
    return objects
