"""A day of ``dynamic_score`` history for the example fleet: gaps, an expiry, a cluster
appearing late, a series split over two lines, values past ±100."""

from __future__ import annotations

import json
import random
import time
from typing import Any

SCORE = "example_performance_score"
POWER = "example_powerconsumption_score"
STEP = 300


def window() -> tuple[int, int]:
    """A day ending three hours ago on the hour (Prometheus backfills whole past blocks)."""
    end = int(time.time()) // 3600 * 3600 - 3 * 3600
    return end - 86_400, end


def series(start: int, end: int, seed: int = 7) -> list[dict[str, Any]]:
    """Export lines (VictoriaMetrics' format) of the example fleet's performance scores."""
    rng = random.Random(seed)
    lines: list[dict[str, Any]] = []
    for cluster in ("worker01", "worker02", "edge01"):
        for device in ("3g.48gb", "2g.24gb"):
            times, values = [], []
            first = start - 600 if cluster != "edge01" else start + 6 * 3600  # edge01: late
            for moment in range(first, end + 1, 60):
                if cluster == "worker02" and start + 3600 <= moment < start + 7200:
                    continue  # a gap of an hour: the object expires
                times.append(moment * 1000)
                values.append(round(rng.uniform(-150, 160), 3))
            metric: dict[str, str] = {
                "__name__": "dynamic_score",
                "ds_cluster": cluster,
                "ds_score_name": SCORE,
                "ds_app": "app01",
                "ds_device": device,
                "ds_node": "",
                "instance": "10.0.0.1:8080",
            }
            half = len(times) // 2
            # one series split over two lines (another scraper's instance): folded
            lines.append({"metric": metric, "values": values[:half], "timestamps": times[:half]})
            lines.append(
                {
                    "metric": {**metric, "instance": "10.0.0.2:8080"},
                    "values": values[half - 5 :],
                    "timestamps": times[half - 5 :],
                }
            )
    return lines


def export_text(lines: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(line) + "\n" for line in lines)


def openmetrics(lines: list[dict[str, Any]]) -> str:
    """The same samples for ``promtool tsdb create-blocks-from openmetrics`` (one series
    per label set, ``instance`` kept: Prometheus keeps the two scrapers apart too)."""
    out = ["# TYPE dynamic_score gauge"]
    rows = []
    for line in lines:
        labels = ",".join(
            f'{k}="{v}"' for k, v in sorted(line["metric"].items()) if k != "__name__"
        )
        for moment, value in zip(line["timestamps"], line["values"], strict=True):
            rows.append((labels, moment, value))
    # OpenMetrics wants each series' samples together and in time order
    rows.sort()
    seen = set()
    for labels, moment, value in rows:
        if (labels, moment) in seen:
            continue
        seen.add((labels, moment))
        out.append(f"dynamic_score{{{labels}}} {value} {moment / 1000:.3f}")
    out.append("# EOF")
    return "\n".join(out) + "\n"
