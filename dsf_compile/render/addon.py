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

The only template variables are :data:`TEMPLATE_VARIABLES`; anything else between double
braces is refused (OCM would silently replace it with an empty string).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from dsf_compile.errors import InputError
from dsf_compile.inputs.names import install_placement_name
from dsf_compile.inputs.selectors import selects_cluster
from dsf_compile.inputs.settings import (
    TEMPLATE_VARIABLE_RE,
    AgentOverride,
    ProxySettings,
    ResourceList,
    Resources,
    Settings,
)
from dsf_compile.render.emit import ClusterTemplate
from dsf_compile.render.gitops import (
    WAVE_CLUSTER_CONFIG,
    WAVE_CLUSTER_INSTALL,
    WAVE_HUB,
    gitops_annotations,
)
from dsf_compile.render.labels import MANAGED_BY, PART_OF
from dsf_compile.render.observability import dashboard_configmap, prometheus_rule
from dsf_compile.resolve.summaries import ClusterPlan, Plan
from dsf_compile.yaml_text import dump_yaml
from dsf_contract import agent_cli
from dsf_contract.bounded_yaml import Pointer, format_pointer
from dsf_contract.problem import Problem
from dsf_contract.scores import OCM_CLUSTER_GROUP, SCORE_PLURAL
from dsf_contract.summary import CONFIG_MAP_NAME

ADDON_GROUP = "addon.open-cluster-management.io"
ADDON_API_VERSION = f"{ADDON_GROUP}/v1alpha1"
RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"

#: The variables OCM fills in; ``CLUSTER_NAME`` cannot be overridden by any config.
OCM_VARIABLES = ("CLUSTER_NAME", "HUB_KUBECONFIG", "INSTALL_NAMESPACE")
#: Our own variables, set per cluster by an AddOnDeploymentConfig's ``customizedVariables``.
#: Where no config sets them OCM writes an empty string, which the template is built to
#: read as "nothing for this cluster": each is used only where empty is harmless.
AGGREGATE_VARIABLE = "DSF_AGGREGATE"
CA_FILE_VARIABLE = "DSF_CA_FILE"
TEMPLATE_VARIABLES = (*OCM_VARIABLES, AGGREGATE_VARIABLE, CA_FILE_VARIABLE)

AGENT_NAME = "dynamic-scoring-agent"
AGENT_CONTAINER = "agent"
METRICS_PORT_NAME = "metrics"
#: The metrics Service; the Prometheus Operator names the scrape ``job`` after it.
METRICS_SERVICE = f"{AGENT_NAME}-metrics"
#: The addon manager of an OCM hub (``ClusterManager``'s default install).
ADDON_MANAGER_SERVICE_ACCOUNT = "addon-manager-controller-sa"
ADDON_MANAGER_NAMESPACE = "open-cluster-management-hub"
#: Manifests with this annotation stay on the managed cluster when the addon is removed.
DELETION_ORPHAN = f"{ADDON_GROUP}/deletion-orphan"

#: The CA bundle (``agent.caBundle``): a ConfigMap carried by each cluster's ManifestWork
#: (its content may differ per cluster), mounted into the agent, named by ``SSL_CERT_FILE``.
CA_CONFIG_MAP = "dynamic-scoring-agent-ca"
CA_KEY = "ca.crt"
CA_DIR = "/etc/dsf/ca"
CA_FILE = f"{CA_DIR}/{CA_KEY}"

_AGENT_SELECTOR = {"app.kubernetes.io/name": AGENT_NAME}
_AGENT_LABELS = {**_AGENT_SELECTOR, "app.kubernetes.io/component": "agent", **PART_OF}


def hub_cluster_role_name(settings: Settings) -> str:
    """The hub ClusterRole the agent's ``CurrentCluster`` permissions reference."""
    return f"open-cluster-management:{settings.addonName}:agent"


