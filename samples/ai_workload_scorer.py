"""The AI-workload scorer: a power score and a performance score per ``(app, device)``.

Run: ``python -m samples.ai_workload_scorer [--host 127.0.0.1] [--port 8000]``.

Upstream's ``samples/ai-workload-scorer``, the scorer its placement-optimization example is
built around. Two scorers in one service:

- ``/performance/config``, ``/performance/scoring``: the static scores of the application
  file (``static_score.performance``), whatever the request holds.
- ``/power/config``, ``/power/scoring``: from DCGM's GPU power series (labels
  ``Hostname``, ``GPU_I_ID``, ``GPU_I_PROFILE``, ``exported_pod``). Per node, the total
  power on a 60 s grid (forward-filled) is forecast ``HORIZON_LENGTH`` steps ahead by a
  linear autoregression on 10 lags (:mod:`samples.autoregression`), or averaged when the
  node has fewer than ``MIN_LENGTH`` grid points; the cluster's base is the sum of the
  nodes' forecast means. Per ``(app, device)`` candidate, its power is the largest over the
  grid times of the mean, across the nodes whose grid has that time, of that app's power
  on that device profile (0 where a node has no sample), and the score is
  ``(1 - 1/(1 + e^(-ALPHA*(base + power - THRESHOLD)))) * (100 - OFFSET) + OFFSET``,
  ``OFFSET`` when no series is the candidate's. ``POST /power/reset`` drops the models.

A stored model is reused while its RMSE on the last ``HORIZON_LENGTH`` points stays at
most ``MAX_RMSE_THRESHOLD``; otherwise it is refitted on the whole series and stored.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from . import autoregression
from .cli import base_parser, run_main
from .service import BadRequestError, ScoringApp

PROMETHEUS_HOST = "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091"
POWER_QUERY = "sum(DCGM_FI_DEV_POWER_USAGE) by (GPU_I_ID, GPU_I_PROFILE, exported_pod, Hostname)"
PERFORMANCE_QUERY = "sum(irate(vllm:generation_tokens_total[1m])) by (pod)"
GRID_MS = 60_000

# Upstream's application file (its static/config.json): two apps, three device layouts.
_DEVICES = ["all", "2g.24gb", "3g.48gb"]
_PERFORMANCE = {
    ("app01", "all"): 80,
    ("app02", "all"): 80,
    ("app01", "3g.48gb"): 60,
    ("app02", "3g.48gb"): 55,
    ("app01", "2g.24gb"): 10,
    ("app02", "2g.24gb"): 15,
}
DEFAULT_APPLICATIONS: dict[str, Any] = {
    "applications": [
        {"name": name, "device_candidates": _DEVICES, "pod_alias": [f"{name}*"]}
        for name in ("app01", "app02")
    ],
    "static_score": {
        "performance": [
            {"metric": {"app": app, "device": device}, "score": score}
            for (app, device), score in _PERFORMANCE.items()
        ]
    },
}

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
MAX_POD_NAME = 253
MAX_GLOBS = 1000


@dataclass(frozen=True)
class Applications:
    """The application file: candidates in order, pod-name globs, static performance scores."""

    candidates: tuple[tuple[str, str], ...]
    globs: tuple[tuple[re.Pattern[str], str], ...]
    performance: tuple[dict[str, Any], ...]

    def app_of(self, pod: str) -> str:
        """The first application whose glob matches the whole pod name, else ``unknown``."""
        if not pod or len(pod) > MAX_POD_NAME:
            return "unknown"
        return next((app for pattern, app in self.globs if pattern.fullmatch(pod)), "unknown")


def glob_pattern(glob: str) -> re.Pattern[str]:
    """``*`` any text, ``?`` one character, everything else literal; an empty glob matches ''."""
    parts = {"*": ".*", "?": "."}
    return re.compile("".join(parts.get(c) or re.escape(c) for c in glob.strip()))


def device_of(profile: str) -> str:
    """The device candidate of a MIG profile label, as upstream names them."""
    if not profile:
        return "unknown"
    for prefix, device in (("3g.47gb", "3g.48gb"), ("2g", "2g.24gb"), ("1g", "1g.12gb")):
        if profile.startswith(prefix):
            return device
    return "all"


def parse_applications(document: Any, where: str) -> Applications:
    """Check an application file and build its tables; SystemExit says what is wrong."""
    if not isinstance(document, dict) or not isinstance(document.get("applications"), list):
        raise SystemExit(f"{where}: error: applications: must be a list")
    candidates: list[tuple[str, str]] = []
    globs: list[tuple[re.Pattern[str], str]] = []
    for index, app in enumerate(document["applications"]):
        name, devices, aliases = _application(app, f"{where}: error: applications[{index}]")
        candidates += [(name, device) for device in devices]
        globs += [(glob_pattern(alias), name) for alias in aliases if alias]
    performance = (document.get("static_score") or {}).get("performance") or []
    if not isinstance(performance, list) or not all(_score_entry(e) for e in performance):
        raise SystemExit(
            f"{where}: error: static_score.performance: items must be "
            '{"metric": {str: str}, "score": number}'
        )
    if len(globs) > MAX_GLOBS:
        raise SystemExit(f"{where}: error: more than {MAX_GLOBS} pod_alias globs")
    return Applications(tuple(candidates), tuple(globs), tuple(performance))


def _application(app: Any, where: str) -> tuple[str, list[str], list[str]]:
    if isinstance(app, dict):
        name, devices = app.get("name"), app.get("device_candidates", [])
        aliases = app.get("pod_alias") or []
        if isinstance(name, str) and _strings(devices) and _strings(aliases):
            return name, devices, aliases
    raise SystemExit(f"{where}: needs a name and lists of strings")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _score_entry(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("metric", {}), dict):
        return False
    score = entry.get("score", 0)
    return (
        all(isinstance(v, str) for v in entry.get("metric", {}).values())
        and isinstance(score, int | float)
        and not isinstance(score, bool)
        and math.isfinite(score)
    )


@dataclass(frozen=True)
class PowerSettings:
    """Upstream's environment variables, checked."""

    min_length: int
    horizon: int
    threshold: float
    alpha: float
    offset: float
    max_rmse: float
    max_series: int
    max_points: int


