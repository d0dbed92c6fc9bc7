"""The observability pack (``dsf.yaml`` ``observability``): alerts, recording rules, a dashboard.

Pure. The objects go into the AddOnTemplate beside the agent, so every managed cluster
gets them: the agent's metrics are scraped there (the ServiceMonitor), so that is where a
Prometheus Operator evaluates the rules and where a Grafana sidecar finds the dashboard.
With remote-write to a hub store the same dashboard works there, filtered by cluster.

- a ``PrometheusRule`` (monitoring.coreos.com/v1): recording rules ``dsf:*`` and alerts on
  a scorer failing cycle after cycle, stale scores, a disabled scorer, a rejected
  configuration, and the agent down or missing;
- a ``ConfigMap`` holding the Grafana dashboard JSON, labelled for Grafana's sidecar.

Every metric named here is one the agent exposes (:mod:`agent.metrics`; a test checks
it). Nothing here may contain ``{{`` — the AddOnTemplate would read it as an OCM variable —
so alert texts name labels instead of templating them, and the dashboard names series with
``${__field.labels.…}``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from dsf_compile.inputs.settings import AlertSettings, Settings
from dsf_compile.render.agent_names import AGENT_NAME
from dsf_contract import metrics as names

#: The Prometheus Operator's API: PrometheusRules here, the agent's ServiceMonitor.
MONITORING_API_VERSION = "monitoring.coreos.com/v1"
DASHBOARD_NAME = "dynamic-scoring-dashboard"
DASHBOARD_KEY = "dynamic-scoring.json"
DASHBOARD_UID = "dsf-agent"
_RATE = "5m"


def _seconds_per_cycle(counter: str) -> str:
    return (
        f"sum by (namespace, score_name) (rate({counter}[{_RATE}]))\n"
        f"/ sum by (namespace, score_name) (rate({names.REQUESTS}[{_RATE}]))"
    )


def recording_rules() -> list[dict[str, Any]]:
    """``dsf:*`` series that the alerts and the dashboard read."""
    rules = [
        {
            "record": "dsf:cycles:rate5m",
            "expr": f"sum by (namespace, score_name, status) (rate({names.REQUESTS}[{_RATE}]))",
        },
        {
            "record": "dsf:failures:rate5m",
            "expr": f"sum by (namespace, score_name, stage, reason) (rate({names.FAILURES}[{_RATE}]))",
        },
    ]
    for stage, counter in names.STAGE_SECONDS.items():
        rules.append(
            {
                "record": f"dsf:{stage}_seconds_per_cycle:rate5m",
                "expr": _seconds_per_cycle(counter),
            }
        )
    rules.append(
        {
            "record": "dsf:last_success_age_seconds",
            "expr": f"time() - {names.LAST_SUCCESS}",
        }
    )
    return rules


class _Alert(NamedTuple):
    name: str
    expr: str
    wait: str
    summary: str
    description: str


def alerting_rules(settings: Settings, job: str) -> list[dict[str, Any]]:
    """The alerts; thresholds from ``observability.alerts``."""
    labels = {"severity": settings.observability.alerts.severity}
    up = f'up{{job="{job}", namespace="{settings.agentNamespace}"}}'
    return [
        {
            "alert": alert.name,
            "expr": alert.expr,
            "for": alert.wait,
            "labels": dict(labels),
            "annotations": {"summary": alert.summary, "description": alert.description},
        }
        for alert in (*_scorer_alerts(settings.observability.alerts), *_agent_alerts(up))
    ]


def _scorer_alerts(alerts: AlertSettings) -> list[_Alert]:
    """Alerts about one scorer or the agent's configuration: what its metrics say."""
    window, cycles = alerts.window, alerts.failingCycles
    return [
        _Alert(
            "DsfScorerFailing",
            f'increase({names.REQUESTS}{{status="failure"}}[{window}]) >= {cycles}\n'
            f'unless ignoring (status) increase({names.REQUESTS}{{status="success"}}[{window}]) > 0',
            "0m",
            f"A scorer failed {cycles} or more cycles in {window} and succeeded in none.",
            f"The score_name label names the scorer; {names.FAILURES} says at "
            "which stage (secret, fetch, score, publish) and why. Its last good scores stay "
            "until their validUntil.",
        ),
        _Alert(
            "DsfScoresStale",
            f"time() - {names.LAST_SUCCESS} > {alerts.staleSeconds}",
            "0m",
            f"A scorer has not completed a cycle for more than {alerts.staleSeconds} s.",
            "The score_name label names the scorer. Placement stops trusting its "
            "AddOnPlacementScore once validUntil (3 intervals) has passed.",
        ),
        _Alert(
            "DsfScorerDisabled",
            f"{names.SCORER_ENABLED} == 0",
            "10m",
            "A scorer is disabled: a Secret it needs is missing.",
            "The score_name label names the scorer; create the Secret its auth names in the "
            "agent namespace (or check the ExternalSecret that should write it).",
        ),
        _Alert(
            "DsfConfigRejected",
            f"{names.CONFIG_RELOAD_OK} == 0",
            "5m",
            "The agent rejected its configuration and keeps running the last good one.",
            "Read the agent's log for the reason; the ConfigMap dynamic-scoring-config comes "
            "from the ManifestWork rendered by dsf-compile.",
        ),
        _Alert(
            "DsfConfigInvalidSummaries",
            f"{names.INVALID_SUMMARIES} > 0",
            "5m",
            "Some summaries of the agent's configuration were rejected.",
            "The other scorers run; the agent's log names the rejected summaries.",
        ),
    ]