def secret_names(plan: Plan) -> tuple[str, ...]:
    """Every Secret a resolved scorer's ``auth`` names, sorted: all the agent may read."""
    names: set[str] = set()
    for resolved in plan.resolved.values():
        summary = resolved.summary
        names.update(
            n for n in (summary.sourceEndpointAuthName, summary.scoringEndpointAuthName) if n
        )
    return tuple(sorted(names))


# ------------------------------------------------------------------ agent side


def _resources(resources: Resources) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for part in ("requests", "limits"):
        values: ResourceList | None = getattr(resources, part)
        if values is not None:
            items = values.model_dump(exclude_none=True)
            if items:
                out[part] = items
    return out


def _agent_role(settings: Settings, secrets: tuple[str, ...]) -> dict[str, Any]:
    # resourceNames everywhere: an empty list would mean "every object", so the Secret
    # rule is left out entirely when no scorer names a Secret. Exactly the verbs the agent
    # uses (a test runs it against an API enforcing this Role): it lists and watches its
    # ConfigMap with the field selector metadata.name=<name>, which the API server
    # authorizes against resourceNames, and never gets it; it gets each Secret.
    rules: list[dict[str, Any]] = [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [CONFIG_MAP_NAME],
            "verbs": ["list", "watch"],
        }
    ]
    if secrets:
        rules.append(
            {
                "apiGroups": [""],
                "resources": ["secrets"],
                "resourceNames": list(secrets),
                "verbs": ["get"],
            }
        )
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": {
            "name": AGENT_NAME,
            "namespace": settings.agentNamespace,
            "labels": dict(_AGENT_LABELS),
        },
        "rules": rules,
    }


def _variable(name: str) -> str:
    return "{{" + name + "}}"


def _aggregate_value(settings: Settings) -> str | None:
    """``DSF_AGGREGATE``: the fleet's aggregations, then the cluster's (later ones win)."""
    agent = settings.agent
    items = [f"{name}={how}" for name, how in agent.aggregate.items()]
    if any(o.aggregate for o in agent.overrides):
        items.append(_variable(AGGREGATE_VARIABLE))
    return ",".join(items) or None


def _agent_env(settings: Settings) -> list[dict[str, Any]]:
    agent = settings.agent
    env: list[dict[str, Any]] = [
        {
            "name": agent_cli.NAMESPACE.env,
            "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}},
        }
    ]
    aggregate = _aggregate_value(settings)
    if aggregate is not None:
        env.append({"name": agent_cli.AGGREGATE.env, "value": aggregate})
    if agent.caBundle is not None:
        env.append({"name": "SSL_CERT_FILE", "value": CA_FILE})
    elif any(o.caBundle for o in agent.overrides):
        # Only some clusters have a bundle: an empty SSL_CERT_FILE elsewhere means the
        # agent's own trust store.
        env.append({"name": "SSL_CERT_FILE", "value": _variable(CA_FILE_VARIABLE)})
    return env


def uses_ca_bundle(settings: Settings) -> bool:
    """Whether any cluster gets a CA bundle (fleet-wide or through an override)."""
    return settings.agent.caBundle is not None or any(o.caBundle for o in settings.agent.overrides)


