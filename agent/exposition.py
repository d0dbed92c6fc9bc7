"""``dynamic_score`` kept as text, each scorer's series rendered once by its own cycle.

Rendering every series on every scrape, in the scrape's thread (as ``prometheus_client``
did): one scorer with 150,000 results made each ``/metrics`` take seconds of CPU (holding the GIL
against the scoring loop) and every scrape of every scorer's metrics fail. Here a cycle
that publishes scores renders its own series' lines once, and a scrape only joins the
scorers' texts: its cost is a copy, whatever the scorers answered, and a scorer pays for
its series in its own cycle.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping

from agent.textformat import head, label_value, number
from dsf_contract import metrics

SeriesKey = tuple[str, ...]

NAME = metrics.SCORE
HELP = "Latest score returned by a Scoring API."


def render_series(labels: tuple[str, ...], series: Mapping[SeriesKey, float]) -> bytes:
    """The text-format lines of ``series`` (label values in the order of ``labels``)."""
    lines = []
    for key, value in series.items():
        pairs = ",".join(
            f'{label}="{label_value(v)}"' for label, v in zip(labels, key, strict=True)
        )
        lines.append(f"{NAME}{{{pairs}}} {number(value)}\n")
    return "".join(lines).encode()


class ScoreSeries:
    """The ``dynamic_score`` gauge: per scorer, its series and their rendered text.

    Written by the scoring loop, read by the endpoint server's thread; the lock guards the
    two maps, never a rendering.
    """

    def __init__(self, labels: tuple[str, ...]) -> None:
        self.labels = labels
        self._values: dict[str, Mapping[SeriesKey, float]] = {}
        self._text: dict[str, bytes] = {}
        self._lock = threading.Lock()
        self._head = head(NAME, HELP, "gauge").encode()

    def replace(self, score_name: str, series: Mapping[SeriesKey, float]) -> None:
        """Make ``series`` all of ``score_name``'s series (rendered here, in the caller)."""
        with self._lock:
            unchanged = self._values.get(score_name) == series
        if unchanged:
            return
        text = render_series(self.labels, series)
        with self._lock:
            self._values[score_name] = series
            self._text[score_name] = text

    def drop(self, score_name: str) -> None:
        """Delete every series of ``score_name``."""
        with self._lock:
            self._values.pop(score_name, None)
            self._text.pop(score_name, None)

    def text(self) -> bytes:
        """The whole family in the text format (its header even when it has no series)."""
        with self._lock:
            parts = list(self._text.values())
        return self._head + b"".join(parts)
