"""The agent's Deployment on every managed cluster: its container, args, env and volumes.

Pure. Args and env come from :mod:`dsf_contract.agent_cli`; what varies per cluster (the
aggregations, the CA bundle) is an AddOnTemplate variable that an AddOnDeploymentConfig
fills in (:mod:`dsf_compile.render.agent_overrides`). Hardened as the restricted Pod
Security Standard asks; the root filesystem is read-only but for ``/tmp``.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.inputs.agent_settings import ComplianceClaimSettings, ResourceList, Resources
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.agent_names import (
    AGENT_CONTAINER,
    AGENT_LABELS,
    AGENT_NAME,
    AGENT_SELECTOR,
    CA_CONFIG_MAP,
    CA_DIR,
    CA_FILE,
    METRICS_PORT_NAME,
)
from dsf_compile.render.template_variables import (
    AGGREGATE_VARIABLE,
    CA_FILE_VARIABLE,
    variable,
)
from dsf_contract import agent_cli


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


def agent_deployment(
    settings: Settings, claim: ComplianceClaimSettings | None = None
) -> dict[str, Any]:
    """The agent's Deployment; with ``claim``, the compliance claim's args too."""
    agent = settings.agent
    container = _agent_container(settings, claim)
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


def _agent_container(settings: Settings, claim: ComplianceClaimSettings | None) -> dict[str, Any]:
    agent = settings.agent
    probe = {
        "httpGet": {"path": "/healthz", "port": METRICS_PORT_NAME},
        "periodSeconds": 20,
        "timeoutSeconds": 5,
    }
    return {
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
