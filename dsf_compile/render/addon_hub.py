"""The agent's addon on the hub: what OCM's addon manager needs to install and trust it.

Pure. Cluster-scoped on the hub:

- the ClusterManagementAddOn: its default config is the AddOnTemplate, and it accepts
  per-cluster AddOnDeploymentConfigs
- the hub ClusterRole the agent's ``CurrentCluster`` permissions reference (its
  AddOnPlacementScores), and its binding to the addon manager, so that it may grant it

In the hub namespace, with ``addon.installStrategy: Placements``: the install Placement,
its ManagedClusterSetBindings and the default AddOnDeploymentConfig. In each cluster's
namespace: the ManagedClusterAddOn that installs the agent there.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.inputs.names import install_placement_name
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.gitops import WAVE_CLUSTER_INSTALL, WAVE_HUB, gitops_metadata
from dsf_compile.resolve.summaries import ClusterPlan
from dsf_contract.scores import OCM_CLUSTER_GROUP, SCORE_PLURAL

#: OCM's addon framework: the addon's objects on the hub, and their annotations.
ADDON_GROUP = "addon.open-cluster-management.io"
ADDON_API_VERSION = f"{ADDON_GROUP}/v1alpha1"
RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API_VERSION = f"{RBAC_GROUP}/v1"
PLACEMENT_API_VERSION = f"{OCM_CLUSTER_GROUP}/v1beta1"
CLUSTER_SET_BINDING_API_VERSION = f"{OCM_CLUSTER_GROUP}/v1beta2"
#: The addon manager of an OCM hub (``ClusterManager``'s default install).
ADDON_MANAGER_SERVICE_ACCOUNT = "addon-manager-controller-sa"
ADDON_MANAGER_NAMESPACE = "open-cluster-management-hub"


def hub_cluster_role_name(settings: Settings) -> str:
    """The hub ClusterRole the agent's ``CurrentCluster`` permissions reference."""
    return f"open-cluster-management:{settings.addonName}:agent"


def install_placement(settings: Settings) -> dict[str, Any]:
    """The Placement that selects where the addon manager installs the agent (Placements)."""
    placement = settings.addon.placement
    spec: dict[str, Any] = {"clusterSets": list(placement.clusterSets)}
    if placement.labelSelector is not None:
        spec["predicates"] = [
            {
                "requiredClusterSelector": {
                    "labelSelector": placement.labelSelector.model_dump(exclude_none=True)
                }
            }
        ]
    return {
        "apiVersion": PLACEMENT_API_VERSION,
        "kind": "Placement",
        "metadata": gitops_metadata(
            install_placement_name(settings.addonName), WAVE_HUB, namespace=settings.hubNamespace
        ),
        "spec": spec,
    }


def cluster_set_binding(settings: Settings, cluster_set: str) -> dict[str, Any]:
    """Lets Placements in the hub namespace select clusters of ``cluster_set``."""
    return {
        "apiVersion": CLUSTER_SET_BINDING_API_VERSION,
        "kind": "ManagedClusterSetBinding",
        "metadata": gitops_metadata(cluster_set, WAVE_HUB, namespace=settings.hubNamespace),
        "spec": {"clusterSet": cluster_set},
    }


def default_deployment_config(settings: Settings) -> dict[str, Any]:
    """The AddOnDeploymentConfig of every cluster without its own (Placements only).

    The addon manager creates those clusters' ManagedClusterAddOns itself, without an
    install namespace; this default keeps the agent in ``agentNamespace``, beside the
    ConfigMap the ManifestWork writes.
    """
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "AddOnDeploymentConfig",
        "metadata": gitops_metadata(settings.addonName, WAVE_HUB, namespace=settings.hubNamespace),
        "spec": {"agentInstallNamespace": settings.agentNamespace},
    }


def _install_strategy(settings: Settings) -> dict[str, Any]:
    if settings.addon.installStrategy == "Manual":
        # Manual: the ManagedClusterAddOns are rendered per inventory cluster.
        return {"type": "Manual"}
    # Placements: the addon manager installs the agent on every cluster the Placement
    # selects, as soon as it joins, before the inventory in Git knows it.
    return {
        "type": "Placements",
        "placements": [
            {
                "name": install_placement(settings)["metadata"]["name"],
                "namespace": settings.hubNamespace,
            }
        ],
    }


