"""What a cluster's ManifestWork carries beside the summaries ConfigMap.

Pure. Objects whose content may differ from cluster to cluster, in the agent namespace:

- the CA bundle ConfigMap (``agent.caBundle``, or the last override that sets one), which
  the agent Deployment mounts and names in ``SSL_CERT_FILE``;
- an ``ExternalSecret`` (external-secrets.io) for each Secret the cluster's scorers name
  and each image pull Secret, when ``dsf.yaml`` sets ``externalSecrets``: the External
  Secrets operator on the cluster writes the Secret from the store, so no credential is
  ever in Git.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.inputs.settings import ExternalSecretsSettings, Settings
from dsf_compile.render.agent_names import CA_CONFIG_MAP, CA_KEY
from dsf_compile.render.agent_overrides import cluster_overrides
from dsf_compile.render.labels import MANAGED_BY
from dsf_compile.resolve.summaries import ClusterPlan, Plan

EXTERNAL_SECRET_API_VERSION = "external-secrets.io/v1beta1"
DOCKER_CONFIG_KEY = ".dockerconfigjson"


def ca_bundle_of(settings: Settings, cluster: ClusterPlan) -> str | None:
    """The CA bundle of ``cluster``: the last selecting override's, else the fleet's."""
    bundle = settings.agent.caBundle
    for override in cluster_overrides(settings, cluster):
        bundle = override.caBundle or bundle
    return bundle


def secret_keys_of(plan: Plan, cluster: ClusterPlan) -> dict[str, set[str]]:
    """Secret name → the keys the cluster's scorers read from it (image pull Secrets included)."""
    keys: dict[str, set[str]] = {}
    for name in cluster.scorers:
        summary = plan.resolved[name].summary
        for secret, key in (
            (summary.sourceEndpointAuthName, summary.sourceEndpointAuthKey),
            (summary.scoringEndpointAuthName, summary.scoringEndpointAuthKey),
        ):
            if secret:
                keys.setdefault(secret, set()).add(key)
    for secret in plan.inputs.settings.agent.imagePullSecrets:
        keys.setdefault(secret, set()).add(DOCKER_CONFIG_KEY)
    return keys


def external_secret(
    settings: Settings,
    external: ExternalSecretsSettings,
    cluster: str,
    secret: str,
    keys: set[str],
) -> dict[str, Any]:
    """The ExternalSecret that makes the Secret ``secret`` on ``cluster`` from the store."""
    remote = external.secrets[secret]
    remote_key = remote.remoteKey.replace("${cluster}", cluster)
    target: dict[str, Any] = {
        "name": secret,
        # Owner: the operator owns the Secret it writes; Retain keeps it when the
        # ExternalSecret goes, so a scorer does not lose its token mid-change.
        "creationPolicy": "Owner",
        "deletionPolicy": "Retain",
    }
    if secret in settings.agent.imagePullSecrets:
        target["template"] = {"type": "kubernetes.io/dockerconfigjson"}
    spec: dict[str, Any] = {
        "refreshInterval": external.refreshInterval,
        "secretStoreRef": {"kind": external.storeRef.kind, "name": external.storeRef.name},
        "target": target,
    }
    if remote.property is None:
        spec["dataFrom"] = [{"extract": {"key": remote_key}}]
    else:
        spec["data"] = [
            {"secretKey": key, "remoteRef": {"key": remote_key, "property": remote.property}}
            for key in sorted(keys)
        ]
    return {
        "apiVersion": EXTERNAL_SECRET_API_VERSION,
        "kind": "ExternalSecret",
        "metadata": {
            "name": secret,
            "namespace": settings.agentNamespace,
            "labels": dict(MANAGED_BY),
        },
        "spec": spec,
    }


def cluster_objects(plan: Plan, cluster: ClusterPlan) -> list[dict[str, Any]]:
    """The objects ``cluster``'s ManifestWork carries after its summaries ConfigMap."""
    settings = plan.inputs.settings
    out: list[dict[str, Any]] = []
    bundle = ca_bundle_of(settings, cluster)
    if bundle is not None:
        out.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": CA_CONFIG_MAP,
                    "namespace": settings.agentNamespace,
                    "labels": dict(MANAGED_BY),
                },
                "data": {CA_KEY: bundle},
            }
        )
    external = settings.externalSecrets
    if external is not None:
        for secret, keys in sorted(secret_keys_of(plan, cluster).items()):
            out.append(external_secret(settings, external, cluster.name, secret, keys))
    return out
