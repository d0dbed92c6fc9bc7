"""The agent's counters, gauges and histogram: plain numbers that write their own text.

A series is a number and its line up to the value, written once when the series is made
(:mod:`agent.textformat`); a scrape, in the endpoints' thread, writes ``prefix value``
for each series and makes no sample object. A dozen ``prometheus_client`` children per
scorer, each with its lock and wrapper, held 1.9 MB for 200 scorers and took a lock on
every update; a scorer's series are updated by the event loop alone and take none. The
process-wide families (``shared``) are also updated from the config watch and compliance
threads: their updates take the family's lock, so that none is lost.
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Sequence
from typing import Literal

from agent.textformat import head, number, sample_prefix

SeriesKey = tuple[str, ...]


class Series:
    """One series of a counter or gauge: a number, and its line's text up to the value."""

    __slots__ = ("prefix", "value")

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (a counter never goes down)."""
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount

    def set(self, value: float) -> None:
        """Set a gauge."""
        self.value = float(value)


class _SharedSeries(Series):
    """A series several threads update: each update whole, under the family's lock."""

    __slots__ = ("_lock",)

    def __init__(self, prefix: str, lock: threading.Lock) -> None:
        super().__init__(prefix)
        self._lock = lock

    def inc(self, amount: float = 1.0) -> None:
        with self._lock:
            super().inc(amount)

    def set(self, value: float) -> None:
        with self._lock:
            super().set(value)


class Family:
    """A counter or gauge: its series in the order they were made. Without labels, its
    one series exists from the start (and the family is updated as that series)."""

    def __init__(
        self,
        kind: Literal["counter", "gauge"],
        name: str,
        help: str,
        labels: tuple[str, ...] = (),
        *,
        shared: bool = False,
    ) -> None:
        base = name.removesuffix("_total") if kind == "counter" else name
        self._sample = f"{base}_total" if kind == "counter" else name
        self._labels = labels
        self._lock = threading.Lock() if shared else None
        self._series: dict[SeriesKey, Series] = {}
        self._head = head(self._sample, help, kind)
        if not labels:
            self.labels()

    def labels(self, *values: str) -> Series:
        """The series of ``values`` (one per label), made at first use."""
        key = tuple(str(value) for value in values)
        if len(key) != len(self._labels):
            raise ValueError(f"Incorrect label count (expected {len(self._labels)}, got {key})")
        series = self._series.get(key)
        if series is None:
            prefix = sample_prefix(self._sample, zip(self._labels, key, strict=True))
            made = Series(prefix) if self._lock is None else _SharedSeries(prefix, self._lock)
            series = self._series.setdefault(key, made)
        return series

    def inc(self, amount: float = 1.0) -> None:
        """Add to the series of a family without labels."""
        self.labels().inc(amount)

    def set(self, value: float) -> None:
        """Set the series of a family without labels."""
        self.labels().set(value)

    def remove(self, *values: str) -> None:
        """Drop the series of ``values``."""
        self._series.pop(tuple(str(value) for value in values), None)

    def text(self) -> str:
        """The family in the text format, from each series' line written once."""
        lines = [self._head]
        for series in list(self._series.values()):
            lines.append(f"{series.prefix} {number(series.value)}\n")
        return "".join(lines)


class Histogram:
    """A histogram without labels: a count per bucket (upper bounds, ``+Inf`` added) and
    the sum of what was observed."""

    def __init__(self, name: str, help: str, buckets: Sequence[float]) -> None:
        self._bounds = (*(float(bound) for bound in buckets), float("inf"))
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0
        self._lock = threading.Lock()
        self._head = head(name, help, "histogram")
        self._buckets = [
            sample_prefix(f"{name}_bucket", [("le", number(bound))]) for bound in self._bounds
        ]
        self._name = name

    def observe(self, value: float) -> None:
        """Count ``value`` in the first bucket whose bound is at least ``value``."""
        with self._lock:
            if value == value:  # NaN: in no bucket, as prometheus_client does
                self._counts[bisect.bisect_left(self._bounds, value)] += 1
            self._sum += value

    def text(self) -> str:
        """The buckets (cumulative), the count and the sum, in the text format."""
        with self._lock:
            counts, total = list(self._counts), self._sum
        lines = [self._head]
        seen = 0
        for prefix, count in zip(self._buckets, counts, strict=True):
            seen += count
            lines.append(f"{prefix} {number(seen)}\n")
        lines.append(f"{self._name}_count {number(seen)}\n")
        lines.append(f"{self._name}_sum {number(total)}\n")
        return "".join(lines)
