"""``sync --clusters``: the hub's ManagedClusters → ``clusters/discovered.yaml``.

Read-only: list calls through :mod:`dsf_compile.edges.hub` (paged and bounded). Each cluster is written as
``kubectl get managedclusters -o yaml`` shows it, minus what the servers set and change
on their own (uid, resourceVersion, managedFields, conditions, leases, client configs,
and the ``feature.open-cluster-management.io/addon-*`` labels that follow addon health),
so the file changes only when a cluster joins, leaves, or what the replay reads of it
changes. What OCM's scheduler and a Placement's CEL read is kept whole: labels,
annotations, taints (``timeAdded`` included: ``tolerationSeconds`` counts from it),
cluster claims, ``status.version``, allocatable and capacity. Same hub state, same bytes:
clusters sorted by name, keys in fixed order.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.inputs.inventory import ManagedCluster
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.settings import HubSettings
from dsf_contract.problem import Problem
from dsf_contract.scores import OCM_CLUSTER_GROUP

if TYPE_CHECKING:
    from dsf_compile.edges.hub import HubAccess

VERSION = "v1"
DISCOVERED_FILE = "clusters/discovered.yaml"
#: Labels the hub's addon manager sets and flips with each addon's availability.
_VOLATILE_LABEL_PREFIX = "feature.open-cluster-management.io/addon-"
#: What ``kubectl apply`` leaves: a copy of the whole object, server-set fields and all.
_APPLY_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
#: A taint's fields, in the order written (OCM's ``Taint``).
_TAINT_FIELDS = ("key", "value", "effect", "timeAdded")
HEADER = (
    "# The hub's ManagedClusters, written by `dsf-compile sync --clusters`; do not edit.\n"
    "# (Keep hand-written clusters in another file of clusters/, under other names.)\n"
)


@dataclass(frozen=True)
class Discovery:
    """What ``sync --clusters`` found and whether the file changed."""

    clusters: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: bool
    recovered: str = ""  # what a killed sync --clusters left and this one removed


def _sorted_map(value: Any) -> dict[str, Any]:
    return dict(sorted(value.items())) if isinstance(value, dict) else {}


def clean_cluster(obj: dict[str, Any]) -> dict[str, Any]:
    """The parts of a ManagedCluster a person edits or the fleet selects on, nothing server-set."""
    metadata = obj.get("metadata") or {}
    out_meta: dict[str, Any] = {"name": metadata["name"]}
    labels = {
        k: v
        for k, v in _sorted_map(metadata.get("labels")).items()
        if not k.startswith(_VOLATILE_LABEL_PREFIX)
    }
    annotations = {
        k: v for k, v in _sorted_map(metadata.get("annotations")).items() if k != _APPLY_ANNOTATION
    }
    for key, value in (("labels", labels), ("annotations", annotations)):
        if value:
            out_meta[key] = value
    return {
        "apiVersion": f"{OCM_CLUSTER_GROUP}/{VERSION}",
        "kind": "ManagedCluster",
        "metadata": out_meta,
        "spec": _clean_spec(obj.get("spec") or {}),
        **({"status": status} if (status := _clean_status(obj.get("status") or {})) else {}),
    }


def _clean_spec(spec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"hubAcceptsClient": bool(spec.get("hubAcceptsClient", False))}
    taints = [{k: t[k] for k in _TAINT_FIELDS if k in t} for t in spec.get("taints") or []]
    if taints:
        out["taints"] = sorted(
            taints, key=lambda t: (t.get("key", ""), t.get("effect", ""), t.get("value", ""))
        )
    return out


def _clean_status(status: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    claims = [
        {"name": c["name"], "value": c.get("value", "")}
        for c in status.get("clusterClaims") or []
        if "name" in c
    ]
    if claims:
        out["clusterClaims"] = sorted(claims, key=lambda c: c["name"])
    for part in ("allocatable", "capacity", "version"):
        values = _sorted_map(status.get(part))
        if values:
            out[part] = {k: str(v) for k, v in values.items()}
    return out


def encode_discovered(clusters: list[dict[str, Any]]) -> str:
    """The file's text: a header, then one YAML document per cluster, sorted by name."""
    ordered = sorted((clean_cluster(c) for c in clusters), key=lambda c: c["metadata"]["name"])
    return HEADER + "---\n".join(dump_yaml(c) for c in ordered)


