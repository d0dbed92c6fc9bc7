"""Plan → the files of ``rendered/``: path → YAML text, sorted by path.

Pure. Layout (one object per file, a ``kustomization.yaml`` in every folder):

- ``crds/<plural>.<group>.yaml``             the two CRDs
- ``hub/dynamicscorers/<name>.yaml``         one DynamicScorer per scorer, canonical form
- ``hub/dynamicscoringconfig.yaml``          the DynamicScoringConfig (masks), when there is one
- ``hub/addon/…``                            the agent's addon (:mod:`dsf_compile.render.addon`)
- ``clusters/<cluster>/manifestwork.yaml``   the ManifestWork carrying the summary ConfigMap
- ``clusters/<cluster>/…``                   the cluster's ManagedClusterAddOn (and overrides)
- ``hub/placements/<namespace>/…``           the objects of ``placements/`` (:mod:`dsf_compile.render.hub_placements`)
- ``fleet/``, ``bootstrap/``                 GitOps wiring (:mod:`dsf_compile.render.gitops`)
- ``shards/<k>/<cluster>/…``                 instead of ``clusters/``, past ``render.shardBytes``
  (:mod:`dsf_compile.render.shards`)
"""

from __future__ import annotations

import json
from typing import Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.errors import InputError
from dsf_compile.inputs.names import check_settings_names, scorer_path
from dsf_compile.inputs.shard_limits import MAX_SHARDS, shard_digits
from dsf_compile.render.addon import render_addon
from dsf_compile.render.cluster_objects import cluster_objects
from dsf_compile.render.crds import render_crds
from dsf_compile.render.emit import (
    ClusterTemplate,
    block_indent,
    encode_summaries,
    encode_summary,
    literal_block,
)
from dsf_compile.render.gitops import (
    WAVE_CLUSTER_CONFIG,
    WAVE_HUB,
    gitops_annotations,
    gitops_metadata,
    render_bootstrap,
    render_kustomizations,
)
from dsf_compile.render.hub_placements import render_placements
from dsf_compile.render.labels import MANAGED_BY
from dsf_compile.render.shards import cluster_bytes, shard_count, split_clusters
from dsf_compile.resolve.summaries import Plan
from dsf_contract.fields import API_GROUP, API_VERSION
from dsf_contract.summary import CONFIG_MAP_KEY, CONFIG_MAP_NAME, CONFIG_NAME, Summary

MANIFESTWORK_NAME = "dynamic-scoring-config-manifestwork"
MANIFESTWORK_API_VERSION = "work.open-cluster-management.io/v1"
MAX_MANIFEST_BYTES = 500 * 1024
HEALTH_ANNOTATION = f"{API_GROUP}/health"
CONFIG_HASH_ANNOTATION = f"{API_GROUP}/config-hash"


def render_manifests(plan: Plan) -> dict[str, str]:
    """Every file of ``rendered/`` (kustomizations and bootstrap included), sorted by path."""
    files: dict[str, str] = {}
    files.update(render_crds())
    files.update(_render_hub(plan))
    files.update(render_cluster_works(plan))
    files.update(render_addon(plan))
    files.update(render_placements(plan.inputs))
    files, sharding = split_clusters(files, _shard_count(plan, files))
    files.update(render_kustomizations(files, sharding))
    files.update(render_bootstrap(plan.inputs.settings, sharding))
    return dict(sorted(files.items()))


def _shard_count(plan: Plan, files: dict[str, str]) -> int:
    """``render.shards`` when pinned, else 1: the byte budget never chooses the count on
    its own (:mod:`dsf_compile.render.reshard` refuses a fleet past it, unpinned); a budget
    that would need more than MAX_SHARDS is refused here."""
    inputs = plan.inputs
    settings = inputs.settings.render
    count = settings.shards
    if count is None:
        needed = shard_count(cluster_bytes(files), settings.shardBytes)
        if needed > MAX_SHARDS:
            raise InputError(
                [
                    inputs.settings_problem(
                        ("render", "shardBytes"),
                        f"the per-cluster objects ({cluster_bytes(files):,} bytes) would need "
                        f"{needed:,} shards of this budget, more than the {MAX_SHARDS:,} "
                        "render makes: raise the budget",
                    )
                ]
            )
        return 1
    digits = shard_digits(count)
    if digits > 2:  # validate checked the shards' names with two digits
        problems = check_settings_names(
            inputs.settings, inputs.settings_document, shard_digits=digits
        )
        if problems:
            raise InputError(problems)
    return count


# ------------------------------------------------------------------------- hub


# Our own kinds: their CRDs are applied by the same sync.
_CR_ANNOTATIONS = gitops_annotations(WAVE_HUB, crd_in_same_sync=True)


