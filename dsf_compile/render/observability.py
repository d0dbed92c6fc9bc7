"""The observability pack (``dsf.yaml`` ``observability``): its PrometheusRule, alerts and recording rules.

Pure. The objects go into the AddOnTemplate beside the agent, so every managed cluster
gets them: the agent's metrics are scraped there (the ServiceMonitor), so that is where a
Prometheus Operator evaluates the rules and where a Grafana sidecar finds the dashboard.
With remote-write to a hub store the same dashboard works there, filtered by cluster.

- a ``PrometheusRule`` (monitoring.coreos.com/v1): recording rules ``dsf:*`` and alerts on
  a scorer failing cycle after cycle, stale scores, a disabled scorer, a rejected
  configuration, and the agent down or missing;
- a ``ConfigMap`` holding the Grafana dashboard JSON, labelled for Grafana's sidecar
  (:mod:`dsf_compile.render.dashboard`).

Every metric named here is one the agent exposes (:mod:`agent.metrics`; a test checks
it). Nothing here may contain ``{{`` — the AddOnTemplate would read it as an OCM variable —
so alert texts name labels instead of templating them, and the dashboard names series with
``${__field.labels.…}``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dsf_compile.inputs.settings import AlertSettings, Settings
from dsf_compile.render.agent_names import AGENT_NAME
from dsf_contract import metrics as names

#: The Prometheus Operator's API: PrometheusRules here, the agent's ServiceMonitor.
MONITORING_API_VERSION = "monitoring.coreos.com/v1"
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
