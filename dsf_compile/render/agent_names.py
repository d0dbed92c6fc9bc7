"""What the agent's objects on a managed cluster are called, and the labels that select them.

The agent's manifests, its per-cluster overrides, the observability pack and each
cluster's ManifestWork (the CA bundle) all name these objects: one definition keeps them
pointing at the same Deployment, Service and ConfigMap.
"""

from __future__ import annotations

from dsf_compile.render.labels import PART_OF

AGENT_NAME = "dynamic-scoring-agent"
AGENT_CONTAINER = "agent"
METRICS_PORT_NAME = "metrics"
#: The metrics Service; the Prometheus Operator names the scrape ``job`` after it.
METRICS_SERVICE = f"{AGENT_NAME}-metrics"

#: The CA bundle (``agent.caBundle``): a ConfigMap carried by each cluster's ManifestWork
#: (its content may differ per cluster), mounted into the agent, named by ``SSL_CERT_FILE``.
CA_CONFIG_MAP = f"{AGENT_NAME}-ca"
CA_KEY = "ca.crt"
CA_DIR = "/etc/dsf/ca"
CA_FILE = f"{CA_DIR}/{CA_KEY}"

AGENT_SELECTOR = {"app.kubernetes.io/name": AGENT_NAME}
AGENT_LABELS = {**AGENT_SELECTOR, "app.kubernetes.io/component": "agent", **PART_OF}
