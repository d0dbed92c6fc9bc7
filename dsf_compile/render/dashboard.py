"""The Grafana dashboard of the observability pack, and the ConfigMap Grafana's sidecar reads.

Pure. :data:`_PANELS` is the dashboard, one row per panel in the order Grafana lays them
out: scores by cluster and dimension, what the cycles do, the agent itself. Every metric
named here is one the agent exposes (a test checks it); nothing holds ``{{`` (the
AddOnTemplate would read it as an OCM variable), so series are named with
``${__field.labels.…}``.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from dsf_compile.inputs.settings import Settings
from dsf_contract import metrics as names

DASHBOARD_NAME = "dynamic-scoring-dashboard"
DASHBOARD_KEY = "dynamic-scoring.json"
DASHBOARD_UID = "dsf-agent"

_SCORE = f'{names.SCORE_CLUSTER_LABEL}=~"$cluster", {names.SCORE_NAME_LABEL}=~"$score"'
_AGENT = 'cluster=~"$cluster", score_name=~"$score"'
_SCORE_DISPLAY = "${__field.labels.ds_score_name}"
_DIMENSION_DISPLAY = (
    "${__field.labels.ds_cluster} ${__field.labels.ds_node} ${__field.labels.ds_namespace} "
    "${__field.labels.ds_pod} ${__field.labels.ds_device} ${__field.labels.ds_meta}"
)
_BY_SCORE = "${__field.labels.score_name}"
_QUERY_SOURCE = {"type": "prometheus", "uid": "${datasource}"}


def _per_cycle(stage: str) -> str:
    return (
        f"sum by (score_name) (rate({names.STAGE_SECONDS[stage]}{{{_AGENT}}}[$__rate_interval]))"
        f" / sum by (score_name) (rate({names.REQUESTS}{{{_AGENT}}}[$__rate_interval]))"
    )


class _Panel(NamedTuple):
    """One panel: its title, ``(x, y, w, h)``, its ``(expr, legend)`` queries, how it shows."""

    title: str
    grid: tuple[int, int, int, int]
    targets: tuple[tuple[str, str], ...]
    kind: str = "timeseries"
    unit: str = "short"
    display: str | None = None


_PANELS = (
    # the scores themselves: over time, and the latest in a table
    _Panel(
        "Scores by cluster and dimension",
        (0, 0, 24, 9),
        ((f"{names.SCORE}{{{_SCORE}}}", ""),),
        display=f"{_SCORE_DISPLAY} {_DIMENSION_DISPLAY}",
    ),
    _Panel("Latest scores", (0, 9, 24, 8), ((f"{names.SCORE}{{{_SCORE}}}", ""),), kind="table"),
    # what the cycles do: outcomes, failures, where the time goes, the last success
    _Panel(
        "Cycles per second by outcome",
        (0, 17, 12, 8),
        (
            (
                f"sum by (score_name, status) (rate({names.REQUESTS}{{{_AGENT}}}[$__rate_interval]))",
                "",
            ),
        ),
        unit="ops",
        display=f"{_BY_SCORE} ${{__field.labels.status}}",
    ),
    _Panel(
        "Failures by stage and reason",
        (12, 17, 12, 8),
        (
            (
                f"sum by (score_name, stage, reason) (increase({names.FAILURES}{{{_AGENT}}}[$__rate_interval]))",
                "",
            ),
        ),
        display=f"{_BY_SCORE} ${{__field.labels.stage}} ${{__field.labels.reason}}",
    ),
    _Panel(
        "Seconds per cycle: fetch, score, publish",
        (0, 25, 12, 8),
        (
            (_per_cycle("fetch"), "fetch"),
            (_per_cycle("perform"), "score"),
            (_per_cycle("send"), "publish"),
        ),
        unit="s",
        display=f"{_BY_SCORE} ${{__series.name}}",
    ),
    _Panel(
        "Seconds since the last successful cycle",
        (12, 25, 12, 8),
        ((f"time() - {names.LAST_SUCCESS}{{{_AGENT}}}", ""),),
        unit="s",
        display=_BY_SCORE,
    ),
    # the agent itself: its configuration and how late its cycles start
    _Panel(
        "Configuration",
        (0, 33, 12, 6),
        (
            (f'{names.CONFIG_RELOAD_OK}{{cluster=~"$cluster"}}', "loaded"),
            (f'{names.SCORERS}{{cluster=~"$cluster"}}', "scorers"),
            (f'{names.INVALID_SUMMARIES}{{cluster=~"$cluster"}}', "rejected"),
        ),
        kind="stat",
    ),
    _Panel(
        "Cycle start lag (p99)",
        (12, 33, 12, 6),
        (
            (
                f'histogram_quantile(0.99, sum by (le) (rate({names.START_LAG}_bucket{{cluster=~"$cluster"}}[$__rate_interval])))',
                "p99",
            ),
        ),
        unit="s",
    ),
)


def _panel(panel_id: int, panel: _Panel) -> dict[str, Any]:
    x, y, w, h = panel.grid
    defaults: dict[str, Any] = {"unit": panel.unit}
    if panel.display is not None:
        defaults["displayName"] = panel.display
    return {
        "id": panel_id,
        "type": panel.kind,
        "title": panel.title,
        "datasource": _QUERY_SOURCE,
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "targets": [
            {
                "refId": chr(ord("A") + index),
                "datasource": _QUERY_SOURCE,
                "expr": expr,
                "legendFormat": legend,
            }
            for index, (expr, legend) in enumerate(panel.targets)
        ],
    }


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
        "panels": [_panel(index, panel) for index, panel in enumerate(_PANELS, start=1)],
    }


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