def check_discovered_target(root: Path) -> list[Problem]:
    """What would make ``sync --clusters`` write elsewhere than ``clusters/discovered.yaml``.

    ``clusters/`` and the file come with pull requests: a link in either place would send
    the write wherever it points, so both must be what they seem (checked before the hub
    is read).
    """
    problems = []
    for relative, expected, check in (
        ("clusters", "a folder", stat.S_ISDIR),
        (DISCOVERED_FILE, "a regular file", stat.S_ISREG),
    ):
        try:
            mode = os.lstat(root / relative).st_mode
        except FileNotFoundError:
            break
        if not check(mode):
            problems.append(
                Problem(relative, 0, 0, "", f"must be {expected} (not a link or a FIFO): remove it")
            )
            break
    return problems


def read_managed_clusters(access: HubAccess, settings: HubSettings) -> list[dict[str, Any]]:
    """Every ManagedCluster on the hub, cleaned (list calls only, within ``settings``).

    Each cluster is validated as ``validate`` validates ``clusters/*.yaml`` before and after
    it is cleaned: a name that is not a DNS label (``../../etc``), a label Kubernetes would
    refuse, a control character or a credential in what would be written. A malformed
    cluster is an error and nothing is written: skipping it would drop it from the file, so
    the scheduled sync would propose removing a cluster the hub still has.
    """
    from dsf_compile.edges.hub import HubReadError, format_object_problems, item_label
    from dsf_compile.hubread.state import list_managed_clusters

    items = list_managed_clusters(access, settings)
    problems: list[str] = []
    cleaned = []
    seen: set[str] = set()
    for index, item in enumerate(items):
        where = item_label("managedclusters", index, item)
        found = _cluster_problems(item)
        if not found:  # well-formed: clean it, and check what would be written
            cluster = clean_cluster(item)
            found = _cluster_problems(cluster, written=True)
        if found:
            problems += [f"{where}: {problem}" for problem in found]
            continue
        name = cluster["metadata"]["name"]
        if name in seen:
            problems.append(f"{where}: listed twice")
            continue
        seen.add(name)
        cleaned.append(cluster)
    if problems:
        raise HubReadError("malformed ManagedClusters", format_object_problems(problems))
    return cleaned


def _cluster_problems(item: Any, *, written: bool = False) -> list[str]:
    """What ``validate`` would say about ``item`` as a ManagedCluster in ``clusters/``."""
    from dsf_compile.edges.untrusted import first_string_problem
    from dsf_compile.inputs.inventory import ManagedCluster
    from dsf_compile.inputs.schema import precheck, validate_model
    from dsf_contract.bounded_yaml import Document

    if not isinstance(item, dict):
        return ["not an object"]
    data = {"apiVersion": f"{OCM_CLUSTER_GROUP}/{VERSION}", "kind": "ManagedCluster", **item}
    document = Document(path="hub", index=0, data=data, positions={})
    found = validate_model(ManagedCluster, document, data)[1]
    if written:  # what goes to Git: no credentials, nothing a terminal or YAML would act on
        found += precheck(document)
        string = first_string_problem(data)
        if string is not None:
            return [string]
    return [f"{p.field}: {p.message}" if p.field else p.message for p in found]


def names_in(text: str) -> set[str]:
    """The cluster names of a discovered file's text (what the hub's list becomes)."""
    from dsf_compile.inputs.collect import collect
    from dsf_contract.bounded_yaml import parse_yaml

    return {c.model.metadata.name for c in collect(parse_yaml(text, DISCOVERED_FILE)[0]).clusters}


def held_clusters(root: Path) -> tuple[dict[str, Located[ManagedCluster]], list[Problem]]:
    """The clusters ``clusters/discovered.yaml`` holds, each where it is written, read as
    ``validate`` reads it (the loader and :func:`~dsf_compile.inputs.collect.collect`: one
    cluster, several documents, a ``List`` or ``ManagedClusterList``), and the errors that
    keep any of them from being read (then the guard cannot count what would be removed).

    The file came from Git: bounded (size, aliases, depth), never through a link.
    """
    from dsf_compile.inputs.collect import collect
    from dsf_compile.inputs.load import read_yaml_file

    if not os.path.lexists(root / DISCOVERED_FILE):
        return {}, []
    documents, problems = read_yaml_file(root, DISCOVERED_FILE)
    if [p.message for p in problems] == ["file is empty"]:
        return {}, []
    collected = collect(documents)
    errors = [p for p in (*problems, *collected.problems) if p.severity == "error"]
    if not collected.inventory_complete and not errors:
        errors.append(Problem(DISCOVERED_FILE, 0, 0, "", "holds a document that is not a cluster"))
    held: dict[str, Located[ManagedCluster]] = {}
    for cluster in collected.clusters:
        held.setdefault(cluster.model.metadata.name, cluster)
    return held, errors
