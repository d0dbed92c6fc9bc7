"""``sync --clusters``: the hub's ManagedClusters → ``clusters/discovered.yaml``.

Read-only: one list call through the ``kubernetes`` client. Each cluster is written as
``kubectl get managedclusters -o yaml`` shows it, minus what the servers set and change
on their own (uid, resourceVersion, managedFields, conditions, leases, client configs,
and the ``feature.open-cluster-management.io/addon-*`` labels that follow addon health),
so the file changes only when a cluster joins, leaves, or its labels, claims, taints or
resources change. Same hub state, same bytes: clusters sorted by name, keys in fixed order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dsf_compile.render.emit import dump_yaml

GROUP = "cluster.open-cluster-management.io"
VERSION = "v1"
DISCOVERED_FILE = "clusters/discovered.yaml"
#: Labels the hub's addon manager sets and flips with each addon's availability.
_VOLATILE_LABEL_PREFIX = "feature.open-cluster-management.io/addon-"
HEADER = (
    "# The hub's ManagedClusters, written by `dsf-compile sync --clusters`; do not edit.\n"
    "# (Keep hand-written clusters in another file of clusters/, under other names.)\n"
)


class ClusterDiscoveryError(Exception):
    """The hub could not be read (kubeconfig, connection, permission)."""


@dataclass(frozen=True)
class Discovery:
    """What ``sync --clusters`` found and whether the file changed."""

    clusters: tuple[str, ...]
    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: bool


def _sorted_map(value: Any) -> dict[str, Any]:
    return dict(sorted(value.items())) if isinstance(value, dict) else {}


def clean_cluster(obj: dict[str, Any]) -> dict[str, Any]:
    """The parts of a ManagedCluster a person edits or the fleet selects on, nothing server-set."""
    metadata = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    labels = {
        k: v
        for k, v in _sorted_map(metadata.get("labels")).items()
        if not k.startswith(_VOLATILE_LABEL_PREFIX)
    }
    out_meta: dict[str, Any] = {"name": metadata["name"]}
    if labels:
        out_meta["labels"] = labels
    out: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ManagedCluster",
        "metadata": out_meta,
    }
    out_spec: dict[str, Any] = {"hubAcceptsClient": bool(spec.get("hubAcceptsClient", False))}
    taints = [
        {k: t[k] for k in ("key", "value", "effect") if k in t} for t in spec.get("taints") or []
    ]
    if taints:
        out_spec["taints"] = sorted(
            taints, key=lambda t: (t.get("key", ""), t.get("effect", ""), t.get("value", ""))
        )
    out["spec"] = out_spec
    out_status: dict[str, Any] = {}
    claims = [
        {"name": c["name"], "value": c.get("value", "")}
        for c in status.get("clusterClaims") or []
        if "name" in c
    ]
    if claims:
        out_status["clusterClaims"] = sorted(claims, key=lambda c: c["name"])
    for part in ("allocatable", "capacity"):
        values = _sorted_map(status.get(part))
        if values:
            out_status[part] = {k: str(v) for k, v in values.items()}
    if out_status:
        out["status"] = out_status
    return out


def encode_discovered(clusters: list[dict[str, Any]]) -> str:
    """The file's text: a header, then one YAML document per cluster, sorted by name."""
    ordered = sorted((clean_cluster(c) for c in clusters), key=lambda c: c["metadata"]["name"])
    return HEADER + "---\n".join(dump_yaml(c) for c in ordered)


def list_managed_clusters(kubeconfig: Path) -> list[dict[str, Any]]:
    """Every ManagedCluster on the hub (one list call; read-only)."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    try:
        api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
            config_file=str(kubeconfig), persist_config=False
        )
    except (config.ConfigException, OSError, ValueError) as err:
        raise ClusterDiscoveryError(f"hub kubeconfig {kubeconfig} unusable: {err}") from None
    try:
        with api_client:
            listed = client.CustomObjectsApi(api_client).list_cluster_custom_object(
                GROUP, VERSION, "managedclusters", _request_timeout=30
            )
    except ApiException as err:
        raise ClusterDiscoveryError(
            f"listing ManagedClusters on the hub failed: {err.status} {err.reason}"
        ) from None
    except OSError as err:  # connection refused, DNS, TLS
        raise ClusterDiscoveryError(f"cannot reach the hub: {err}") from None
    except Exception as err:  # urllib3's errors are not OSErrors
        if type(err).__module__.startswith("urllib3"):
            raise ClusterDiscoveryError(f"cannot reach the hub: {err}") from None
        raise
    items = listed.get("items") if isinstance(listed, dict) else None
    if not isinstance(items, list):
        raise ClusterDiscoveryError("the hub's answer to the ManagedCluster list has no items")
    return [item for item in items if isinstance(item, dict) and "name" in item.get("metadata", {})]


def names_in(text: str) -> set[str]:
    """The cluster names of a discovered file's text (for the added/removed summary)."""
    import yaml

    names = set()
    for document in yaml.safe_load_all(text):
        if isinstance(document, dict):
            name = (document.get("metadata") or {}).get("name")
            if isinstance(name, str):
                names.add(name)
    return names