def cluster_management_addon(settings: Settings) -> dict[str, Any]:
    """The ClusterManagementAddOn: a template addon, installed where a ManagedClusterAddOn
    or (``addon.installStrategy: Placements``) the install Placement asks."""
    deployment_configs: dict[str, Any] = {
        "group": ADDON_GROUP,
        "resource": "addondeploymentconfigs",
    }
    if settings.addon.installStrategy == "Placements":
        deployment_configs["defaultConfig"] = {
            "name": settings.addonName,
            "namespace": settings.hubNamespace,
        }
    metadata = gitops_metadata(settings.addonName, WAVE_HUB)
    metadata["annotations"][f"{ADDON_GROUP}/lifecycle"] = "addon-manager"
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "ClusterManagementAddOn",
        "metadata": metadata,
        "spec": {
            "addOnMeta": {
                "displayName": "Dynamic Scoring Framework",
                "description": "dsf-agent: scores every managed cluster and publishes AddOnPlacementScores.",
            },
            "installStrategy": _install_strategy(settings),
            "supportedConfigs": [
                deployment_configs,
                {
                    "group": ADDON_GROUP,
                    "resource": "addontemplates",
                    "defaultConfig": {"name": settings.addonName},
                },
            ],
        },
    }


def hub_cluster_role(settings: Settings) -> dict[str, Any]:
    """What the agent may do in its own cluster namespace on the hub, and nothing more."""
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": gitops_metadata(hub_cluster_role_name(settings), WAVE_HUB),
        # Exactly the verbs the agent uses (a test runs it against a hub enforcing this
        # role): it reads its object (the resourceVersion and condition after a start),
        # creates it when missing, and replaces its status; it never lists, watches,
        # patches, or writes anything but the status.
        "rules": [
            {
                "apiGroups": [OCM_CLUSTER_GROUP],
                "resources": [SCORE_PLURAL],
                "verbs": ["get", "create"],
            },
            {
                "apiGroups": [OCM_CLUSTER_GROUP],
                "resources": [f"{SCORE_PLURAL}/status"],
                "verbs": ["update"],
            },
        ],
    }


def addon_manager_binding(settings: Settings) -> dict[str, Any]:
    """Grants the hub ClusterRole to the addon manager.

    The addon manager creates, in each cluster namespace, the RoleBinding that gives the
    agent the ClusterRole; Kubernetes lets it bind only permissions it holds itself (or
    ``bind``, which would let it grant this role anywhere). OCM's addon template guide asks
    for exactly this ClusterRoleBinding.
    """
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": gitops_metadata(
            f"open-cluster-management:{settings.addonName}:addon-manager", WAVE_HUB
        ),
        "roleRef": {
            "apiGroup": RBAC_GROUP,
            "kind": "ClusterRole",
            "name": hub_cluster_role_name(settings),
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": ADDON_MANAGER_SERVICE_ACCOUNT,
                "namespace": ADDON_MANAGER_NAMESPACE,
            }
        ],
    }


def managed_cluster_addon(
    settings: Settings, cluster: ClusterPlan, *, configured: bool
) -> dict[str, Any]:
    """Installs the agent on one cluster (with its AddOnDeploymentConfig when ``configured``)."""
    spec: dict[str, Any] = {"installNamespace": settings.agentNamespace}
    if configured:
        spec["configs"] = [
            {
                "group": ADDON_GROUP,
                "resource": "addondeploymentconfigs",
                "name": settings.addonName,
                "namespace": cluster.name,
            }
        ]
    return cluster_addon_object(
        "ManagedClusterAddOn", settings, cluster, WAVE_CLUSTER_INSTALL, spec
    )


def cluster_addon_object(
    kind: str, settings: Settings, cluster: ClusterPlan, wave: str, spec: dict[str, Any]
) -> dict[str, Any]:
    """An addon object in ``cluster``'s namespace on the hub, named after the addon."""
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": kind,
        "metadata": gitops_metadata(settings.addonName, wave, namespace=cluster.name),
        "spec": spec,
    }
