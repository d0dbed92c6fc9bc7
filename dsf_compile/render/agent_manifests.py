"""The agent's objects on every managed cluster: what the AddOnTemplate installs.

Pure. In the agent namespace: the Namespace (orphaned when the addon goes: the users'
scorer Secrets live in it), the ServiceAccount with a Role that reads exactly the
summaries ConfigMap and the Secrets the scorers name, the Deployment
(:mod:`dsf_compile.render.agent_deployment`), its metrics Service, and, when ``dsf.yaml``
asks, a ServiceMonitor and the observability pack.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.inputs.agent_settings import ComplianceClaimSettings
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.addon_hub import ADDON_GROUP, RBAC_API_VERSION, RBAC_GROUP
from dsf_compile.render.agent_deployment import agent_deployment
from dsf_compile.render.agent_names import (
    AGENT_LABELS,
    AGENT_NAME,
    AGENT_SELECTOR,
    METRICS_PORT_NAME,
    METRICS_SERVICE,
)
from dsf_compile.render.dashboard import dashboard_configmap
from dsf_compile.render.observability import MONITORING_API_VERSION, prometheus_rule
from dsf_compile.render.template_variables import (
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


def agent_manifests(
    settings: Settings,
    secrets: tuple[str, ...],
    claim: ComplianceClaimSettings | None = None,
) -> list[dict[str, Any]]:
    """The objects the addon installs on every managed cluster (``agentSpec.workload.manifests``);
    with ``claim``, the compliance claim's args and RBAC too."""
    return [
        *_identity(settings, secrets),
        *(compliance_rbac(settings, claim) if claim is not None else []),
        agent_deployment(settings, claim),
        *_metrics_objects(settings),
    ]


def _identity(settings: Settings, secrets: tuple[str, ...]) -> list[dict[str, Any]]:
    """The agent's Namespace, ServiceAccount, Role and RoleBinding."""
    namespace = settings.agentNamespace
    labels = dict(AGENT_LABELS)
    return [
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
    ]


def _metrics_objects(settings: Settings) -> list[dict[str, Any]]:
    """The metrics Service and, as ``dsf.yaml`` asks, the ServiceMonitor and observability pack."""
    namespace = settings.agentNamespace
    labels = dict(AGENT_LABELS)
    objects: list[dict[str, Any]] = [
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
        objects.append(
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
        objects.append(prometheus_rule(settings, METRICS_SERVICE, labels))
    if observability.dashboard:
        objects.append(dashboard_configmap(settings, labels))
    return objects
