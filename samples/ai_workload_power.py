"""The AI-workload scorer's power model: a GPU power score per ``(app, device)``.

From DCGM's GPU power series (labels ``Hostname``, ``GPU_I_ID``, ``GPU_I_PROFILE``,
``exported_pod``): per node, the total power on a 60 s grid (forward-filled) is forecast
``HORIZON_LENGTH`` steps ahead by a linear autoregression on 10 lags
(:mod:`samples.autoregression`), or averaged when the node has fewer than ``MIN_LENGTH``
grid points; the cluster's base is the sum of the nodes' forecast means. Per candidate,
its power is the largest over the grid times of the mean, across the nodes whose grid has
that time, of that app's power on that device profile (0 where a node has no sample), and
the score is the sigmoid of base plus power (:func:`sigmoid_score`). :class:`PowerScorer`
keeps the fitted models in a :class:`~samples.autoregression.ModelStore`.
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from . import autoregression
from .ai_workload_applications import Applications, device_of
from .service import BadRequestError

GRID_MS = 60_000


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
                    shown = repr(name[:80]) + ("..." if len(name) > 80 else "")
                    print(f"model store full: the model of {shown} is not kept", file=sys.stderr)
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
