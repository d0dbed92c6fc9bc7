"""Building the two Kubernetes API clients: the managed cluster's and the hub's.

``kubernetes`` is imported only here and only when needed: with ``--config-file``,
``--secrets-dir`` and no hub, the agent never loads it (it costs ~15 MB of memory).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from agent.errors import AgentError


def managed_cluster_client() -> Any:
    """An ``ApiClient`` for this cluster: in-cluster credentials, else ``KUBECONFIG``."""
    from kubernetes import client, config

    if os.environ.get("KUBERNETES_SERVICE_HOST"):
        configuration = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except config.ConfigException as err:
            raise AgentError(
                f"in-cluster credentials unusable: {err}", reason="kube_config"
            ) from None
        return client.ApiClient(configuration)
    try:
        return config.new_client_from_config(persist_config=False)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as err:
        raise AgentError(
            f"no in-cluster credentials and no usable kubeconfig (KUBECONFIG): {err}",
            reason="kube_config",
        ) from None


def hub_client(kubeconfig: Path) -> Any:
    """An ``ApiClient`` for the hub from its kubeconfig file."""
    from kubernetes import config

    try:
        return config.new_client_from_config(config_file=str(kubeconfig), persist_config=False)  # type: ignore[no-untyped-call]
    except (config.ConfigException, OSError) as err:
        raise AgentError(
            f"hub kubeconfig {kubeconfig} unusable: {err}", reason="kube_config"
        ) from None


def core_api(api_client: Any) -> Any:
    """``CoreV1Api`` on ``api_client`` (ConfigMap and Secrets)."""
    from kubernetes import client

    return client.CoreV1Api(api_client)


def custom_objects_api(api_client: Any) -> Any:
    """``CustomObjectsApi`` on ``api_client`` (AddOnPlacementScores)."""
    from kubernetes import client

    return client.CustomObjectsApi(api_client)
