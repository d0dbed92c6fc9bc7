"""End to end: ``python -m agent`` reading its ConfigMap and Secrets through the emulated
Kubernetes API, scoring from real Prometheus and real VictoriaMetrics, publishing to the
emulated hub; the AddOnPlacementScores validate against the CRD and ``promtool`` accepts
``/metrics``."""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.agent.agent_fakes import FakeKube, FakeServer, average_scorer
from tests.agent.agent_probes import promtool_check
from tests.agent.conftest import (
    CLUSTER,
    METRIC,
    AgentProcess,
    agent_env,
    configmap_yaml,
    make_summary,
)
from tests.agent.fleet_apis import poll_until

pytestmark = pytest.mark.integration

NAMESPACE = "dynamic-scoring"
EXPECTED_ITEMS = [
    {"name": "n1;web;web-1", "value": 12},  # 12.5 rounded down
    {"name": "n2;web;web-2", "value": 100},  # 250 clamped
    {"name": "n3;db;db-1", "value": -4},  # -3.5 rounded down
]


def _scores_are(kube: FakeKube, name: str, expected: Any) -> bool:
    return bool(scores_of(kube, name) == expected)


def scores_of(kube: FakeKube, name: str) -> list[dict[str, Any]] | None:
    obj = kube.get("addonplacementscores", CLUSTER, name)
    return obj["status"]["scores"] if obj and obj.get("status") else None


def store_summary(
    score_name: str, base_url: str, scorer: FakeServer, **changes: Any
) -> dict[str, Any]:
    return make_summary(
        name=score_name.replace("_", "-"),
        scoreName=score_name,
        sourceEndpoint=f"{base_url}/api/v1/query_range",
        sourceQuery=METRIC,
        sourceRange=600,
        sourceStep=60,
        scoringEndpoint=f"{scorer.url}/scoring",
        scoringInterval=1,
        **changes,
    )


