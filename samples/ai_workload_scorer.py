"""The AI-workload scorer: a power score and a performance score per ``(app, device)``.

Run: ``python -m samples.ai_workload_scorer [--host 127.0.0.1] [--port 8000]``.

Upstream's ``samples/ai-workload-scorer``, the scorer its placement-optimization example is
built around. Two scorers in one service:

- ``/performance/config``, ``/performance/scoring``: the static scores of the application
  file (``static_score.performance``), whatever the request holds.
- ``/power/config``, ``/power/scoring``: from DCGM's GPU power series, the sigmoid of the
  cluster's forecast power plus the candidate's peak power
  (:mod:`samples.ai_workload_power`). ``POST /power/reset`` drops the stored models.

This module is the service: upstream's settings (each an environment variable and an
option), the ``/config`` documents and the app; the application file is
:mod:`samples.ai_workload_applications`.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import autoregression
from .ai_workload_applications import load_applications
from .ai_workload_power import PowerScorer, PowerSettings
from .cli import base_parser, require_at_least_one, run_main
from .service import ScoringApp

PROMETHEUS_HOST = "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091"
POWER_QUERY = "sum(DCGM_FI_DEV_POWER_USAGE) by (GPU_I_ID, GPU_I_PROFILE, exported_pod, Hostname)"
PERFORMANCE_QUERY = "sum(irate(vllm:generation_tokens_total[1m])) by (pod)"

# name -> (type, upstream's default); each is an environment variable and an option.
SETTINGS: dict[str, tuple[type, Any]] = {
    "MODEL_DIR": (str, "models"),
    "MIN_LENGTH": (int, 20),
    "HORIZON_LENGTH": (int, 10),
    "VALIDATION_LENGTH": (int, 10),  # accepted as upstream does; its scoring never reads it
    "THRESHOLD": (float, 200.0),
    "ALPHA": (float, 1.0),
    "OFFSET": (float, 10.0),
    "MAX_RMSE_THRESHOLD": (float, 20.0),
}


def config(kind: str, description: str, query: str, host: str) -> dict[str, Any]:
    """The ``/<kind>/config`` document (upstream's, with the Prometheus host an option)."""
    return {
        "name": f"ai-workload-{'perf' if kind == 'performance' else kind}-scorer",
        "description": description,
        "source": {
            "type": "Prometheus",
            "host": host,
            "path": "/api/v1/query_range",
            "params": {"query": query, "range": 3600, "step": 60},
        },
        "scoring": {
            "path": f"/{kind}/scoring",
            "params": {
                "name": f"ai_workload_{'perf' if kind == 'performance' else kind}_score",
                "interval": 30,
            },
        },
    }


def _default(name: str, environ: Mapping[str, str]) -> Any:
    kind, fallback = SETTINGS[name]
    text = environ.get(name)
    if text is None:
        return fallback
    try:
        return kind(text)
    except ValueError:
        raise SystemExit(f"error: ${name}: not a valid {kind.__name__}: {text[:40]!r}") from None


def parser(environ: Mapping[str, str] = os.environ) -> argparse.ArgumentParser:
    """The sample's options: the shared ones, upstream's variables, the application file."""
    result = base_parser("The AI-workload scorer (GPU power forecast, static performance).")
    for name, (kind, _) in SETTINGS.items():
        result.add_argument(
            "--" + name.lower().replace("_", "-"),
            type=kind,
            default=_default(name, environ),
            help=f"(${name}, default %(default)s)",
        )
    result.add_argument(
        "--applications", metavar="PATH", help="application file (upstream's config.json)"
    )
    result.add_argument("--prometheus-host", default=PROMETHEUS_HOST, help="source host in /config")
    result.add_argument("--max-series", type=int, default=10_000, help="most series per request")
    result.add_argument(
        "--max-points", type=int, default=100_000, help="most 60 s points per request, all nodes"
    )
    result.add_argument("--max-models", type=int, default=1000, help="most stored models")
    return result


def power_settings(args: argparse.Namespace) -> PowerSettings:
    """The checked settings; SystemExit names the first wrong one."""
    numbers = (args.threshold, args.alpha, args.offset, args.max_rmse_threshold)
    if not all(math.isfinite(n) for n in numbers):
        raise SystemExit("error: THRESHOLD, ALPHA, OFFSET and MAX_RMSE_THRESHOLD must be finite")
    if not -100 <= args.offset <= 100:
        raise SystemExit("error: OFFSET must be in [-100, 100] (scores stay in range)")
    require_at_least_one(
        args, ("min_length", "horizon_length", "max_series", "max_points", "max_models")
    )
    return PowerSettings(
        args.min_length,
        args.horizon_length,
        args.threshold,
        args.alpha,
        args.offset,
        args.max_rmse_threshold,
        args.max_series,
        args.max_points,
    )


def build(args: argparse.Namespace) -> ScoringApp:
    """The app serving both scorers and ``/power/reset``."""
    apps = load_applications(args.applications)
    store = autoregression.ModelStore(Path(args.model_dir), args.max_models)
    power = PowerScorer(apps, power_settings(args), store)
    performance = [dict(entry) for entry in apps.performance]
    return ScoringApp(
        documents={
            "/performance/config": config(
                "performance",
                "A performance score for ai workloads based on token generation rate.",
                PERFORMANCE_QUERY,
                args.prometheus_host,
            ),
            "/power/config": config(
                "power",
                "A power score for ai workloads based on power usage.",
                POWER_QUERY,
                args.prometheus_host,
            ),
        },
        scorers={"/power/scoring": power},
        actions={
            "/performance/scoring": lambda: {
                "results": [
                    {"metric": e.get("metric", {}), "score": float(e.get("score", 0))}
                    for e in performance
                ]
            },
            "/power/reset": lambda: {"status": "ok", "removed": store.clear()},
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    return run_main(build, parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
