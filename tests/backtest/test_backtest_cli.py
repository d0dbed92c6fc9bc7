"""``dsf-compile backtest`` as a user runs it: on the example fleet, from an export file,
from real Prometheus (backfilled with promtool) and real VictoriaMetrics (``/api/v1/import``),
and on bad histories."""

from __future__ import annotations

import contextlib
import gzip
import json
import shutil
import socket
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.agent.conftest import (
    backfilled_prometheus,
    import_into_victoria_metrics,
    started_victoria_metrics,
)
from tests.backtest import history_data
from tests.backtest.helpers import backtest, serving, window_args
from tests.fleet_repo import copy_fleet


def replay_json(history: str, day: Any, *extra: str) -> dict[str, Any]:
    code, out, err = backtest("--history", history, *window_args(day), "--format", "json", *extra)
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    document.pop("source")
    return document


def test_file_replay_reports_every_key(export_file: Path, day: Any) -> None:
    document = replay_json(str(export_file), day)
    assert document["steps"] == 289 and document["step"] == "5m"
    inference = next(p for p in document["placements"] if p["name"] == "gpu-inference")
    assert set(inference) == {
        "namespace",
        "name",
        "changes",
        "changesPerDay",
        "churn",
        "selected",
        "timeline",
        "minMargin",
        "expiredSteps",
        "meanLoss",
        "warnings",
    }
    # random scores: the Placement flips, each flip moves one cluster out and one in
    assert inference["changes"] > 10
    assert inference["churn"] == 2 * inference["changes"]
    assert inference["changes"] == len(inference["timeline"]) - 1
    assert inference["changesPerDay"] == inference["changes"]
    # worker02's hour-long gap expires its object: counted, and it is never decided then
    assert inference["expiredSteps"] >= 1
    # edge01 appears six hours late: never before then
    assert set(inference["selected"]) <= {"worker01", "worker02", "edge01"}
    assert abs(sum(inference["selected"].values()) - 1.0) < 0.001
    assert inference["minMargin"]["value"] >= 0


def test_gzip_and_saved_history_replay_the_same(
    export_file: Path, day: Any, tmp_path: Path
) -> None:
    plain = replay_json(str(export_file), day)
    packed = tmp_path / "history.jsonl.gz"
    packed.write_bytes(gzip.compress(export_file.read_bytes()))
    assert replay_json(str(packed), day) == plain
    saved = tmp_path / "saved.jsonl.gz"
    replay_json(str(export_file), day, "--save-history", str(saved))
    assert replay_json(str(saved), day) == plain


def test_prometheus_and_victoria_metrics_replay_as_the_file(
    export_file: Path, day: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = replay_json(str(export_file), day)
    (tmp_path / "prom").mkdir()
    with backfilled_prometheus(tmp_path / "prom", history_data.openmetrics(day[2])) as url:
        assert replay_json(url, day) == expected
        saved = tmp_path / "from-prometheus.jsonl"
        replay_json(url, day, "--save-history", str(saved))
        assert replay_json(str(saved), day) == expected
    (tmp_path / "vm").mkdir()
    with started_victoria_metrics(tmp_path / "vm") as url:
        import_into_victoria_metrics(
            url, "/api/v1/import", history_data.export_text(day[2]).encode()
        )
        assert replay_json(url, day) == expected


def test_steady_sweep_baseline_and_gate(export_file: Path, day: Any, tmp_path: Path) -> None:
    base = tmp_path / "base.json"
    code, out, _ = backtest("--history", str(export_file), *window_args(day), "--format", "json")
    base.write_text(out)
    code, out, err = backtest(
        "default/gpu-inference",
        "--history",
        str(export_file),
        *window_args(day),
        "--format",
        "json",
        "--steady",
        "0,5",
        "--baseline",
        str(base),
    )
    assert code == 0, err
    (inference,) = json.loads(out)["placements"]
    by_weight = {s["steady"]: s for s in inference["sweep"]}
    assert by_weight[5]["changes"] < by_weight[0]["changes"]
    assert by_weight[5]["meanLoss"] > by_weight[0]["meanLoss"] == 0.0
    assert inference["baseline"]["changes"] == inference["changes"]
    code, out, err = backtest(
        "--history",
        str(export_file),
        *window_args(day),
        "--format",
        "markdown",
        "--baseline",
        str(base),
        "--max-changes-per-day",
        "5",
    )
    assert code == 1
    assert "default/gpu-inference" in err and "changes per day" in err
    assert "```mermaid\ngantt\n" in out and "→" in out


def test_a_broken_line_is_located(tmp_path: Path, export_file: Path, day: Any) -> None:
    broken = tmp_path / "broken.jsonl"
    lines = export_file.read_text().splitlines()
    lines[3] = lines[3][:40]
    broken.write_text("\n".join(lines) + "\n")
    code, _, err = backtest("--history", str(broken), *window_args(day))
    assert code == 2  # not history: nothing compared (exit 1 is only the gate's)
    assert f"{broken}:4:" in err and "Traceback" not in err


def test_a_line_that_is_not_a_series(tmp_path: Path, day: Any) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        '{"metric": {"__name__": "dynamic_score", "ds_cluster": "worker01", '
        '"ds_score_name": "example_performance_score"}, "values": [1, 2], '
        '"timestamps": [1]}\n'
    )
    code, _, err = backtest("--history", str(bad), *window_args(day))
    assert code == 2 and f"{bad}:1:1: error: timestamps:" in err