def _agent_deployment(settings: Settings) -> dict[str, Any]:
    agent = settings.agent
    probe = {
        "httpGet": {"path": "/healthz", "port": METRICS_PORT_NAME},
        "periodSeconds": 20,
        "timeoutSeconds": 5,
    }
    container: dict[str, Any] = {
        "name": AGENT_CONTAINER,
        "image": agent.image,
        "imagePullPolicy": agent.imagePullPolicy,
        "args": [
            agent_cli.CLUSTER_NAME.arg(_variable("CLUSTER_NAME")),
            agent_cli.HUB_KUBECONFIG.arg(_variable("HUB_KUBECONFIG")),
            agent_cli.METRICS_BIND.arg(agent_cli.DEFAULT_METRICS_BIND),
            agent_cli.LOG_LEVEL.arg(agent.logLevel),
        ],
        # The agent reads its ConfigMap and Secrets in its own namespace, which is
        # agentNamespace (or whatever OCM installed it into): told by the downward API,
        # never assumed to be the default.
        "env": _agent_env(settings),
        "ports": [
            {"name": METRICS_PORT_NAME, "containerPort": agent_cli.METRICS_PORT, "protocol": "TCP"}
        ],
        "livenessProbe": {**probe, "initialDelaySeconds": 10},
        "readinessProbe": {
            "httpGet": {"path": "/readyz", "port": METRICS_PORT_NAME},
            "periodSeconds": 10,
            "timeoutSeconds": 5,
        },
        "resources": _resources(agent.resources),
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        # The root filesystem is read-only, and this /tmp is load-bearing: the Kubernetes
        # client writes the hub kubeconfig's CA (certificate-authority-data) to a temporary
        # file before it can connect to the hub.
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}],
    }
    volumes: list[dict[str, Any]] = [{"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}}]
    if uses_ca_bundle(settings):
        container["volumeMounts"].append(
            {"name": "ca-bundle", "mountPath": CA_DIR, "readOnly": True}
        )
        # optional: a cluster without a bundle has no such ConfigMap, and the pod must
        # start there too (its SSL_CERT_FILE is empty).
        volumes.append(
            {"name": "ca-bundle", "configMap": {"name": CA_CONFIG_MAP, "optional": True}}
        )
    pod_spec: dict[str, Any] = {
        "serviceAccountName": AGENT_NAME,
        "securityContext": {
            "runAsNonRoot": True,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
    }
    if agent.imagePullSecrets:
        pod_spec["imagePullSecrets"] = [{"name": name} for name in agent.imagePullSecrets]
    pod_spec["containers"] = [container]
    pod_spec["volumes"] = volumes
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": AGENT_NAME,
            "namespace": settings.agentNamespace,
            "labels": dict(_AGENT_LABELS),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(_AGENT_SELECTOR)},
            "template": {
                "metadata": {"labels": dict(_AGENT_LABELS)},
                "spec": pod_spec,
            },
        },
    }


def agent_manifests(settings: Settings, secrets: tuple[str, ...]) -> list[dict[str, Any]]:
    """The objects the addon installs on every managed cluster (``agentSpec.workload.manifests``)."""
    namespace = settings.agentNamespace
    labels = dict(_AGENT_LABELS)
    manifests: list[dict[str, Any]] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            # The users' scorer Secrets live in this namespace: removing the addon must not
            # delete them, so the namespace is orphaned rather than deleted.
            "metadata": {"name": namespace, "labels": labels, "annotations": {DELETION_ORPHAN: ""}},
        },
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": AGENT_NAME, "namespace": namespace, "labels": labels},
        },
        _agent_role(settings, secrets),
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": {"name": AGENT_NAME, "namespace": namespace, "labels": labels},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": AGENT_NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": namespace}],
        },
        _agent_deployment(settings),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": METRICS_SERVICE, "namespace": namespace, "labels": labels},
            "spec": {
                "selector": dict(_AGENT_SELECTOR),
                "ports": [
                    {
                        "name": METRICS_PORT_NAME,
                        "port": agent_cli.METRICS_PORT,
                        "targetPort": METRICS_PORT_NAME,
                        "protocol": "TCP",
                    }
                ],
            },
        },
    ]
    observability = settings.observability
    if settings.agent.serviceMonitor:
        # Only in the template (applied on the managed clusters, where the Prometheus
        # Operator runs), never on the hub, whose sync would fail without its CRD.
        manifests.append(
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "ServiceMonitor",
                "metadata": {
                    "name": AGENT_NAME,
                    "namespace": namespace,
                    "labels": {**labels, **observability.labels},
                },
                "spec": {
                    "selector": {"matchLabels": dict(_AGENT_SELECTOR)},
                    "namespaceSelector": {"matchNames": [namespace]},
                    "endpoints": [
                        {"port": METRICS_PORT_NAME, "path": "/metrics", "interval": "30s"}
                    ],
                },
            }
        )
    if observability.prometheusRule:
        manifests.append(prometheus_rule(settings, METRICS_SERVICE, labels))
    if observability.dashboard:
        manifests.append(dashboard_configmap(settings, labels))
    return manifests


