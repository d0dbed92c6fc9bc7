"""``agent.overrides``: which clusters an override selects, and the config it gives them.

Pure. A cluster that any override selects gets an AddOnDeploymentConfig in its namespace
on the hub (``clusters/<c>/addondeploymentconfig.yaml``) that its ManagedClusterAddOn
names: node placement, proxy, image mirror, resources and the template's own variables.
The CA bundle itself travels in the cluster's ManifestWork (:mod:`cluster_objects`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dsf_compile.inputs.agent_settings import AgentOverride, ProxySettings, Resources
from dsf_compile.inputs.selectors import selects_cluster
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.addon_hub import cluster_addon_object
from dsf_compile.render.agent_deployment import resources_spec
from dsf_compile.render.agent_names import AGENT_CONTAINER, AGENT_NAME, CA_FILE
from dsf_compile.render.gitops import WAVE_CLUSTER_CONFIG
from dsf_compile.render.template_variables import AGGREGATE_VARIABLE, CA_FILE_VARIABLE
from dsf_compile.resolve.summaries import ClusterPlan
from dsf_contract.agent_cli import Aggregation


def cluster_overrides(settings: Settings, cluster: ClusterPlan) -> list[AgentOverride]:
    """The agent overrides that select ``cluster``, in order (name glob and label selector:
    both must)."""
    return [o for o in settings.agent.overrides if selects_cluster(o, cluster.name, cluster.labels)]


def override_aggregation(overrides: Sequence[AgentOverride]) -> dict[str, Aggregation]:
    """The fold per score name ``overrides`` set (the overrides of one cluster, in order):
    merged key by key, later ones winning, over ``agent.aggregate``."""
    merged: dict[str, Aggregation] = {}
    for override in overrides:
        merged.update(override.aggregate or {})
    return merged


def _merge_resources(base: dict[str, Any], extra: Resources | None) -> dict[str, Any]:
    merged = {part: dict(values) for part, values in base.items()}
    for part, values in resources_spec(extra or Resources()).items():
        merged.setdefault(part, {}).update(values)
    return {part: dict(sorted(values.items())) for part, values in sorted(merged.items()) if values}


@dataclass
class _Merged:
    """What a cluster's matching overrides set, later ones winning."""

    image: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    resources: dict[str, Any] | None = None
    proxy: dict[str, str] = field(default_factory=dict)
    aggregate: dict[str, str] = field(default_factory=dict)
    ca_bundle: bool = False


def _merged(settings: Settings, overrides: list[AgentOverride]) -> _Merged:
    merged = _Merged(aggregate=dict(override_aggregation(overrides)))
    for override in overrides:
        merged.ca_bundle = merged.ca_bundle or override.caBundle is not None
        merged.image = override.image or merged.image
        if override.nodeSelector is not None:
            merged.node_selector = dict(sorted(override.nodeSelector.items()))
        if override.tolerations is not None:
            merged.tolerations = [t.model_dump(exclude_none=True) for t in override.tolerations]
        if override.resources is not None:
            merged.resources = _merge_resources(
                merged.resources or resources_spec(settings.agent.resources), override.resources
            )
        merged.proxy.update((override.proxy or ProxySettings()).model_dump(exclude_none=True))
    return merged


def deployment_config(
    settings: Settings, cluster: ClusterPlan, overrides: list[AgentOverride]
) -> dict[str, Any]:
    """The AddOnDeploymentConfig of one cluster: its matching overrides, later ones winning.

    Each override replaces the image, node selector and tolerations it sets; resources and
    proxy variables are merged key by key over the defaults and the earlier overrides.
    """
    merged = _merged(settings, overrides)
    spec: dict[str, Any] = {
        # Without it OCM moves the agent to open-cluster-management-agent-addon, away from
        # the ConfigMap the ManifestWork writes into the agent namespace.
        "agentInstallNamespace": settings.agentNamespace,
        **_node_placement(merged),
    }
    if merged.proxy:
        spec["proxyConfig"] = dict(sorted(merged.proxy.items()))
    if merged.image is not None and merged.image != settings.agent.image:
        # OCM rewrites images by prefix; the whole default image as the source swaps it exactly.
        spec["registries"] = [{"source": settings.agent.image, "mirror": merged.image}]
    variables = _variables(settings, merged)
    if variables:
        spec["customizedVariables"] = variables
    if merged.resources is not None:
        spec["resourceRequirements"] = [
            {
                "containerID": f"deployments:{AGENT_NAME}:{AGENT_CONTAINER}",
                "resources": merged.resources,
            }
        ]
    return cluster_addon_object(
        "AddOnDeploymentConfig", settings, cluster, WAVE_CLUSTER_CONFIG, spec
    )


def _node_placement(merged: _Merged) -> dict[str, Any]:
    placement: dict[str, Any] = {}
    if merged.node_selector is not None:
        placement["nodeSelector"] = merged.node_selector
    if merged.tolerations is not None:
        placement["tolerations"] = merged.tolerations
    return {"nodePlacement": placement} if placement else {}


def _variables(settings: Settings, merged: _Merged) -> list[dict[str, str]]:
    variables = []
    if merged.aggregate:
        value = ",".join(f"{name}={how}" for name, how in sorted(merged.aggregate.items()))
        variables.append({"name": AGGREGATE_VARIABLE, "value": value})
    if merged.ca_bundle and settings.agent.caBundle is None:
        variables.append({"name": CA_FILE_VARIABLE, "value": CA_FILE})
    return variables