def test_agent_against_prometheus_and_victoriametrics(
    prometheus: str,
    victoria_metrics: str,
    kube: FakeKube,
    serve: Callable[..., FakeServer],
    agent_process: Callable[..., AgentProcess],
    crd_schema: dict[str, Any],
    tmp_path: Path,
) -> None:
    scorer = serve(average_scorer)
    summaries = [
        store_summary(
            "prom_load",
            prometheus,
            scorer,
            sourceEndpointAuthName="prom-auth",
            sourceEndpointAuthKey="token",
        ),
        store_summary(
            "vm_load",
            victoria_metrics,
            scorer,
            scoringEndpointAuthName="scorer-auth",
            scoringEndpointAuthKey="token",
        ),
    ]
    kube.set_configmap(
        NAMESPACE, "dynamic-scoring-config", {"summaries": json.dumps(summaries, indent=2)}
    )
    kube.set_secret(NAMESPACE, "prom-auth", {"token": "PROM-SECRET-abc123"})
    kube.set_secret(NAMESPACE, "scorer-auth", {"token": "SCORER-SECRET-def456"})
    (tmp_path / "managed.kubeconfig").write_text(kube.kubeconfig("MANAGED-KUBE-TOKEN-1"))
    (tmp_path / "hub.kubeconfig").write_text(kube.kubeconfig("HUB-KUBE-TOKEN-2"))

    agent = agent_process(
        "--cluster-name",
        CLUSTER,
        "--hub-kubeconfig",
        str(tmp_path / "hub.kubeconfig"),
        "--log-format",
        "json",
        "--log-level",
        "debug",
        env=agent_env(KUBECONFIG=str(tmp_path / "managed.kubeconfig")),
    )
    for name in ("prom-load", "vm-load"):
        poll_until(partial(_scores_are, kube, name, EXPECTED_ITEMS), f"{name} scores on the hub")
        obj = kube.get("addonplacementscores", CLUSTER, name)
        jsonschema.validate(
            obj, crd_schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
        )
    assert agent.status("/readyz") == 200

    text = agent.metrics()
    published = {
        (s.labels["ds_score_name"], s.labels["ds_node"], s.labels["ds_cluster"]): s.value
        for family in text_string_to_metric_families(text)
        if family.name == "dynamic_score"
        for s in family.samples
    }
    for score_name in ("prom_load", "vm_load"):
        assert published[(score_name, "n1", CLUSTER)] == 12.5
        assert published[(score_name, "n2", CLUSTER)] == 250.0
        assert published[(score_name, "n3", CLUSTER)] == -3.5
    checked = promtool_check(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    # The bearer tokens went where they belong.
    scorer_auth = {r.headers.get("authorization") for r in scorer.taken("/scoring")}
    assert "Bearer SCORER-SECRET-def456" in scorer_auth

    # Removing a scorer from the ConfigMap deletes its series.
    kube.set_configmap(
        NAMESPACE, "dynamic-scoring-config", {"summaries": json.dumps(summaries[1:])}
    )
    poll_until(
        lambda: 'ds_score_name="prom_load"' not in agent.metrics(), "prom_load series removed"
    )
    # A broken ConfigMap keeps the last good configuration.
    kube.set_configmap(NAMESPACE, "dynamic-scoring-config", {"summaries": "[{broken"})
    poll_until(
        lambda: "dynamic_scoring_config_last_reload_successful 0.0" in agent.metrics(), "rejection"
    )
    assert 'ds_score_name="vm_load"' in agent.metrics()

    assert agent.terminate() == 0
    log = agent.log()
    assert '"event": "agent_stopped"' in log
    for secret in ("PROM-SECRET", "SCORER-SECRET", "MANAGED-KUBE-TOKEN", "HUB-KUBE-TOKEN"):
        assert secret not in log and secret not in text


def test_config_file_as_configmap_yaml_with_secrets_dir(
    prometheus: str,
    serve: Callable[..., FakeServer],
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    scorer = serve(average_scorer)
    config = tmp_path / "configmap.yaml"
    config.write_text(
        configmap_yaml(
            [
                store_summary(
                    "yaml_load",
                    prometheus,
                    scorer,
                    scoringEndpointAuthName="s",
                    scoringEndpointAuthKey="k",
                )
            ]
        )
    )
    (tmp_path / "secrets" / "s").mkdir(parents=True)
    (tmp_path / "secrets" / "s" / "k").write_text("DIR-SECRET-777\n")
    agent = agent_process(
        "--config-file",
        str(config),
        "--secrets-dir",
        str(tmp_path / "secrets"),
        env=agent_env(DSF_CLUSTER_NAME=CLUSTER),
    )
    poll_until(lambda: 'ds_node="n3"' in agent.metrics(), "scores on /metrics")
    assert (
        'dynamic_scoring_requests_total{score_name="yaml_load",status="success"}' in agent.metrics()
    )
    assert {r.headers.get("authorization") for r in scorer.taken("/scoring")} == {
        "Bearer DIR-SECRET-777"
    }
    agent.process.send_signal(signal.SIGINT)
    assert agent.process.wait(15) == 0
    assert "DIR-SECRET" not in agent.log()


def test_startup_errors_exit_2(agent_process: Callable[..., AgentProcess], tmp_path: Path) -> None:
    env = agent_env(KUBECONFIG=str(tmp_path / "missing"))
    agent = agent_process("--cluster-name", CLUSTER, env=env, wait_healthy=False)
    assert agent.process.wait(30) == 2
    assert "agent_failed" in agent.log() and "Traceback" not in agent.log()
    usage = agent_process("--cluster-name", "Bad_Name", wait_healthy=False)
    assert usage.process.wait(30) == 2


@pytest.mark.skipif(
    shutil.which("promtool") is None, reason="promtool not installed (Debian package prometheus)"
)
def test_promtool_accepts_metrics_after_failures(
    serve: Callable[..., FakeServer], agent_process: Callable[..., AgentProcess], tmp_path: Path
) -> None:
    from tests.agent.agent_fakes import Reply

    scorer = serve(lambda request: Reply(status=500))
    config = tmp_path / "summaries.json"
    config.write_text(
        json.dumps(
            [
                make_summary(
                    sourceType="None",
                    sourceEndpoint="",
                    sourceQuery="",
                    sourceRange=0,
                    sourceStep=0,
                    scoringEndpoint=f"{scorer.url}/scoring",
                )
            ]
        )
    )
    agent = agent_process(
        "--cluster-name", CLUSTER, "--config-file", str(config), "--secrets-dir", str(tmp_path)
    )
    poll_until(lambda: 'stage="score"' in agent.metrics(), "failure counted")
    checked = promtool_check(agent.metrics())
    assert checked.returncode == 0, checked.stdout + checked.stderr