# ------------------------------------------------------------------------- hub


def addon_template(settings: Settings, secrets: tuple[str, ...]) -> dict[str, Any]:
    """The AddOnTemplate: what the addon installs, and its hub registration."""
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "AddOnTemplate",
        "metadata": {
            "name": settings.addonName,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
        "spec": {
            "addonName": settings.addonName,
            "agentSpec": {"workload": {"manifests": agent_manifests(settings, secrets)}},
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


PLACEMENT_API_VERSION = f"{OCM_CLUSTER_GROUP}/v1beta1"
CLUSTER_SET_BINDING_API_VERSION = f"{OCM_CLUSTER_GROUP}/v1beta2"


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
        "metadata": {
            "name": install_placement_name(settings.addonName),
            "namespace": settings.hubNamespace,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
        "spec": spec,
    }


def cluster_set_binding(settings: Settings, cluster_set: str) -> dict[str, Any]:
    """Lets Placements in the hub namespace select clusters of ``cluster_set``."""
    return {
        "apiVersion": CLUSTER_SET_BINDING_API_VERSION,
        "kind": "ManagedClusterSetBinding",
        "metadata": {
            "name": cluster_set,
            "namespace": settings.hubNamespace,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
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
        "metadata": {
            "name": settings.addonName,
            "namespace": settings.hubNamespace,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
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
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "ClusterManagementAddOn",
        "metadata": {
            "name": settings.addonName,
            "labels": dict(MANAGED_BY),
            "annotations": {
                **gitops_annotations(WAVE_HUB),
                f"{ADDON_GROUP}/lifecycle": "addon-manager",
            },
        },
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
        "metadata": {
            "name": hub_cluster_role_name(settings),
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
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
        "metadata": {
            "name": f"open-cluster-management:{settings.addonName}:addon-manager",
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_HUB),
        },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
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


# ------------------------------------------------------- template variables


def _strings(value: Any, pointer: Pointer = ()) -> Iterator[tuple[Pointer, str]]:
    if isinstance(value, str):
        yield pointer, value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from _strings(key, (*pointer, key))
            yield from _strings(child, (*pointer, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _strings(child, (*pointer, index))


def _setting_origins(settings: Settings) -> list[tuple[str, str]]:
    """(``dsf.yaml`` field, value) of every setting string that reaches the template."""
    origins = [("agent.image", settings.agent.image)]
    for part in ("requests", "limits"):
        values = getattr(settings.agent.resources, part)
        for key, value in (values.model_dump(exclude_none=True) if values else {}).items():
            origins.append((f"agent.resources.{part}.{key}", value))
    return origins


def check_template_variables(template: dict[str, Any], settings: Settings) -> list[Problem]:
    """Every ``{{…}}`` in ``template`` that OCM does not define, named by where it came from.

    A string that came from ``dsf.yaml`` is reported at that field; anything else (a bug
    of the compiler) at the template's own field path.
    """
    origins = _setting_origins(settings)
    problems: set[Problem] = set()
    for pointer, text in _strings(template):
        for match in TEMPLATE_VARIABLE_RE.finditer(text):
            if match.group(1) in TEMPLATE_VARIABLES:
                continue
            variable = match.group(0)
            message = (
                f"{variable} would be an OCM template variable in the AddOnTemplate; only "
                + ", ".join("{{" + v + "}}" for v in TEMPLATE_VARIABLES)
                + " are allowed"
            )
            fields = [name for name, value in origins if variable in value]
            if fields:
                problems.update(Problem("dsf.yaml", 0, 0, name, message) for name in fields)
            else:
                where = f"AddOnTemplate {template['metadata']['name']}: {format_pointer(pointer)}"
                problems.add(Problem("rendered/hub/addon/addontemplate.yaml", 0, 0, where, message))
    return sorted(problems)


# ------------------------------------------------------------------ overrides


def override_selects(override: AgentOverride, cluster: ClusterPlan) -> bool:
    """Whether the override's name glob and/or label selector select ``cluster`` (both must)."""
    return selects_cluster(override, cluster.name, cluster.labels)


def _merge_resources(base: dict[str, Any], extra: Resources | None) -> dict[str, Any]:
    merged = {part: dict(values) for part, values in base.items()}
    for part, values in _resources(extra or Resources()).items():
        merged.setdefault(part, {}).update(values)
    return {part: dict(sorted(values.items())) for part, values in sorted(merged.items()) if values}


def deployment_config(
    settings: Settings, cluster: ClusterPlan, overrides: list[AgentOverride]
) -> dict[str, Any]:
    """The AddOnDeploymentConfig of one cluster: its matching overrides, later ones winning.

    Each override replaces the image, node selector and tolerations it sets; resources and
    proxy variables are merged key by key over the defaults and the earlier overrides.
    """
    image: str | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None
    resources: dict[str, Any] | None = None
    proxy: dict[str, str] = {}
    aggregate: dict[str, str] = {}
    ca_bundle = False
    for override in overrides:
        aggregate.update(override.aggregate or {})
        ca_bundle = ca_bundle or override.caBundle is not None
        image = override.image or image
        if override.nodeSelector is not None:
            node_selector = dict(sorted(override.nodeSelector.items()))
        if override.tolerations is not None:
            tolerations = [t.model_dump(exclude_none=True) for t in override.tolerations]
        if override.resources is not None:
            resources = _merge_resources(
                resources or _resources(settings.agent.resources), override.resources
            )
        proxy.update((override.proxy or ProxySettings()).model_dump(exclude_none=True))
    spec: dict[str, Any] = {
        # Without it OCM moves the agent to open-cluster-management-agent-addon, away from
        # the ConfigMap the ManifestWork writes into the agent namespace.
        "agentInstallNamespace": settings.agentNamespace,
    }
    if node_selector is not None or tolerations is not None:
        placement: dict[str, Any] = {}
        if node_selector is not None:
            placement["nodeSelector"] = node_selector
        if tolerations is not None:
            placement["tolerations"] = tolerations
        spec["nodePlacement"] = placement
    if proxy:
        spec["proxyConfig"] = dict(sorted(proxy.items()))
    if image is not None and image != settings.agent.image:
        # OCM rewrites images by prefix; the whole default image as the source swaps it exactly.
        spec["registries"] = [{"source": settings.agent.image, "mirror": image}]
    variables = []
    if aggregate:
        value = ",".join(f"{name}={how}" for name, how in sorted(aggregate.items()))
        variables.append({"name": AGGREGATE_VARIABLE, "value": value})
    if ca_bundle and settings.agent.caBundle is None:
        variables.append({"name": CA_FILE_VARIABLE, "value": CA_FILE})
    if variables:
        spec["customizedVariables"] = variables
    if resources is not None:
        spec["resourceRequirements"] = [
            {"containerID": f"deployments:{AGENT_NAME}:{AGENT_CONTAINER}", "resources": resources}
        ]
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "AddOnDeploymentConfig",
        "metadata": {
            "name": settings.addonName,
            "namespace": cluster.name,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_CLUSTER_CONFIG),
        },
        "spec": spec,
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
    return {
        "apiVersion": ADDON_API_VERSION,
        "kind": "ManagedClusterAddOn",
        "metadata": {
            "name": settings.addonName,
            "namespace": cluster.name,
            "labels": dict(MANAGED_BY),
            "annotations": gitops_annotations(WAVE_CLUSTER_INSTALL),
        },
        "spec": spec,
    }


# ---------------------------------------------------------------------- all


def render_addon(plan: Plan) -> dict[str, str]:
    """Path → YAML text of every addon object, hub and per cluster; InputError on problems."""
    settings = plan.inputs.settings
    template = addon_template(settings, secret_names(plan))
    problems = check_template_variables(template, settings)
    overrides = settings.agent.overrides
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
        matching = [override for override in overrides if override_selects(override, cluster)]
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
