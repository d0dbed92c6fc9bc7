"""The observability pack: the PrometheusRule through the real ``promtool`` (syntax, and the
alerts firing on synthetic series), the dashboard's JSON and expressions, and every metric
they name against what the agent actually exposes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.metrics import AgentMetrics
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.dashboard import DASHBOARD_KEY
from dsf_compile.render.manifests import render_manifests
from tests.agent.exposed import families
from tests.day2_fleet import day2_fleet
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT

JOB = "dynamic-scoring-agent-metrics"
NAMESPACE = "scoring-agent"


@pytest.fixture(scope="module")
def template_objects(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    root = day2_fleet(tmp_path_factory.mktemp("obs") / "fleet")
    template = yaml.safe_load(render_manifests(plan_fleet(root))["hub/addon/addontemplate.yaml"])
    return {
        f"{m['kind']}/{m['metadata']['name']}": m
        for m in template["spec"]["agentSpec"]["workload"]["manifests"]
    }


@pytest.fixture(scope="module")
def rule(template_objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return template_objects["PrometheusRule/dynamic-scoring-agent"]


@pytest.fixture(scope="module")
def dashboard(template_objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    configmap = template_objects["ConfigMap/dynamic-scoring-dashboard"]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    parsed: dict[str, Any] = json.loads(configmap["data"][DASHBOARD_KEY])
    return parsed


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    return found


def run_promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [promtool(), *args], capture_output=True, text=True, cwd=cwd, timeout=120, check=False
    )


def agent_metric_names() -> set[str]:
    """Every sample name the agent can expose (counters as ``_total``, histograms' series)."""
    metrics = AgentMetrics("c")
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"), "gauge": ("",)}
    return {
        family.name + suffix for family in families(metrics) for suffix in suffixes[family.type]
    }


def metric_names(expr: str) -> set[str]:
    """The metric names an expression reads (identifiers of the agent's or ours)."""
    return set(re.findall(r"\b(?:dynamic_[a-z_]+|dsf:[a-z0-9_:]+)", expr))


# ------------------------------------------------------------------ PrometheusRule


def test_the_rules_pass_promtool(rule: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = run_promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 13 rules found" in checked.stdout + checked.stderr
    assert rule["metadata"]["labels"]["release"] == "kube-prometheus-stack"


def test_a_broken_rule_fails_promtool(rule: dict[str, Any], tmp_path: Path) -> None:
    groups = json.loads(json.dumps(rule["spec"]["groups"]))
    groups[1]["rules"][0]["expr"] = "increase(dynamic_scoring_requests_total[15m] >= 3"
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": groups}))
    assert run_promtool("check", "rules", "rules.yaml", cwd=tmp_path).returncode != 0


def test_every_metric_of_the_rules_is_one_the_agent_exposes(rule: dict[str, Any]) -> None:
    known = agent_metric_names()
    recorded = {r["record"] for g in rule["spec"]["groups"] for r in g["rules"] if "record" in r}
    used = set()
    for group in rule["spec"]["groups"]:
        for item in group["rules"]:
            used |= metric_names(item["expr"])
    assert used, "the rules read the agent's metrics"
    assert used - known - recorded == set()
    # The check is not vacuous: a misspelt name would be caught.
    assert "dynamic_scoring_request_total" not in known


def _series(metric: str, values: str, **labels: str) -> dict[str, str]:
    body = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    return {"series": f"{metric}{{{body}}}", "values": values}


def test_the_alerts_fire_on_synthetic_series(rule: dict[str, Any], tmp_path: Path) -> None:
    """``promtool test rules``: each alert fires when it should, and only then."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    target = {"job": JOB, "namespace": NAMESPACE, "instance": "10.0.0.1:8080"}
    series = [
        # broken: fails every minute, never succeeds; healthy: succeeds every minute
        _series(
            "dynamic_scoring_requests_total",
            "0+1x40",
            score_name="broken",
            status="failure",
            **target,
        ),
        _series(
            "dynamic_scoring_requests_total",
            "2+0x40",
            score_name="broken",
            status="success",
            **target,
        ),
        _series(
            "dynamic_scoring_requests_total",
            "0+1x40",
            score_name="healthy",
            status="success",
            **target,
        ),
        _series(
            "dynamic_scoring_requests_total",
            "0+0x40",
            score_name="healthy",
            status="failure",
            **target,
        ),
        # broken last succeeded at t=0; healthy keeps succeeding
        _series(
            "dynamic_scoring_last_success_timestamp_seconds",
            "0+0x40",
            score_name="broken",
            **target,
        ),
        _series(
            "dynamic_scoring_last_success_timestamp_seconds",
            "0+60x40",
            score_name="healthy",
            **target,
        ),
        _series("dynamic_scoring_config_last_reload_successful", "1 1 1 0+0x37", **target),
    ]
    severity = {"severity": "warning"}
    alerts: list[dict[str, Any]] = [
        {
            "eval_time": "20m",
            "alertname": "DsfScorerFailing",
            "exp_alerts": [
                {"exp_labels": {**target, **severity, "score_name": "broken", "status": "failure"}}
            ],
        },
        {
            "eval_time": "20m",
            "alertname": "DsfScoresStale",
            "exp_alerts": [{"exp_labels": {**target, **severity, "score_name": "broken"}}],
        },
        {"eval_time": "5m", "alertname": "DsfConfigRejected", "exp_alerts": []},
        {
            "eval_time": "15m",
            "alertname": "DsfConfigRejected",
            "exp_alerts": [{"exp_labels": {**target, **severity}}],
        },
        # No up series at all: the agent is absent once the 15 minutes have passed.
        {"eval_time": "10m", "alertname": "DsfAgentAbsent", "exp_alerts": []},
        {
            "eval_time": "20m",
            "alertname": "DsfAgentAbsent",
            "exp_alerts": [{"exp_labels": {"job": JOB, "namespace": NAMESPACE, **severity}}],
        },
    ]
    for item in alerts:
        for expected in item["exp_alerts"]:
            expected["exp_annotations"] = next(
                r["annotations"]
                for g in rule["spec"]["groups"]
                for r in g["rules"]
                if r.get("alert") == item["alertname"]
            )
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": series, "alert_rule_test": alerts}],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests, sort_keys=False))
    result = run_promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# ------------------------------------------------------------------- dashboard


def _expressions(dashboard: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def test_the_dashboard_is_complete_json(dashboard: dict[str, Any]) -> None:
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids)) >= 6
    assert all(p["targets"] for p in dashboard["panels"])
    names = {v["name"] for v in dashboard["templating"]["list"]}
    assert names == {"datasource", "cluster", "score"}
    titles = " ".join(p["title"] for p in dashboard["panels"]).lower()
    for topic in ("scores", "cycles", "failures", "seconds per cycle"):
        assert topic in titles


def test_every_dashboard_expression_parses_and_reads_agent_metrics(
    dashboard: dict[str, Any], tmp_path: Path
) -> None:
    known = agent_metric_names()
    expressions = _expressions(dashboard)
    for expr in expressions:
        names = metric_names(expr)
        assert names and names <= known, expr
    # promtool parses whole rule files: each expression, with Grafana's variables filled
    # in, becomes one recording rule.
    filled = [
        expr.replace("$__rate_interval", "5m").replace("$cluster", ".*").replace("$score", ".*")
        for expr in expressions
    ]
    assert all("$" not in e for e in filled)
    rules = [{"record": f"dsf:panel_{i}", "expr": e} for i, e in enumerate(filled)]
    (tmp_path / "panels.yaml").write_text(
        yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]})
    )
    checked = run_promtool("check", "rules", "panels.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_pack_is_off_by_default() -> None:
    text = render_manifests(plan_fleet(EXAMPLE_FLEET))["hub/addon/addontemplate.yaml"]
    assert "PrometheusRule" not in text and "grafana_dashboard" not in text


def test_the_documented_prometheus_config_is_valid(tmp_path: Path) -> None:
    """docs/observability.md's plain ``prometheus.yml`` passes ``promtool check config``."""
    text = (REPO_ROOT / "docs" / "observability.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(# prometheus\.yml\n.*?)```", text, flags=re.DOTALL)
    assert len(blocks) == 1
    (tmp_path / "prometheus.yml").write_text(blocks[0], encoding="utf-8")
    checked = run_promtool("check", "config", "prometheus.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
