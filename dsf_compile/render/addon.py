"""Plan → the agent as a template-based OCM addon (``docs/gitops.md``, "The agent addon").

Pure. Hub (cluster-scoped):

- ``hub/addon/clustermanagementaddon.yaml``  the ClusterManagementAddOn; its default config is
  the AddOnTemplate, and it accepts per-cluster AddOnDeploymentConfigs
- ``hub/addon/addontemplate.yaml``           the AddOnTemplate: the agent's objects for a managed
  cluster and its ``KubeClient`` registration with ``CurrentCluster`` hub permissions
- ``hub/addon/clusterrole.yaml``             what those hub permissions grant: AddOnPlacementScores
- ``hub/addon/clusterrolebinding.yaml``      that role for the addon manager, so that it may grant it

Per cluster ``<c>`` (namespace ``<c>`` on the hub):

- ``clusters/<c>/managedclusteraddon.yaml``      installs the agent on ``<c>``
- ``clusters/<c>/addondeploymentconfig.yaml``    the agent overrides of ``dsf.yaml`` that select ``<c>``

Each object is built where its role is: the agent's manifests in :mod:`agent_manifests`,
the hub objects in :mod:`addon_hub`, the overrides' configs in :mod:`agent_overrides`; the
template is checked by :mod:`template_variables` (nothing between double braces but the
variables OCM defines).
"""

from __future__ import annotations

from typing import Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.errors import InputError
from dsf_compile.inputs.agent_settings import ComplianceClaimSettings
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.addon_hub import (
    ADDON_API_VERSION,
    addon_manager_binding,
    cluster_management_addon,
    cluster_set_binding,
    default_deployment_config,
    hub_cluster_role,
    hub_cluster_role_name,
    install_placement,
    managed_cluster_addon,
)
from dsf_compile.render.agent_manifests import agent_manifests, secret_names
from dsf_compile.render.agent_overrides import cluster_overrides, deployment_config
from dsf_compile.render.emit import ClusterTemplate
from dsf_compile.render.gitops import WAVE_HUB, gitops_metadata
from dsf_compile.render.template_variables import check_template_variables
from dsf_compile.resolve.summaries import ClusterPlan, Plan


def compliance_claim(plan: Plan) -> ComplianceClaimSettings | None:
    """The compliance claim's settings when it is on: asked for in ``dsf.yaml``, or needed
    by a PlacementOptimization whose Placements select the claim (``requireCompliance``)."""
    claim = plan.inputs.settings.agent.complianceClaim
    required = any(o.model.spec.requireCompliance for o in plan.inputs.optimizations)
    return claim if claim.enabled or required else None


def addon_template(
    settings: Settings, secrets: tuple[str, ...], claim: ComplianceClaimSettings | None = None
) -> dict[str, Any]:
    """The AddOnTemplate: what the addon installs, and its hub registration."""
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "AddOnTemplate",
        "metadata": gitops_metadata(settings.addonName, WAVE_HUB),
        "spec": {
            "addonName": settings.addonName,
            "agentSpec": {"workload": {"manifests": agent_manifests(settings, secrets, claim)}},
            "registration": [
                {
                    "type": "KubeClient",
                    "kubeClient": {
                        "hubPermissions": [
                            {
                                "type": "CurrentCluster",
                                "currentCluster": {
                                    "clusterRoleName": hub_cluster_role_name(settings)
                                },
                            }
                        ]
                    },
                }
            ],
        },
    }


def render_addon(plan: Plan) -> dict[str, str]:
    """Path → YAML text of every addon object, hub and per cluster; InputError on problems."""
    settings = plan.inputs.settings
    template = addon_template(settings, secret_names(plan), compliance_claim(plan))
    problems = check_template_variables(template, settings)
    files = {
        "hub/addon/addontemplate.yaml": dump_yaml(template),
        "hub/addon/clustermanagementaddon.yaml": dump_yaml(cluster_management_addon(settings)),
        "hub/addon/clusterrole.yaml": dump_yaml(hub_cluster_role(settings)),
        "hub/addon/clusterrolebinding.yaml": dump_yaml(addon_manager_binding(settings)),
    }
    # Most clusters have no override: their ManagedClusterAddOns differ only by the
    # cluster name, so they are encoded once.
    plain = ClusterTemplate(
        lambda name: managed_cluster_addon(settings, ClusterPlan(name, {}, ()), configured=False)
    )
    placements = settings.addon.installStrategy == "Placements"
    if placements:
        files["hub/addon/placement.yaml"] = dump_yaml(install_placement(settings))
        files["hub/addon/addondeploymentconfig.yaml"] = dump_yaml(
            default_deployment_config(settings)
        )
        # A binding placements/ already declares in the hub namespace is rendered there
        # once; a second copy would be the same object twice.
        declared = {
            (o.model.kind, o.model.metadata.namespace, o.model.metadata.name)
            for o in plan.inputs.placement_objects
        }
        for cluster_set in sorted(set(settings.addon.placement.clusterSets)):
            key = ("ManagedClusterSetBinding", settings.hubNamespace, cluster_set)
            if key in declared:
                continue
            files[f"hub/addon/managedclustersetbinding-{cluster_set}.yaml"] = dump_yaml(
                cluster_set_binding(settings, cluster_set)
            )
    for cluster in plan.clusters:
        matching = cluster_overrides(settings, cluster)
        if matching:
            files[f"clusters/{cluster.name}/addondeploymentconfig.yaml"] = dump_yaml(
                deployment_config(settings, cluster, matching)
            )
        elif placements:
            # The addon manager creates this cluster's ManagedClusterAddOn; rendering one
            # too would make Argo CD or Flux and the manager own the same object.
            continue
        files[f"clusters/{cluster.name}/managedclusteraddon.yaml"] = (
            dump_yaml(managed_cluster_addon(settings, cluster, configured=True))
            if matching
            else plain.render(cluster.name)
        )
    if problems:
        raise InputError(problems)
    return files
