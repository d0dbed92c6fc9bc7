"""The quickstart's sample scorer: each series' score is the average of its values.

Run: ``python -m samples.sample_scorer [--host 127.0.0.1] [--port 8000]``.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

from .cli import base_parser, run_main
from .service import ScoringApp

PROMETHEUS_HOST = "http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090"
CPU_QUERY = 'sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", pod!=""}[1m]))'
# Constant on purpose: the agent turns ``meta`` into a metric label, and a value that
# changed every cycle would create a new time series every cycle.
META = "average-of-values-by-sample-scorer"


def config() -> dict[str, Any]:
    """The ``/config`` document (the quickstart's, with the canonical enum case)."""
    return {
        "name": "sample-scorer",
        "description": "A sample score for time series data",
        "source": {
            "type": "Prometheus",
            "host": PROMETHEUS_HOST,
            "path": "/api/v1/query_range",
            "params": {"query": CPU_QUERY, "range": 3600, "step": 60},
        },
        "scoring": {"path": "/scoring", "params": {"name": "sample_my_score", "interval": 30}},
    }


def finite_values(series: dict[str, Any]) -> list[tuple[float, float]]:
    """The ``(time, value)`` points of a series whose value parses to a finite number."""
    points = []
    for timestamp, text in series.get("values", []):
        try:
            value = float(text)
        except ValueError:
            continue
        if math.isfinite(value):
            points.append((float(timestamp), value))
    return points


def score(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One result per series: the mean of its finite values, with its labels plus ``meta``.

    A series with no finite value (empty, or only ``NaN``/``Inf``) gets no result: a
    score must be a finite number.
    """
    results = []
    for series in data:
        values = [value for _, value in finite_values(series)]
        if values:
            metric = {**series.get("metric", {}), "meta": META}
            results.append({"metric": metric, "score": math.fsum(values) / len(values)})
    return results


def build(args: argparse.Namespace) -> ScoringApp:
    """The app serving ``/config`` and ``/scoring``."""
    return ScoringApp(documents={"/config": config()}, scorers={"/scoring": score})


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    return run_main(build, base_parser("The sample time-series scorer (average of values)."), argv)


if __name__ == "__main__":
    raise SystemExit(main())
