"""``backtest`` in bounded memory and time, whatever the history's shape: many series of
one sample each (memory grows with the samples read, not series × steps), items folded
from many series (vectorised like the rest), an export answer parsed as it streams and
an endless line refused at the line cap, each run as a user runs it (a child process,
its own peak memory)."""

from __future__ import annotations

import contextlib
import gzip
import json
import time
import zlib
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from tests.backtest.helpers import dsf_backtest, serving

#: Every run here stays far below this (the unbounded replay needed gigabytes).
PEAK_MIB = 700


def _one_sample_series(count: int, now_s: int) -> bytes:
    """``count`` series of worker01's performance score, one sample each, over the last
    week: half render the item gpu-inference ranks by (folded, one per node), half an item
    of their own."""
    lines = []
    for k in range(count):
        moment = (now_s - 7 * 86_400 + 600 + k * (7 * 86_400 - 1200) // count) * 1000
        device = "3g.48gb" if k % 2 else f"d{k}"
        metric = {
            "__name__": "dynamic_score",
            "ds_cluster": "worker01",
            "ds_score_name": "example_performance_score",
            "ds_app": "app01",
            "ds_device": device,
            "ds_node": f"node{k}",
        }
        lines.append(orjson.dumps({"metric": metric, "values": [k % 90], "timestamps": [moment]}))
    return b"\n".join(lines) + b"\n"


def test_many_one_sample_series_fit_in_the_samples_memory(tmp_path: Path) -> None:
    """20,000 series of one sample each over the default week at the default 30 s step
    (20,161 steps): the replay holds the samples and a row of steps per object, not a row
    per series (which took ~240 KB a series, 4.5 GiB here)."""
    history = tmp_path / "many.jsonl"
    history.write_bytes(_one_sample_series(20_000, int(time.time())))
    run = dsf_backtest("--history", str(history), "--format", "json")
    assert run.code == 0, run.err
    document = json.loads(run.out)
    assert document["steps"] == 20_161
    inference = next(p for p in document["placements"] if p["name"] == "gpu-inference")
    assert inference["selected"]  # the folded item was ranked by
    assert run.rss_mib < PEAK_MIB, f"{run.rss_mib:.0f} MiB"


def test_folded_items_are_computed_without_a_loop_over_the_steps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """1,000 items of two series each over 2,000 steps: the dense item rows are folded
    by numpy over all steps at once; the agent's per-cycle fold (one call per step and
    item, the old way) is never called for them."""
    from dsf_compile.backtest import rebuilt_scores as scores
    from dsf_compile.backtest.history import Series
    from dsf_compile.backtest.score_history import rebuild_all

    calls = 0
    original = scores.fold_scores  # type: ignore[attr-defined]

    def counting(values: Any, how: Any) -> float:
        nonlocal calls
        calls += 1
        return original(values, how)

    monkeypatch.setattr(scores, "fold_scores", counting)
    rng = np.random.default_rng(3)
    steps = np.arange(2_000, dtype=np.int64) * 30_000
    series = [
        Series(
            f"c{item}",
            "s",
            {"node": f"n{half}"},
            np.sort(rng.choice(60_000_000, 500, replace=False)).astype(np.int64),
            rng.uniform(-120, 120, 500),
        )
        for item in range(1_000)
        for half in range(2)
    ]
    rule = scores.ScorerRule("s", 30, "${scoreName}")
    history = rebuild_all(series, {"s": rule}, lambda c, s: "avg", steps)
    table = history.coordinate("s", "s")
    assert table.values.shape == (1_000, 2_000) and table.has_item()
    assert calls == 0
    # the same values as the agent's fold, step by step (checked on a few)
    for step in (0, 777, 1_999):
        for row, cluster in list(enumerate(table.clusters))[:20]:
            items = history.objects[cluster, "s"].item_list(step)
            expected = items[0]["value"] if items else scores._MISSING
            assert table.values[row, step] == expected
    assert calls > 0


class _Export(BaseHTTPRequestHandler):
    """A VictoriaMetrics-like export of 400 MB: series of clusters outside the inventory
    (the answer's bytes, nothing kept), one line at a time."""

    LINES = 4_000
    LINE = orjson.dumps(
        {
            "metric": {
                "__name__": "dynamic_score",
                "ds_cluster": "elsewhere",
                "ds_score_name": "x",
            },
            "values": [1.5] * 9_000,
            "timestamps": list(range(1_700_000_000_000, 1_700_000_000_000 + 9_000)),
        }
    )

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/stream+json")
        self.end_headers()
        with contextlib.suppress(OSError):
            for _ in range(self.LINES):
                self.wfile.write(self.LINE + b"\n")

    def log_message(self, *args: Any) -> None:
        pass


def test_an_export_answer_is_parsed_as_it_streams() -> None:
    """An export answer of ~400 MB is read line by line: the command's peak memory is far
    below the answer (held whole, then split, it was ~2.5 times the answer)."""
    assert len(_Export.LINE) * _Export.LINES > 350 * 1024 * 1024
    with serving(_Export) as url:
        run = dsf_backtest("--history", url, "--format", "json", "--step", "1h")
    assert run.code == 0, run.err
    assert run.rss_mib < 300, f"{run.rss_mib:.0f} MiB"


def _gzip_of_one_line(path: Path, size: int) -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip framing
    block = b'{"metric": {' + b" " * (1024 * 1024 - 12)
    with path.open("wb") as out:
        for _ in range(size // len(block)):
            out.write(packer.compress(block))
            block = b" " * len(block)
        out.write(packer.flush())


def test_an_endless_line_in_a_small_gzip_is_refused_at_the_line_cap(tmp_path: Path) -> None:
    """A ~1 MB gzip of one 1 GiB line: not history, refused at the line cap (located,
    exit 2) in bounded memory (it was held whole, twice)."""
    packed = tmp_path / "one-line.jsonl.gz"
    _gzip_of_one_line(packed, 1024 * 1024 * 1024)
    assert packed.stat().st_size < 4 * 1024 * 1024
    run = dsf_backtest("--history", str(packed), "--step", "1h")
    assert run.code == 2
    assert f"{packed}:1:1: error: a line longer than" in run.err
    assert run.rss_mib < 400, f"{run.rss_mib:.0f} MiB"
    with gzip.open(packed) as text:  # the input is left as it was
        assert text.read(12) == b'{"metric": {'