@dataclass
class _Column:
    """One power series of a node: its values by grid-independent time (ms)."""

    candidate: tuple[str, str] | None  # None: counts in the node's total only
    values: dict[int, float] = field(default_factory=dict)


@dataclass
class _Node:
    columns: list[_Column] = field(default_factory=list)

    def times(self) -> set[int]:
        return {t for column in self.columns for t in column.values}


def _time_ms(timestamp: float) -> int:
    if not math.isfinite(timestamp):
        raise BadRequestError("a sample time is not a finite number")
    return round(timestamp * 1000)


def _parse_value(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise BadRequestError(f"a sample value is not a number: {text[:40]!r}") from None


def group_by_node(
    data: list[dict[str, Any]], apps: Applications, settings: PowerSettings
) -> dict[str, _Node]:
    """The series per node, in first-seen order; series with no pod label are dropped."""
    if len(data) > settings.max_series:
        raise BadRequestError(f"more than {settings.max_series} series")
    known = set(apps.candidates)
    nodes: dict[str, _Node] = {}
    for series in data:
        metric = series.get("metric", {})
        pod = metric.get("exported_pod", "unknown")
        if pod == "unknown":
            continue
        candidate = (apps.app_of(pod), device_of(metric.get("GPU_I_PROFILE", "all")))
        # A series with no Hostname still counts in the "unknown" node's total (as upstream).
        in_candidate = candidate in known and "Hostname" in metric
        column = _Column(candidate if in_candidate else None)
        for timestamp, text in series.get("values", []):
            column.values[_time_ms(timestamp)] = _parse_value(text)
        nodes.setdefault(metric.get("Hostname", "unknown"), _Node()).columns.append(column)
    return nodes


def _sum(values: list[float]) -> float:
    # pandas' row sum: NaN skipped, 0 when nothing is left.
    return math.fsum(v for v in values if not math.isnan(v)) if values else 0.0


def node_grids(nodes: dict[str, _Node], max_points: int) -> dict[str, list[int]]:
    """Each node's 60 s grid from its first to its last sample; at most ``max_points`` in all
    (a few samples a week apart must not cost a week of minutes per series)."""
    spans = {}
    for name, node in nodes.items():
        times = node.times()
        spans[name] = (min(times), (max(times) - min(times)) // GRID_MS + 1) if times else (0, 0)
    if sum(count for _, count in spans.values()) > max_points:
        raise BadRequestError(f"the nodes' series span more than {max_points} points of 60 s")
    return {
        name: [first + i * GRID_MS for i in range(count)] for name, (first, count) in spans.items()
    }


def _by_time(columns: list[_Column]) -> dict[int, list[float]]:
    # one pass over the samples, not one per grid point and column
    found: dict[int, list[float]] = {}
    for column in columns:
        for time, value in column.values.items():
            found.setdefault(time, []).append(value)
    return found


def total_power(node: _Node, grid: list[int]) -> np.ndarray:
    """The node's total on the grid: the sum at a sampled time, else the previous total."""
    sampled = _by_time(node.columns)
    totals: list[float] = []
    for time in grid:
        present = sampled.get(time)
        totals.append(_sum(present) if present else (totals[-1] if totals else math.nan))
    return np.asarray(totals, dtype=float)


def candidate_power(node: _Node, grid: list[int], candidate: tuple[str, str]) -> list[float] | None:
    """The candidate's power on the node per grid row (0 where unsampled); None if it has no series."""
    columns = [c for c in node.columns if c.candidate == candidate]
    if not columns:
        return None
    sampled = _by_time(columns)
    return [_sum(sampled.get(time, [])) for time in grid]


def sigmoid_score(estimate: float, settings: PowerSettings) -> float:
    """``(1 - 1/(1 + e^(-ALPHA*(estimate - THRESHOLD)))) * (100 - OFFSET) + OFFSET``, overflow-safe."""
    z = settings.alpha * (estimate - settings.threshold)
    if math.isnan(z):
        return settings.offset
    # 1 - 1/(1 + e^-z) = 1/(1 + e^z), written so that neither exponent overflows.
    headroom = 1.0 / (1.0 + math.exp(z)) if z <= 0 else math.exp(-z) / (1.0 + math.exp(-z))
    return headroom * (100.0 - settings.offset) + settings.offset


@dataclass
class PowerScorer:
    """The power scoring function, with its stored models (one request at a time)."""

    apps: Applications
    settings: PowerSettings
    store: autoregression.ModelStore
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One result per candidate, in the application file's order."""
        with self.lock:
            nodes = group_by_node(data, self.apps, self.settings)
            grids = node_grids(nodes, self.settings.max_points)
            base = math.fsum(
                self.node_base(name, total_power(nodes[name], grid)) for name, grid in grids.items()
            )
        return [
            {
                "metric": {"app": app, "device": device},
                "score": self.candidate_score(nodes, grids, (app, device), base),
            }
            for app, device in self.apps.candidates
        ]

    def candidate_score(
        self,
        nodes: dict[str, _Node],
        grids: dict[str, list[int]],
        candidate: tuple[str, str],
        base: float,
    ) -> float:
        """The sigmoid of the base plus the candidate's peak power; ``OFFSET`` with no series."""
        by_time: dict[int, list[float]] = {}
        for name, node in nodes.items():
            history = candidate_power(node, grids[name], candidate)
            for time, value in zip(grids[name], history or (), strict=False):
                by_time.setdefault(time, []).append(value)
        if not by_time:
            return self.settings.offset
        # At each time, the mean over the nodes whose grid has that time.
        peak = max(math.fsum(values) / len(values) for values in by_time.values())
        return sigmoid_score(base + peak, self.settings)

    def node_base(self, name: str, totals: np.ndarray) -> float:
        """The mean of the node's forecast, or of its totals when the series is short."""
        settings = self.settings
        if len(totals) < settings.min_length:
            return float(np.mean(totals))
        model = self.store.load(name)
        if model is None or self._drifted(model, totals):
            # Fewer points than lags: nothing to fit; the stored model stays, else the mean.
            fitted = autoregression.fit(totals)
            if fitted is not None:
                model = fitted
                if not self.store.save(name, model):
                    print(f"model store full: the model of {name!r} is not kept", file=sys.stderr)
        if model is None:
            return float(np.mean(totals))
        return float(np.mean(autoregression.forecast(model, totals, settings.horizon)))

    def _drifted(self, model: autoregression.LinearAR, totals: np.ndarray) -> bool:
        horizon = self.settings.horizon
        train, held_out = totals[:-horizon], totals[-horizon:]
        if len(train) < model.lags:
            return True
        error = autoregression.rmse(autoregression.forecast(model, train, horizon), held_out)
        return error > self.settings.max_rmse


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
    for name in ("min_length", "horizon_length", "max_series", "max_points", "max_models"):
        if getattr(args, name) < 1:
            raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1")
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


def load_applications(path: str | None) -> Applications:
    """The application file at ``path``, or upstream's when None."""
    if path is None:
        return parse_applications(DEFAULT_APPLICATIONS, "built-in applications")
    try:
        with open(path, "rb") as handle:
            document = json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: error: {error}") from None
    return parse_applications(document, path)


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
