"""A linear autoregressive forecast on numpy, and a bounded on-disk store of fitted models.

The model is the one upstream's AI-workload scorer fits with a forecasting framework's
linear regression on 10 lags: ``y[t] = b + sum_i w_i * y[t - lags + i]``, fitted by
ordinary least squares with an intercept (the data centred, then the minimum-norm
least-squares solution, as a least-squares library does when there are fewer samples than
lags), and forecast recursively one step at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

LAGS = 10
# A stored model is a few hundred bytes; anything larger is not one of ours.
MAX_MODEL_BYTES = 64 * 1024
_MODEL_FILE = re.compile(r"[0-9a-f]{64}\.json")


@dataclass(frozen=True)
class LinearAR:
    """``intercept`` and one weight per lag, oldest lag first."""

    intercept: float
    weights: tuple[float, ...]

    @property
    def lags(self) -> int:
        """How many past values one step reads."""
        return len(self.weights)


def fit(series: np.ndarray, lags: int = LAGS) -> LinearAR | None:
    """Least-squares fit of ``series`` on its ``lags`` previous values; None when too short."""
    if len(series) < lags + 1:
        return None
    features = sliding_window_view(series[:-1], lags)
    targets = series[lags:]
    feature_means = features.mean(axis=0)
    target_mean = targets.mean()
    weights = np.linalg.lstsq(features - feature_means, targets - target_mean, rcond=None)[0]
    intercept = float(target_mean - feature_means @ weights)
    return LinearAR(intercept, tuple(float(w) for w in weights))


def forecast(model: LinearAR, history: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` values after ``history``, each predicted from the ``lags`` before it."""
    window = list(history[-model.lags :])
    weights = np.asarray(model.weights)
    predicted = []
    for _ in range(steps):
        value = model.intercept + float(weights @ np.asarray(window))
        predicted.append(value)
        window = [*window[1:], value]
    return np.asarray(predicted)


def rmse(predicted: np.ndarray, actual: np.ndarray) -> float:
    """Root mean squared error."""
    return float(np.sqrt(np.mean((predicted - actual) ** 2)))


class ModelStore:
    """Fitted models on disk, one file per key, at most ``max_models`` of them.

    A file's name is the SHA-256 of its key, so a key from a request (a node name) can
    never name a path outside the directory; the file holds that digest, not the key, so
    it is a few hundred bytes whatever the key's length (a 40 MiB node name included).
    Unreadable or foreign files count as absent.
    """

    def __init__(self, directory: Path, max_models: int) -> None:
        self.directory = directory
        self.max_models = max_models
        directory.mkdir(parents=True, exist_ok=True)

    def _path(self, key: str) -> Path:
        return self.directory / f"{_digest(key)}.json"

    def _files(self) -> list[Path]:
        return [p for p in self.directory.iterdir() if _MODEL_FILE.fullmatch(p.name)]

    def load(self, key: str) -> LinearAR | None:
        """The model stored for ``key``, or None."""
        try:
            with self._path(key).open("rb") as handle:
                document = json.loads(handle.read(MAX_MODEL_BYTES + 1))
        except (OSError, ValueError):
            return None
        return _model_from(document, _digest(key))

    def save(self, key: str, model: LinearAR) -> bool:
        """Store ``model`` for ``key``; False when the store is full and ``key`` is new."""
        path = self._path(key)
        if not path.exists() and len(self._files()) >= self.max_models:
            return False
        document = {
            "key": _digest(key),
            "intercept": model.intercept,
            "weights": list(model.weights),
        }
        partial = path.with_suffix(".tmp")
        partial.write_text(json.dumps(document), encoding="utf-8")
        os.replace(partial, path)
        return True

    def clear(self) -> int:
        """Remove every stored model; return how many."""
        removed = 0
        for path in self._files():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
        return removed


def _digest(key: str) -> str:
    """What stands for ``key`` on disk: its SHA-256 (``surrogatepass``: any str encodes)."""
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()


def _model_from(document: object, digest: str) -> LinearAR | None:
    if not isinstance(document, dict) or document.get("key") != digest:
        return None
    intercept, weights = document.get("intercept"), document.get("weights")
    if not isinstance(weights, list) or len(weights) != LAGS:
        return None
    numbers = [intercept, *weights]
    if not all(isinstance(n, int | float) and math.isfinite(n) for n in numbers):
        return None
    return LinearAR(float(intercept), tuple(float(w) for w in weights))  # type: ignore[arg-type]