class _Html(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = b"<html><body>login</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


class _Endless(_Html):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        with contextlib.suppress(OSError):
            while True:
                self.wfile.write(b'{"metric": {' + b" " * 65536)


def test_an_html_answer_an_unreachable_and_an_endless_source(tmp_path: Path, day: Any) -> None:
    with serving(_Html) as url:
        code, _, err = backtest("--history", url, *window_args(day))
    assert code == 2 and "not a Prometheus API answer" in err and "Traceback" not in err
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        closed = sock.getsockname()[1]
    code, _, err = backtest("--history", f"http://127.0.0.1:{closed}", *window_args(day))
    assert code == 2 and "connection refused" in err
    fleet = copy_fleet(tmp_path / "fleet", with_rendered=False)
    settings = fleet / "dsf.yaml"
    settings.write_text(settings.read_text() + "history:\n  maxBytes: 1048576\n")
    with serving(_Endless) as url:
        code, _, err = backtest("--history", url, *window_args(day), root=fleet)
    assert code == 2 and "history.maxBytes" in err and "Traceback" not in err


def test_missing_file_and_usage_errors(day: Any, tmp_path: Path) -> None:
    code, _, err = backtest("--history", str(tmp_path / "none.jsonl"), *window_args(day))
    assert code == 2 and "cannot read" in err
    code, _, err = backtest("--history", "x", "--from", "2d", "--step", "1s")
    assert code == 2 and "history.maxSteps" in err and "--step" in err
    code, _, err = backtest("--history", "x", "default/nothing")
    assert code == 2 and "no Placement default/nothing" in err


#: A node_modules folder with ``mermaid`` and ``jsdom`` (``.ci/run`` installs them).
MERMAID_MODULES = "DSF_MERMAID_NODE_MODULES"


def test_markdown_gantt_charts_parse_with_mermaid(export_file: Path, day: Any) -> None:
    """Mermaid's own parser (``mermaid.parse`` of mermaid 11, run by node in jsdom) reads
    every chart; a broken chart is caught by it (checked alongside)."""
    import os

    modules = os.environ.get(MERMAID_MODULES)
    if not modules or shutil.which("node") is None:
        pytest.skip(f"node and ${MERMAID_MODULES} (mermaid, jsdom from npm; .ci/run) needed")
    code, out, err = backtest(
        "--history", str(export_file), *window_args(day), "--format", "markdown", "--steady", "0,3"
    )
    assert code == 0, err
    script = Path(__file__).with_name("mermaid_check.mjs")

    def parse(text: str) -> dict[str, Any]:
        done = subprocess.run(
            ["node", str(script), modules],
            input=text,
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )
        result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
        return result

    checked = parse(out)
    assert checked["blocks"] == out.count("```mermaid") >= 3
    assert checked["failed"] == 0, checked["errors"]
    assert parse("```mermaid\nganttx\n    title x\n```\n")["failed"] == 1


def test_a_broken_gzip_and_a_file_over_the_cap(tmp_path: Path, export_file: Path, day: Any) -> None:
    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(export_file.read_bytes())[:2000])
    code, _, err = backtest("--history", str(broken), *window_args(day))
    assert code == 2 and "not a gzip file" in err and "Traceback" not in err
    fleet = copy_fleet(tmp_path / "fleet", with_rendered=False)
    settings = fleet / "dsf.yaml"
    settings.write_text(settings.read_text() + "history:\n  maxBytes: 4096\n")
    one_line = tmp_path / "one-line.jsonl"
    one_line.write_bytes(b'{"metric": {' + b" " * 100_000)
    code, _, err = backtest("--history", str(one_line), *window_args(day), root=fleet)
    assert code == 2 and "history.maxBytes" in err


def test_no_credential_in_the_url_and_the_token_is_sent(day: Any) -> None:
    code, out, err = backtest("--history", "http://reader:s3cret@127.0.0.1:9/", *window_args(day))
    assert code == 2 and "DSF_HISTORY_TOKEN" in err and "s3cret" not in err + out
    seen: list[str] = []

    class _Recording(_Html):
        def do_GET(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            super().do_GET()

    import os

    os.environ["DSF_HISTORY_TOKEN"] = "t0ken"
    try:
        with serving(_Recording) as url:
            code, _, err = backtest("--history", url, *window_args(day))
    finally:
        del os.environ["DSF_HISTORY_TOKEN"]
    assert code == 2 and seen and set(seen) == {"Bearer t0ken"} and "t0ken" not in err