def _agent_alerts(up: str) -> list[_Alert]:
    """Alerts about the agent's pod: what its scrape says."""
    return [
        _Alert(
            "DsfAgentDown",
            f"{up} == 0",
            "5m",
            "The dynamic scoring agent does not answer its metrics scrape.",
            "No scores are refreshed on this cluster; they expire at their validUntil.",
        ),
        _Alert(
            "DsfAgentAbsent",
            f"absent({up})",
            "15m",
            "No dynamic scoring agent is scraped on this cluster.",
            "The addon is not installed, the ServiceMonitor is not selected by Prometheus, "
            "or the agent's pod is missing.",
        ),
    ]


def prometheus_rule(settings: Settings, job: str, labels: dict[str, str]) -> dict[str, Any]:
    """The PrometheusRule with the recording rules and the alerts."""
    return {
        "apiVersion": MONITORING_API_VERSION,
        "kind": "PrometheusRule",
        "metadata": {
            "name": AGENT_NAME,
            "namespace": settings.agentNamespace,
            "labels": {**labels, **settings.observability.labels},
        },
        "spec": {
            "groups": [
                {"name": "dsf.rules", "rules": recording_rules()},
                {"name": "dsf.alerts", "rules": alerting_rules(settings, job)},
            ]
        },
    }


# -------------------------------------------------------------------- dashboard

_SCORE = f'{names.SCORE_CLUSTER_LABEL}=~"$cluster", {names.SCORE_NAME_LABEL}=~"$score"'
_AGENT = 'cluster=~"$cluster", score_name=~"$score"'


def _panel(
    panel_id: int,
    title: str,
    grid: tuple[int, int, int, int],
    targets: list[tuple[str, str]],
    *,
    kind: str = "timeseries",
    unit: str = "short",
    display: str | None = None,
) -> dict[str, Any]:
    x, y, w, h = grid
    defaults: dict[str, Any] = {"unit": unit}
    if display is not None:
        defaults["displayName"] = display
    return {
        "id": panel_id,
        "type": kind,
        "title": title,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + index),
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": expr,
                "legendFormat": legend,
            }
            for index, (expr, legend) in enumerate(targets)
        ],
    }


def _per_cycle(stage: str) -> str:
    return (
        f"sum by (score_name) (rate({names.STAGE_SECONDS[stage]}{{{_AGENT}}}[$__rate_interval]))"
        f" / sum by (score_name) (rate({names.REQUESTS}{{{_AGENT}}}[$__rate_interval]))"
    )


_SCORE_DISPLAY = "${__field.labels.ds_score_name}"
_DIMENSION_DISPLAY = (
    "${__field.labels.ds_cluster} ${__field.labels.ds_node} ${__field.labels.ds_namespace} "
    "${__field.labels.ds_pod} ${__field.labels.ds_device} ${__field.labels.ds_meta}"
)
_BY_SCORE = "${__field.labels.score_name}"
_QUERY_SOURCE = {"type": "prometheus", "uid": "${datasource}"}


