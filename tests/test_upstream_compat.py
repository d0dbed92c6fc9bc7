"""Upstream DSF's formats: its DynamicScorer samples are accepted as written, its ConfigMap is read.

The documents below follow upstream's samples and documents (quickstart, development
guide, design proposal, review thread): kubebuilder-style
metadata, lower-case enumerations (``full``, ``prometheus``, ``none``), ``source`` and
``scoring`` blocks with or without hosts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.validate import validate_documents
from dsf_contract.bounded_yaml import parse_yaml
from dsf_contract.summary import SUMMARY_KEYS, SummaryList

UPSTREAM_SAMPLES = {
    "mydynamicscorer-sample.yaml": """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  labels:
    app.kubernetes.io/name: dynamic-scoring-framework
    app.kubernetes.io/managed-by: kustomize
  name: sample-scorer
  namespace: open-cluster-management
spec:
  description: A sample scorer for time series data
  configURL: http://<NODE_IP>:30007/config
  configSyncMode: Full
  location: Internal
  scoreDestination: AddOnPlacementScore
  scoreDimensionFormat: "${node};${namespace};${pod}"
  source:
    type: prometheus
    host: http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090
    path: /api/v1/query_range
    params:
      query: sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", pod!=""}[1m]))
      range: 3600
      step: 60
  scoring:
    host: http://<NODE_IP>:30007
    path: /scoring
    params:
      name: sample_my_score
      interval: 30
""",
    "mydynamicscorer-simple-prediction.yaml": """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: simple-prediction-scorer
  namespace: open-cluster-management
spec:
  description: A simple prediction scorer for time series data
  configURL: http://simple-prediction-scorer.dynamic-scoring.svc:8000/config
  configSyncMode: full
  scoreDestination: AddOnPlacementScore
  scoreDimensionFormat: "${node}-${namespace}-${pod}"
""",
    "mydynamicscorer-example-performance.yaml": """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: example-performance-scorer
  namespace: open-cluster-management
spec:
  description: An example performance score
  configURL: http://static-scorer.dynamic-scoring.svc:8000/performance/config
  configSyncMode: none
  location: Internal
  scoreDestination: AddOnPlacementScore
  scoreDimensionFormat: "${app};${device}"
  source:
    type: none
  scoring:
    host: http://static-scorer.dynamic-scoring.svc:8000
    path: /performance/scoring
    params:
      name: example_performance_score
      interval: 30
""",
    "mydynamicscorer-external-llm.yaml": """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: llm-forecast-scorer
  namespace: open-cluster-management
spec:
  description: A sample score for time series data with vLLM
  configURL: http://192.0.2.10:8000/config
  configSyncMode: Full
  location: External
  scoreDestination: AddOnPlacementScore
  scoreDimensionFormat: "${node};${namespace};${pod}"
  scoring:
    auth:
      tokenSecretRef:
        name: api-auth-secret
        key: token
""",
    "mydynamicscoringconfig.yaml": """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScoringConfig
metadata:
  name: dynamic-scoring-config
  namespace: open-cluster-management
spec:
  masks:
    - clusterName: worker02
      scoreName: llm_forecast_score
""",
}

INVENTORY = """\
apiVersion: v1
kind: List
items:
- apiVersion: cluster.open-cluster-management.io/v1
  kind: ManagedCluster
  metadata:
    creationTimestamp: "2026-02-05T11:44:16Z"
    finalizers: [cluster.open-cluster-management.io/api-resource-cleanup]
    labels: {cluster.open-cluster-management.io/clusterset: default, name: worker01}
    name: worker01
    resourceVersion: "327413"
    uid: 17676d46-569c-496f-9d56-e87354b385fc
  spec:
    hubAcceptsClient: true
    managedClusterClientConfigs: [{url: "https://worker01-control-plane:6443"}]
  status:
    conditions: []
- apiVersion: cluster.open-cluster-management.io/v1
  kind: ManagedCluster
  metadata: {name: worker02}
"""


def test_upstream_samples_are_accepted_unchanged() -> None:
    documents = []
    for name, text in {**UPSTREAM_SAMPLES, "managedclusters.yaml": INVENTORY}.items():
        folder = (
            "clusters"
            if ("config" in name and "scorer" not in name) or name.startswith("managed")
            else "scorers"
        )
        parsed, problems = parse_yaml(text, f"{folder}/{name}")
        assert problems == []
        documents += parsed
    inputs = validate_documents(documents, Settings())
    assert [s.model.metadata.name for s in inputs.scorers] == [
        "example-performance-scorer",
        "llm-forecast-scorer",
        "sample-scorer",
        "simple-prediction-scorer",
    ]
    assert {s.model.spec.configSyncMode for s in inputs.scorers} == {"Full", "None"}
    assert [c.model.metadata.name for c in inputs.clusters] == ["worker01", "worker02"]
    assert inputs.masks[0].scoreName == "llm_forecast_score"


QUICKSTART_CONFIGMAP = r"""[
  {
    "name": "sample-scorer",
    "scoreName": "sample_my_score",
    "sourceType": "Prometheus",
    "sourceEndpoint": "http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090/api/v1/query_range",
    "sourceEndpointAuthName": "",
    "sourceEndpointAuthKey": "",
    "sourceQuery": "sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!=\"\", pod!=\"\"}[1m]))",
    "sourceRange": 3600,
    "sourceStep": 60,
    "scoringEndpoint": "http://<NODE_IP>:30007/scoring",
    "scoringInterval": 30,
    "scoringEndpointAuthName": "",
    "scoringEndpointAuthKey": "",
    "location": "Internal",
    "scoreDestination": "AddOnPlacementScore",
    "scoreDimensionFormat": "${node};${namespace};${pod}"
  }
]"""


def test_upstreams_configmap_reads_as_our_summary_list() -> None:
    summaries = SummaryList.model_validate(json.loads(QUICKSTART_CONFIGMAP)).root
    assert summaries[0].scoreName == "sample_my_score"
    assert tuple(json.loads(QUICKSTART_CONFIGMAP)[0]) == SUMMARY_KEYS


def test_our_configmaps_have_upstreams_shape(fleet: Path) -> None:
    """Every rendered summary has exactly upstream's keys in upstream's order."""
    import yaml

    for work in sorted((fleet / "rendered/clusters").glob("*/manifestwork.yaml")):
        configmap = yaml.safe_load(work.read_text())["spec"]["workload"]["manifests"][0]
        for summary in json.loads(configmap["data"]["summaries"]):
            assert tuple(summary) == SUMMARY_KEYS


@pytest.mark.parametrize("case", ["full", "FULL", "Full", "fUlL"])
def test_enumerations_in_any_case_are_written_canonically(case: str) -> None:
    text = UPSTREAM_SAMPLES["mydynamicscorer-simple-prediction.yaml"].replace(
        "configSyncMode: full", f"configSyncMode: {case}"
    )
    documents, _ = parse_yaml(text, "scorers/x.yaml")
    inputs = validate_documents(documents, Settings())
    assert inputs.scorers[0].model.spec.configSyncMode == "Full"