def _render_hub(plan: Plan) -> dict[str, str]:
    inputs = plan.inputs
    namespace = inputs.settings.hubNamespace
    files = {}
    for located in inputs.scorers:
        scorer = located.model
        name = scorer.metadata.name
        annotations = dict(scorer.metadata.annotations or {})
        annotations[HEALTH_ANNOTATION] = plan.health.get(name, "Inactive")
        annotations.update(_CR_ANNOTATIONS)
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
        files[scorer_path(name)] = dump_yaml(obj)
    if inputs.config is not None:
        config = inputs.config.model
        metadata = {"name": CONFIG_NAME, "namespace": namespace}
        if config.metadata.labels:
            metadata["labels"] = dict(sorted(config.metadata.labels.items()))
        metadata["annotations"] = dict(
            sorted({**(config.metadata.annotations or {}), **_CR_ANNOTATIONS}.items())
        )
        obj = {
            "apiVersion": API_VERSION,
            "kind": "DynamicScoringConfig",
            "metadata": metadata,
            "spec": config.spec.model_dump(mode="json", exclude_none=True),
        }
        files["hub/dynamicscoringconfig.yaml"] = dump_yaml(obj)
    return files


# -------------------------------------------------------------------- clusters

_PLACEHOLDER = "DSF_SUMMARIES_PLACEHOLDER"


def _manifestwork_skeleton(cluster: str, agent_namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": MANIFESTWORK_API_VERSION,
        "kind": "ManifestWork",
        "metadata": gitops_metadata(MANIFESTWORK_NAME, WAVE_CLUSTER_CONFIG, namespace=cluster),
        "spec": {
            "workload": {
                "manifests": [
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": CONFIG_MAP_NAME,
                            "namespace": agent_namespace,
                            "labels": dict(MANAGED_BY),
                        },
                        "data": {CONFIG_MAP_KEY: _PLACEHOLDER},
                    }
                ]
            }
        },
    }


def render_cluster_works(plan: Plan) -> dict[str, str]:
    """One ManifestWork per cluster; each scorer's JSON block is encoded once for all clusters."""
    agent_namespace = plan.inputs.settings.agentNamespace
    template = ClusterTemplate(lambda name: _manifestwork_skeleton(name, agent_namespace))
    # The summaries are a literal block under the placeholder's key; its lines sit one
    # indentation step deeper than that key.
    indent = block_indent(template.text, _PLACEHOLDER)
    json_blocks = {name: encode_summary(r.summary) for name, r in plan.resolved.items()}
    blocks = {name: literal_block(text, indent) for name, text in json_blocks.items()}
    # The hub's webhook limits the manifests' JSON size; the summaries string dominates it.
    escaped = {name: len(json.dumps(text)) - 2 for name, text in json_blocks.items()}
    # The ConfigMap is the same on every cluster but for its summaries string.
    configmap = _manifestwork_skeleton("", agent_namespace)["spec"]["workload"]["manifests"][0]
    base_size = len(json.dumps(configmap, separators=(",", ":"))) - len(_PLACEHOLDER)
    # The manifests list is the skeleton's last field: more manifests are appended as text.
    item_indent = " " * (indent - 6)
    files = {}
    problems = []
    located_clusters = {c.model.metadata.name: c for c in plan.inputs.clusters}
    for cluster in plan.clusters:
        body = "|-\n" + encode_summaries([blocks[n] for n in cluster.scorers], " " * indent)
        summaries = 3 + sum(escaped[n] + 3 for n in cluster.scorers) if cluster.scorers else 2
        size = base_size + summaries
        extra = cluster_objects(plan, cluster)
        if extra:
            size += sum(len(json.dumps(o, separators=(",", ":"))) + 1 for o in extra)
            body += "\n" + "".join(
                item_indent + line if line else line
                for line in dump_yaml(extra).splitlines(keepends=True)
            ).rstrip("\n")
        if size > MAX_MANIFEST_BYTES:
            located = located_clusters[cluster.name]
            problems.append(
                located.problem(
                    ("metadata", "name"),
                    f"the ManifestWork for this cluster would be {size // 1024} KiB, over OCM's "
                    f"{MAX_MANIFEST_BYTES // 1024} KiB limit: mask some scorers off it",
                )
            )
            continue
        files[f"clusters/{cluster.name}/manifestwork.yaml"] = template.render(cluster.name).replace(
            _PLACEHOLDER, body, 1
        )
    if problems:
        raise InputError(problems)
    return files


def summaries_of(plan: Plan, cluster: str) -> list[Summary]:
    """The summary list of one cluster (for tests and tools)."""
    for item in plan.clusters:
        if item.name == cluster:
            return [plan.resolved[n].summary for n in item.scorers]
    raise KeyError(cluster)