def dashboard() -> dict[str, Any]:
    """The Grafana dashboard: scores per cluster and dimension, cycle outcomes, latencies."""
    return {
        "uid": DASHBOARD_UID,
        "title": "Dynamic Scoring Framework",
        "tags": ["dynamic-scoring", "ocm"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "refresh": "1m",
        "time": {"from": "now-6h", "to": "now"},
        "templating": {"list": _variables()},
        "panels": [*_score_panels(), *_cycle_panels(), *_agent_panels()],
    }


def _score_panels() -> list[dict[str, Any]]:
    """The scores themselves: over time, and the latest in a table."""
    return [
        _panel(
            1,
            "Scores by cluster and dimension",
            (0, 0, 24, 9),
            [(f"{names.SCORE}{{{_SCORE}}}", "")],
            display=f"{_SCORE_DISPLAY} {_DIMENSION_DISPLAY}",
        ),
        _panel(
            2,
            "Latest scores",
            (0, 9, 24, 8),
            [(f"{names.SCORE}{{{_SCORE}}}", "")],
            kind="table",
        ),
    ]


def _cycle_panels() -> list[dict[str, Any]]:
    """What the cycles do: outcomes, failures, where the time goes, the last success."""
    return [
        _panel(
            3,
            "Cycles per second by outcome",
            (0, 17, 12, 8),
            [
                (
                    f"sum by (score_name, status) (rate({names.REQUESTS}{{{_AGENT}}}[$__rate_interval]))",
                    "",
                )
            ],
            unit="ops",
            display=f"{_BY_SCORE} ${{__field.labels.status}}",
        ),
        _panel(
            4,
            "Failures by stage and reason",
            (12, 17, 12, 8),
            [
                (
                    f"sum by (score_name, stage, reason) (increase({names.FAILURES}{{{_AGENT}}}[$__rate_interval]))",
                    "",
                )
            ],
            display=f"{_BY_SCORE} ${{__field.labels.stage}} ${{__field.labels.reason}}",
        ),
        _panel(
            5,
            "Seconds per cycle: fetch, score, publish",
            (0, 25, 12, 8),
            [
                (_per_cycle("fetch"), "fetch"),
                (_per_cycle("perform"), "score"),
                (_per_cycle("send"), "publish"),
            ],
            unit="s",
            display=f"{_BY_SCORE} ${{__series.name}}",
        ),
        _panel(
            6,
            "Seconds since the last successful cycle",
            (12, 25, 12, 8),
            [
                (
                    f"time() - {names.LAST_SUCCESS}{{{_AGENT}}}",
                    "",
                )
            ],
            unit="s",
            display=_BY_SCORE,
        ),
    ]


def _agent_panels() -> list[dict[str, Any]]:
    """The agent itself: its configuration and how late its cycles start."""
    return [
        _panel(
            7,
            "Configuration",
            (0, 33, 12, 6),
            [
                (f'{names.CONFIG_RELOAD_OK}{{cluster=~"$cluster"}}', "loaded"),
                (f'{names.SCORERS}{{cluster=~"$cluster"}}', "scorers"),
                (f'{names.INVALID_SUMMARIES}{{cluster=~"$cluster"}}', "rejected"),
            ],
            kind="stat",
        ),
        _panel(
            8,
            "Cycle start lag (p99)",
            (12, 33, 12, 6),
            [
                (
                    f'histogram_quantile(0.99, sum by (le) (rate({names.START_LAG}_bucket{{cluster=~"$cluster"}}[$__rate_interval])))',
                    "p99",
                )
            ],
            unit="s",
        ),
    ]


def _variables() -> list[dict[str, Any]]:
    """The dashboard's variables: data source, cluster, score."""
    return [
        {
            "name": "datasource",
            "label": "Data source",
            "type": "datasource",
            "query": "prometheus",
        },
        {
            "name": "cluster",
            "label": "Cluster",
            "type": "query",
            "datasource": _QUERY_SOURCE,
            "query": f"label_values({names.SCORE}, {names.SCORE_CLUSTER_LABEL})",
            "includeAll": True,
            "multi": True,
            # Series without a cluster label (a Prometheus on one cluster) match too.
            "allValue": ".*",
            "refresh": 2,
        },
        {
            "name": "score",
            "label": "Score",
            "type": "query",
            "datasource": _QUERY_SOURCE,
            "query": f'label_values({names.SCORE}{{{names.SCORE_CLUSTER_LABEL}=~"$cluster"}}, {names.SCORE_NAME_LABEL})',
            "includeAll": True,
            "multi": True,
            "allValue": ".*",
            "refresh": 2,
        },
    ]


def dashboard_configmap(settings: Settings, labels: dict[str, str]) -> dict[str, Any]:
    """The dashboard in a ConfigMap, labelled for Grafana's dashboard sidecar."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": DASHBOARD_NAME,
            "namespace": settings.agentNamespace,
            "labels": {**labels, **settings.observability.dashboardLabels},
        },
        "data": {DASHBOARD_KEY: json.dumps(dashboard(), indent=2, sort_keys=True) + "\n"},
    }
