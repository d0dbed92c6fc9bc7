"""The simple prediction scorer: a least-squares linear trend per series, one range ahead.

Run: ``python -m samples.prediction_scorer [--host 127.0.0.1] [--port 8000]``; with
``--name llm-forecast-scorer --score-name llm_forecast_score --interval 60 --step 60`` the
same program stands in for upstream's external LLM forecast scorer.

For a series with finite points ``(t_i, y_i)``:

- fit ``y = a + b*t`` by least squares (``b = 0`` when all points share one time);
- ``c`` is the fitted value at the last time ``t_n`` (the trend's "now");
- ``p = c + b*H`` is the prediction one range ahead, ``H = t_n - t_1`` (the span the
  series covers, so the horizon follows whatever range the agent queried);
- ``score = -100 * (p - c) / (|p| + |c|)`` (``0`` when ``p = c = 0``).

Because ``|p - c| <= |p| + |c|`` the score is always in ``[-100, 100]``: a flat trend
scores 0, a load predicted to rise scores below 0 (a worse placement), and a load
predicted to fall to zero scores 100. The formula is scale-free: CPU cores and bytes
get comparable scores.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import Any

from .cli import add_schedule_options, base_parser, run_main
from .sample_scorer import CPU_QUERY, PROMETHEUS_HOST, finite_values
from .service import ScoreFunction, ScoringApp


def linear_fit(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Least-squares ``(intercept, slope)`` of ``points``; slope 0 when times do not vary."""
    n = len(points)
    mean_t = math.fsum(t for t, _ in points) / n
    mean_y = math.fsum(y for _, y in points) / n
    spread = math.fsum((t - mean_t) ** 2 for t, _ in points)
    if spread == 0:
        return mean_y, 0.0
    slope = math.fsum((t - mean_t) * (y - mean_y) for t, y in points) / spread
    return mean_y - slope * mean_t, slope


def predict(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """``(c, p)``: the trend's value at the last time and one series span later."""
    intercept, slope = linear_fit(points)
    first, last = points[0][0], points[-1][0]
    current = intercept + slope * last
    return current, current + slope * (last - first)


def normalized_score(current: float, predicted: float) -> float:
    """``-100 * (p - c) / (|p| + |c|)``, in [-100, 100]; 0 when both are 0."""
    scale = abs(predicted) + abs(current)
    if scale == 0 or not math.isfinite(scale):
        return 0.0
    # + 0.0 turns -0.0 into 0.0 so a flat trend prints as 0.0.
    return max(-100.0, min(100.0, -100.0 * (predicted - current) / scale)) + 0.0


def scorer(meta: str) -> ScoreFunction:
    """The scoring function; ``meta`` is a constant label (a varying one would add series)."""

    def score(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        results = []
        for series in data:
            points = sorted(finite_values(series))
            if points:
                current, predicted = predict(points)
                metric = {**series.get("metric", {}), "meta": meta}
                results.append({"metric": metric, "score": normalized_score(current, predicted)})
        return results

    return score


def config(
    name: str, score_name: str, interval: int, step: int, description: str
) -> dict[str, Any]:
    """The ``/config`` document."""
    return {
        "name": name,
        "description": description,
        "source": {
            "type": "Prometheus",
            "host": PROMETHEUS_HOST,
            "path": "/api/v1/query_range",
            "params": {"query": CPU_QUERY, "range": 3600, "step": step},
        },
        "scoring": {"path": "/scoring", "params": {"name": score_name, "interval": interval}},
    }


def parser() -> argparse.ArgumentParser:
    """The sample's options (the shared ones plus its identity)."""
    result = base_parser("The simple prediction scorer (least-squares linear trend).")
    result.add_argument("--name", default="simple-prediction-scorer", help="scorer name in /config")
    result.add_argument(
        "--score-name", default="simple_prediction_score", help="score name in /config"
    )
    add_schedule_options(result, interval=30, step=30)
    result.add_argument(
        "--description",
        default="A simple prediction score for time series data",
        help="description in /config",
    )
    return result


def build(args: argparse.Namespace) -> ScoringApp:
    """The app serving ``/config`` and ``/scoring``."""
    document = config(args.name, args.score_name, args.interval, args.step, args.description)
    return ScoringApp(
        documents={"/config": document},
        scorers={"/scoring": scorer(f"linear-trend-by-{args.name}")},
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    return run_main(build, parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
