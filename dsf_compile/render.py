"""Plan → the files of ``rendered/``: path → YAML text, sorted by path.

Pure. Layout (one object per file, a ``kustomization.yaml`` in every folder):

- ``crds/<plural>.<group>.yaml``             the two CRDs
- ``hub/dynamicscorers/<name>.yaml``         one DynamicScorer per scorer, canonical form
- ``hub/dynamicscoringconfig.yaml``          the DynamicScoringConfig (masks), when there is one
- ``clusters/<cluster>/manifestwork.yaml``   the ManifestWork carrying the summary ConfigMap
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Iterable
from typing import Any

from .crds import render_crds
from .emit import dump_yaml, encode_summary, literal_block
from .errors import InputError
from .models import API_GROUP, API_VERSION, CONFIG_NAME
from .resolve import Plan

MANIFESTWORK_NAME = "dynamic-scoring-config-manifestwork"
CONFIGMAP_NAME = "dynamic-scoring-config"
MAX_MANIFEST_BYTES = 500 * 1024
HEALTH_ANNOTATION = f"{API_GROUP}/health"
CONFIG_HASH_ANNOTATION = f"{API_GROUP}/config-hash"
MANAGED_BY = {"app.kubernetes.io/managed-by": "dsf-compile", "app.kubernetes.io/part-of": "dynamic-scoring-framework"}

#: Extra renderers (path → text) that later stages plug in, e.g. the agent addon objects.
Extension = Callable[[Plan], dict[str, str]]
EXTENSIONS: list[Extension] = []


def render_manifests(plan: Plan) -> dict[str, str]:
    """Every file of ``rendered/`` (kustomizations included), sorted by path."""
    files: dict[str, str] = {}
    files.update(render_crds())
    files.update(_render_hub(plan))
    files.update(render_cluster_works(plan))
    for extension in EXTENSIONS:
        files.update(extension(plan))
    files.update(render_kustomizations(files))
    return dict(sorted(files.items()))


# ------------------------------------------------------------------------- hub


def _render_hub(plan: Plan) -> dict[str, str]:
    inputs = plan.inputs
    namespace = inputs.settings.hubNamespace
    files = {}
    for located in inputs.scorers:
        scorer = located.model
        name = scorer.metadata.name
        annotations = dict(scorer.metadata.annotations or {})
        annotations[HEALTH_ANNOTATION] = plan.health.get(name, "Inactive")
        if name in plan.resolved:
            annotations[CONFIG_HASH_ANNOTATION] = plan.resolved[name].config_hash
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        if scorer.metadata.labels:
            metadata["labels"] = dict(sorted(scorer.metadata.labels.items()))
        metadata["annotations"] = dict(sorted(annotations.items()))
        obj = {
            "apiVersion": API_VERSION,
            "kind": "DynamicScorer",
            "metadata": metadata,
            "spec": scorer.spec.model_dump(mode="json", exclude_none=True),
        }
        files[f"hub/dynamicscorers/{name}.yaml"] = dump_yaml(obj)
    if inputs.config is not None:
        config = inputs.config.model
        metadata = {"name": CONFIG_NAME, "namespace": namespace}
        if config.metadata.labels:
            metadata["labels"] = dict(sorted(config.metadata.labels.items()))
        if config.metadata.annotations:
            metadata["annotations"] = dict(sorted(config.metadata.annotations.items()))
        obj = {
            "apiVersion": API_VERSION,
            "kind": "DynamicScoringConfig",
            "metadata": metadata,
            "spec": config.spec.model_dump(mode="json", exclude_none=True),
        }
        files["hub/dynamicscoringconfig.yaml"] = dump_yaml(obj)
    return files


# -------------------------------------------------------------------- clusters

# The summaries block sits at this depth inside the ManifestWork below.
_SUMMARIES_INDENT = 10
_PLACEHOLDER = "DSF_SUMMARIES_PLACEHOLDER"


def _manifestwork_skeleton(cluster: str, agent_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "work.open-cluster-management.io/v1",
        "kind": "ManifestWork",
        "metadata": {"name": MANIFESTWORK_NAME, "namespace": cluster, "labels": dict(MANAGED_BY)},
        "spec": {
            "workload": {
                "manifests": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": CONFIGMAP_NAME, "namespace": agent_namespace, "labels": dict(MANAGED_BY)},
                        "data": {"summaries": _PLACEHOLDER},
                    }
                ]
            }
        },
    }


def render_cluster_works(plan: Plan) -> dict[str, str]:
    """One ManifestWork per cluster; each scorer's JSON block is encoded once for all clusters."""
    agent_namespace = plan.inputs.settings.agentNamespace
    json_blocks = {name: encode_summary(r.summary) for name, r in plan.resolved.items()}
    blocks = {name: literal_block(text, _SUMMARIES_INDENT) for name, text in json_blocks.items()}
    # The hub's webhook limits the manifests' JSON size; the summaries string dominates it.
    escaped = {name: len(json.dumps(text)) - 2 for name, text in json_blocks.items()}
    pad = " " * _SUMMARIES_INDENT
    files = {}
    problems = []
    for cluster in plan.clusters:
        skeleton = dump_yaml(_manifestwork_skeleton(cluster.name, agent_namespace))
        if cluster.scorers:
            body = f"|-\n{pad}[\n" + ",\n".join(blocks[n] for n in cluster.scorers) + f"\n{pad}]"
        else:
            body = f"|-\n{pad}[]"
        configmap = _manifestwork_skeleton(cluster.name, agent_namespace)["spec"]["workload"]["manifests"][0]
        size = len(json.dumps(configmap, separators=(",", ":"))) - len(_PLACEHOLDER)
        size += 6 + sum(escaped[n] + 3 for n in cluster.scorers) if cluster.scorers else 2
        if size > MAX_MANIFEST_BYTES:
            located = next(c for c in plan.inputs.clusters if c.model.metadata.name == cluster.name)
            problems.append(
                located.problem(
                    ("metadata", "name"),
                    f"the ManifestWork for this cluster would be about {size // 1024} KiB, over OCM's "
                    f"{MAX_MANIFEST_BYTES // 1024} KiB limit: mask some scorers off it",
                )
            )
            continue
        files[f"clusters/{cluster.name}/manifestwork.yaml"] = skeleton.replace(_PLACEHOLDER, body, 1)
    if problems:
        raise InputError(problems)
    return files


def summaries_of(plan: Plan, cluster: str) -> list[dict[str, str | int]]:
    """The summary list of one cluster (for tests and tools)."""
    for item in plan.clusters:
        if item.name == cluster:
            return [plan.resolved[n].summary for n in item.scorers]
    raise KeyError(cluster)


# --------------------------------------------------------------- kustomization


def render_kustomizations(files: Iterable[str]) -> dict[str, str]:
    """A ``kustomization.yaml`` in every folder listing its files and sub-folders."""
    entries: dict[str, set[str]] = {}
    for path in files:
        folder, name = posixpath.split(path)
        if folder.startswith("bootstrap") or name == "kustomization.yaml":
            continue
        entries.setdefault(folder, set()).add(name)
        while folder:
            parent, child = posixpath.split(folder)
            entries.setdefault(parent, set()).add(child)
            folder = parent
    out = {}
    for folder, names in entries.items():
        obj = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(names),
        }
        out[posixpath.join(folder, "kustomization.yaml")] = dump_yaml(obj)
    return out
