"""Scorers for the sync tests: a scorer's ``/config`` answer, DynamicScorers pointing at a
URL (as models, or as the YAML files of a fleet), and sync settings that give up fast."""

from __future__ import annotations

from pathlib import Path

from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.sync_settings import SyncSettings

CONFIG = {
    "name": "sample-scorer",
    "description": "A sample score",
    "source": {
        "type": "prometheus",
        "host": "http://prometheus.monitoring.svc:9090",
        "path": "/api/v1/query_range",
        "params": {"query": "up", "range": 3600, "step": 60},
    },
    "scoring": {"path": "/scoring", "params": {"name": "sample_my_score", "interval": 30}},
    "futureField": {"ignored": True},
}
FAST = SyncSettings(timeoutSeconds=5, retries=2)
SCORER_YAML = """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: {name}
spec:
  description: {name} scorer
  configURL: {url}
  configSyncMode: Full
  scoreDestination: AddOnPlacementScore
"""


def scorer(name: str, url: str, mode: str = "Full") -> DynamicScorer:
    return DynamicScorer.model_validate(
        {
            "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
            "kind": "DynamicScorer",
            "metadata": {"name": name},
            "spec": {
                "description": f"{name} scorer",
                "configURL": url,
                "configSyncMode": mode,
                "scoreDestination": "AddOnPlacementScore",
            },
        }
    )


def make_fleet(root: Path, urls: dict[str, str]) -> Path:
    (root / "scorers").mkdir(parents=True)
    for name, url in urls.items():
        (root / "scorers" / f"{name}.yaml").write_text(SCORER_YAML.format(name=name, url=url))
    return root
