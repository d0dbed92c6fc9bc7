"""What ``backtest`` refuses or flags, as a user meets it: numbers that are not finite, a
baseline that is not a backtest's JSON, a gate given nonsense, a save path that is not a
regular file, scores without history, a window wider than the history, and the gate's
verdict beside the report (never instead of it)."""

from __future__ import annotations

import json
import os
import stat
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.backtest.helpers import backtest, serving, window_args


def _strict_json(text: str) -> Any:
    """RFC 8259 JSON: NaN and Infinity are not numbers of it."""

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def _problems_located(out: str, where: str) -> list[dict[str, Any]]:
    document = _strict_json(out)  # one document, even on an error
    assert document["ok"] is False
    problems: list[dict[str, Any]] = document["problems"]
    assert problems and all(where in json.dumps(p) for p in problems), problems
    return problems


class _InfiniteTime(BaseHTTPRequestHandler):
    """Prometheus' API (no export) answering a sample at time ``inf``."""

    def do_GET(self) -> None:
        if self.path.startswith("/api/v1/export"):
            self.send_response(404)
            self.end_headers()
            return
        metric = {
            "__name__": "dynamic_score",
            "ds_cluster": "worker01",
            "ds_score_name": "example_performance_score",
        }
        body = json.dumps(
            {
                "status": "success",
                "data": {
                    "resultType": "matrix",
                    "result": [{"metric": metric, "values": [["inf", "1"]]}],
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


def test_a_sample_at_time_inf_is_a_located_error(day: Any) -> None:
    with serving(_InfiniteTime) as url:
        code, out, err = backtest("--history", url, *window_args(day), "--format", "json")
        assert code == 2, err
        _problems_located(out, f"{url}/api/v1/query")
        code, out, err = backtest("--history", url, *window_args(day))
    assert code == 2 and f"{url}/api/v1/query:0:0: error:" in err and "Traceback" not in err


@pytest.mark.parametrize("moment", ["999999999w", "9999999d1w", "0001-01-01T00:00:00Z"])
def test_a_window_out_of_time_is_a_usage_error(moment: str, export_file: Path) -> None:
    for flag in ("--from", "--to"):
        code, out, err = backtest("--history", str(export_file), flag, moment, "--format", "json")
        assert code == 2 and "Traceback" not in err
        document = _strict_json(out)  # a usage error too is one document (its reason a problem)
        assert document["ok"] is False
        assert "between 1970 and 9999" in document["problems"][0]["message"]


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ("[" * 100_000 + "]" * 100_000, ""),  # RecursionError in a recursive parser
        (
            '{"placements": [{"namespace": "a", "name": "b", "changes": 1e400, "churn": 0, "meanLoss": 0}]}',
            "",  # past a double: not JSON a parser reads as a number
        ),
        (
            '{"placements": [{"namespace": "a", "name": "b", "changes": 1, "churn": 0, "meanLoss": NaN}]}',
            "",
        ),
        (
            '{"placements": [{"namespace": "a", "name": "b", "changes": 1, "churn": 0, "meanLoss": 1e999}]}',
            "",
        ),
        (
            '{"placements": [{"namespace": "a", "name": "b", "changes": true, "churn": 0, "meanLoss": 0}]}',
            "placements[0]",
        ),
        (
            '{"placements": [{"namespace": "a", "name": "b", "changes": -1, "churn": 0, "meanLoss": 0}]}',
            "placements[0]",
        ),
        ('{"placements": {}}', "placements"),
    ],
)
def test_a_baseline_that_is_not_a_backtests_json_is_refused(
    content: str, field: str, export_file: Path, day: Any, tmp_path: Path
) -> None:
    baseline = tmp_path / "base.json"
    baseline.write_text(content)
    args = ["--history", str(export_file), *window_args(day), "--baseline", str(baseline)]
    code, out, err = backtest(*args, "--format", "json")
    assert code == 2, err
    (problem,) = _problems_located(out, str(baseline))
    assert problem.get("field", "") == field and "--baseline" in problem["message"]
    code, _, err = backtest(*args)
    assert code == 2 and f"{baseline}:0:0: error:" in err and "Traceback" not in err


def test_a_baseline_fifo_is_refused_without_waiting(
    export_file: Path, day: Any, tmp_path: Path
) -> None:
    fifo = tmp_path / "base.json"
    os.mkfifo(fifo)
    code, _, err = backtest(
        "--history", str(export_file), *window_args(day), "--baseline", str(fifo)
    )
    assert code == 2 and "FIFO" in err


@pytest.mark.parametrize("limit", ["nan", "inf", "-inf", "-1", "1e400", "many"])
def test_the_gate_takes_a_finite_number_of_zero_or_more(limit: str, export_file: Path) -> None:
    code, _, err = backtest("--history", str(export_file), "--max-changes-per-day", limit)
    assert code == 2 and "--max-changes-per-day" in err and "Traceback" not in err


def test_the_gate_names_its_limit_as_given_and_keeps_the_report(
    export_file: Path, day: Any, tmp_path: Path
) -> None:
    """Over the limit: exit 1, the whole report in the JSON with ``ok: false`` and the
    gate's verdict as a problem; that JSON still serves as a baseline."""
    args = ["--history", str(export_file), *window_args(day)]
    code, out, err = backtest(*args, "--format", "json", "--max-changes-per-day", "1.99999")
    assert code == 1, err
    document = _strict_json(out)
    assert document["ok"] is False and document["steps"] == 289
    inference = next(p for p in document["placements"] if p["name"] == "gpu-inference")
    assert inference["changes"] > 2
    messages = [p["message"] for p in document["problems"]]
    assert any("--max-changes-per-day 1.99999" in m for m in messages), messages
    assert any(p.get("field") == "default/gpu-inference" for p in document["problems"])
    baseline = tmp_path / "gated.json"
    baseline.write_text(out)
    code, out, err = backtest(*args, "--format", "json", "--baseline", str(baseline))
    assert code == 0, err
    again = next(p for p in _strict_json(out)["placements"] if p["name"] == "gpu-inference")
    assert again["baseline"]["changes"] == inference["changes"]
    code, out, err = backtest(*args, "--max-changes-per-day", "1.99999")
    assert code == 1 and "placement default/gpu-inference" in out
    assert "--max-changes-per-day 1.99999" in err and "default/gpu-inference" in err


def test_save_history_never_replaces_what_is_not_a_regular_file(
    export_file: Path, day: Any, tmp_path: Path
) -> None:
    fifo = tmp_path / "history.fifo"
    os.mkfifo(fifo)
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    for target in (fifo, link, tmp_path):
        before = os.lstat(target)
        args = ["--history", str(export_file), *window_args(day), "--save-history", str(target)]
        code, out, err = backtest(*args, "--format", "json")
        assert code == 2, err
        _problems_located(out, str(target))
        after = os.lstat(target)
        assert (stat.S_IFMT(after.st_mode), after.st_ino) == (
            stat.S_IFMT(before.st_mode),
            before.st_ino,
        )
    assert not (tmp_path / "elsewhere.jsonl").exists()
    saved = tmp_path / "saved.jsonl"
    saved.write_text("old\n")
    code, _, err = backtest(
        "--history", str(export_file), *window_args(day), "--save-history", str(saved)
    )
    assert code == 0, err
    assert saved.read_text() != "old\n" and stat.S_ISREG(saved.lstat().st_mode)


def test_a_score_without_samples_is_named(export_file: Path, day: Any) -> None:
    """green-batch ranks by the power score, which the day's history does not hold."""
    args = ["--history", str(export_file), *window_args(day)]
    code, out, _ = backtest(*args, "--format", "json", "default/green-batch")
    assert code == 0
    (batch,) = _strict_json(out)["placements"]
    expected = "score 'example_powerconsumption_score' (AddOnPlacementScore 'example-powerconsumption-score') has no sample"
    assert any(expected in w for w in batch["warnings"]), batch["warnings"]
    code, out, _ = backtest(*args, "--format", "text", "default/green-batch")
    assert code == 0 and f"warning: {expected}" in out
    code, out, _ = backtest(*args, "--format", "markdown", "default/green-batch")
    assert code == 0 and "example-powerconsumption-score') has no sample in the history" in out
    code, out, _ = backtest(*args, "--format", "json", "default/gpu-inference")
    (inference,) = _strict_json(out)["placements"]
    assert not any("no sample" in w for w in inference["warnings"])


def test_steps_before_the_history_are_left_out_of_the_rates(export_file: Path, day: Any) -> None:
    """A window a day wider than the history: flagged, and the rates are over the steps
    the history covers (they were counted as stable, halving the rate)."""
    start, _, _ = day
    iso = datetime.fromtimestamp(start - 86_400, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    wide = [*window_args(day)]
    wide[1] = iso
    code, out, err = backtest("--history", str(export_file), *wide, "--format", "json")
    assert code == 0, err
    inference = next(p for p in _strict_json(out)["placements"] if p["name"] == "gpu-inference")
    # the first sample is 10 minutes before the day: 286 steps of the extra day uncovered
    first = (86_400 - 600) // 300
    covered_days = (2 * 86_400 - first * 300) / 86_400
    assert inference["changesPerDay"] == round(inference["changes"] / covered_days, 4)
    assert inference["changesPerDay"] > 10
    assert any("left out of the rates" in w and f"{first} step" in w for w in inference["warnings"])
    assert inference["timeline"][0]["at"] == datetime.fromtimestamp(
        start - 86_400 + first * 300, UTC
    ).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert abs(sum(inference["selected"].values()) - 1.0) < 0.001


CEL_PLACEMENT = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: fast-app01
  namespace: default
spec:
  clusterSets:
    - global
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions:
            - 'managedCluster.scores ("example-performance-score").exists(s, s.value > 0)'
"""


def test_a_score_read_by_cel_with_a_space_before_the_call_is_replayed(
    export_file: Path, day: Any, tmp_path: Path
) -> None:
    """``managedCluster.scores ("…")`` is valid CEL: its score's history is read, and the
    Placement selects by it (it was missed: no history, every cluster filtered out)."""
    from tests.fleet_repo import copy_fleet

    fleet = copy_fleet(tmp_path / "fleet", with_rendered=False)
    for placement in (fleet / "placements").rglob("*.yaml"):
        if placement.name != "bindings.yaml":
            placement.unlink()
    (fleet / "placements" / "fast-app01.yaml").write_text(CEL_PLACEMENT)
    code, out, err = backtest(
        "--history", str(export_file), *window_args(day), "--format", "json", root=fleet
    )
    assert code == 0, err
    (placement,) = _strict_json(out)["placements"]
    assert placement["selected"] and placement["changes"] > 0
    assert not any("no sample" in w or "publishes" in w for w in placement["warnings"])


def test_running_out_of_memory_is_one_line(
    export_file: Path, day: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsf_compile.pipeline import backtest as pipeline

    def exhausted(*args: Any) -> None:
        raise MemoryError

    monkeypatch.setattr(pipeline, "run_backtest", exhausted)
    code, out, err = backtest("--history", str(export_file), *window_args(day))
    assert code == 2 and err.count("\n") == 1 and "out of memory" in err
    code, out, err = backtest("--history", str(export_file), "--format", "json")
    assert code == 2 and _strict_json(out)["ok"] is False
