"""The agent's objects on every managed cluster: what the AddOnTemplate installs.

Pure. In the agent namespace: the Namespace (orphaned when the addon goes: the users'
scorer Secrets live in it), the ServiceAccount with a Role that reads exactly the
summaries ConfigMap and the Secrets the scorers name, the Deployment, its metrics Service,
and, when ``dsf.yaml`` asks, a ServiceMonitor and the observability pack.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.inputs.agent_settings import ComplianceClaimSettings, ResourceList, Resources
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.addon_hub import ADDON_GROUP, RBAC_API_VERSION, RBAC_GROUP
from dsf_compile.render.agent_names import (
    AGENT_CONTAINER,
    AGENT_LABELS,
    AGENT_NAME,
    AGENT_SELECTOR,
    CA_CONFIG_MAP,
    CA_DIR,
    CA_FILE,
    METRICS_PORT_NAME,
    METRICS_SERVICE,
)
from dsf_compile.render.dashboard import dashboard_configmap
from dsf_compile.render.observability import MONITORING_API_VERSION, prometheus_rule
from dsf_compile.render.template_variables import (
    AGGREGATE_VARIABLE,
    CA_FILE_VARIABLE,
    variable,
)
from dsf_compile.resolve.summaries import Plan
from dsf_contract import agent_cli
from dsf_contract.compliance import CLAIM_GROUP, CLAIM_PLURAL, POLICY_GROUP, POLICY_PLURAL
from dsf_contract.summary import CONFIG_MAP_NAME

#: Manifests with this annotation stay on the managed cluster when the addon is removed.
DELETION_ORPHAN = f"{ADDON_GROUP}/deletion-orphan"


def secret_names(plan: Plan) -> tuple[str, ...]:
    """Every Secret a resolved scorer's ``auth`` names, sorted: all the agent may read."""
    names: set[str] = set()
    for resolved in plan.resolved.values():
        summary = resolved.summary
        names.update(
            n for n in (summary.sourceEndpointAuthName, summary.scoringEndpointAuthName) if n
        )
    return tuple(sorted(names))


def resources_spec(resources: Resources) -> dict[str, Any]:
    """A container's ``resources``: the requests and limits ``dsf.yaml`` sets, if any."""
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
            "labels": dict(AGENT_LABELS),
        },
        "rules": rules,
    }


def _aggregate_value(settings: Settings) -> str | None:
    """``DSF_AGGREGATE``: the fleet's aggregations, then the cluster's (later ones win)."""
    agent = settings.agent
    items = [f"{name}={how}" for name, how in agent.aggregate.items()]
    if any(o.aggregate for o in agent.overrides):
        items.append(variable(AGGREGATE_VARIABLE))
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
        env.append({"name": "SSL_CERT_FILE", "value": variable(CA_FILE_VARIABLE)})
    return env


def uses_ca_bundle(settings: Settings) -> bool:
    """Whether any cluster gets a CA bundle (fleet-wide or through an override)."""
    return settings.agent.caBundle is not None or any(o.caBundle for o in settings.agent.overrides)


def _compliance_args(claim: ComplianceClaimSettings | None) -> list[str]:
    if claim is None:
        return []
    return [
        agent_cli.COMPLIANCE_CLAIM.arg(claim.claimName),
        agent_cli.COMPLIANCE_POLL_SECONDS.arg(claim.pollSeconds),
        agent_cli.COMPLIANCE_STABLE_SECONDS.arg(claim.stableSeconds),
    ]


def compliance_rbac(settings: Settings, claim: ComplianceClaimSettings) -> list[dict[str, Any]]:
    """What the compliance claim needs (agent.md): list and watch the Policies of the
    cluster's namespace; get, update and patch the claim by name, and create it (a create
    cannot be narrowed by name, RBAC knows no name before the object exists)."""
    namespace = variable("CLUSTER_NAME")  # where OCM's policy framework puts the Policies
    name = f"{AGENT_NAME}-compliance"
    labels = dict(AGENT_LABELS)
    subjects = [
        {"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": settings.agentNamespace}
    ]
    return [
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "Role",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "rules": [
                {
                    "apiGroups": [POLICY_GROUP],
                    "resources": [POLICY_PLURAL],
                    "verbs": ["list", "watch"],
                }
            ],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": name},
            "subjects": subjects,
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels},
            "rules": [
                {
                    "apiGroups": [CLAIM_GROUP],
                    "resources": [CLAIM_PLURAL],
                    "resourceNames": [claim.claimName],
                    "verbs": ["get", "update", "patch"],
                },
                {
                    "apiGroups": [CLAIM_GROUP],
                    "resources": [CLAIM_PLURAL],
                    "verbs": ["create"],
                },
            ],
        },
        {
            "apiVersion": RBAC_API_VERSION,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels},
            "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        },
    ]


def _agent_deployment(
    settings: Settings, claim: ComplianceClaimSettings | None = None
) -> dict[str, Any]:
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
            agent_cli.CLUSTER_NAME.arg(variable("CLUSTER_NAME")),
            agent_cli.HUB_KUBECONFIG.arg(variable("HUB_KUBECONFIG")),
            agent_cli.METRICS_BIND.arg(agent_cli.DEFAULT_METRICS_BIND),
            agent_cli.LOG_LEVEL.arg(agent.logLevel),
            *_compliance_args(claim),
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
        "resources": resources_spec(agent.resources),
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
            "labels": dict(AGENT_LABELS),
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": dict(AGENT_SELECTOR)},
            "template": {
                "metadata": {"labels": dict(AGENT_LABELS)},
                "spec": pod_spec,
            },
        },
    }


def agent_manifests(
    settings: Settings,
    secrets: tuple[str, ...],
    claim: ComplianceClaimSettings | None = None,
) -> list[dict[str, Any]]:
    """The objects the addon installs on every managed cluster (``agentSpec.workload.manifests``);
    with ``claim``, the compliance claim's args and RBAC too."""
    namespace = settings.agentNamespace
    labels = dict(AGENT_LABELS)
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
                "apiGroup": RBAC_GROUP,
                "kind": "Role",
                "name": AGENT_NAME,
            },
            "subjects": [{"kind": "ServiceAccount", "name": AGENT_NAME, "namespace": namespace}],
        },
        *(compliance_rbac(settings, claim) if claim is not None else []),
        _agent_deployment(settings, claim),
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": METRICS_SERVICE, "namespace": namespace, "labels": labels},
            "spec": {
                "selector": dict(AGENT_SELECTOR),
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
                "apiVersion": MONITORING_API_VERSION,
                "kind": "ServiceMonitor",
                "metadata": {
                    "name": AGENT_NAME,
                    "namespace": namespace,
                    "labels": {**labels, **observability.labels},
                },
                "spec": {
                    "selector": {"matchLabels": dict(AGENT_SELECTOR)},
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
