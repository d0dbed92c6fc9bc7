"""``backtest`` built of the house's pieces: the scores a Placement's CEL reads, found by
the CEL parser ``validate`` uses (a name written with a space before its parenthesis, in
single quotes or with an escape is the same name, and the Placement is replayed with that
score's history); each cluster's fold as render configures its agent; the warnings of a
step's scores told apart by the scheduler, not by their wording; its own User-Agent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from dsf_compile.placement.cel import compile_expression, reads_scores, score_names
from tests.backtest.helpers import backtest, serving, window_args
from tests.fleet_repo import copy_fleet

SCORE = "example-performance-score"
CEL_PLACEMENT = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: gpu-cel
  namespace: default
spec:
  clusterSets:
    - global
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions:
            - {expression}
"""
#: The same call, written as CEL allows.
CALLS = {
    "plain": f'managedCluster.scores("{SCORE}")',
    "space": f'managedCluster.scores ("{SCORE}")',
    "single quotes": f"managedCluster.scores ( '{SCORE}' )",
    "escaped": 'managedCluster.scores("example-performance-sc\\x6fre")',
}


def _expression(call: str) -> str:
    return f'{call}.exists(s, s.name == "app01;3g.48gb" && s.value > 50)'


@pytest.mark.parametrize("written", sorted(CALLS))
def test_the_parser_reads_the_score_name(written: str) -> None:
    compiled = compile_expression(_expression(CALLS[written]))
    assert score_names(compiled) == {SCORE}
    assert reads_scores(compiled)


def test_a_name_inside_a_string_is_not_a_call() -> None:
    compiled = compile_expression('"managedCluster.scores(\\"x\\")" != ""')
    assert score_names(compiled) == frozenset()
    assert not reads_scores(compiled)


def _replayed(root: Path, export_file: Path, day: Any, call: str) -> dict[str, Any]:
    text = CEL_PLACEMENT.format(expression=json.dumps(_expression(call)))
    (root / "placements" / "gpu-cel.yaml").write_text(text)
    code, out, err = backtest(
        "--history", str(export_file), *window_args(day), "--format", "json", root=root
    )
    assert code == 0, err
    document: dict[str, Any] = json.loads(out)
    return next(p for p in document["placements"] if p["name"] == "gpu-cel")


def test_backtest_replays_the_score_however_the_call_is_written(
    tmp_path: Path, export_file: Path, day: Any
) -> None:
    root = copy_fleet(tmp_path)
    # no other Placement ranks by the score: only the CEL call can bring its history in
    (root / "placements" / "gpu-inference.yaml").unlink()
    plain = _replayed(root, export_file, day, CALLS["plain"])
    # the history reaches the expression: the clusters pass and fail with their scores
    assert plain["changes"] > 0 and plain["selected"], plain
    assert not any(SCORE in warning for warning in plain["warnings"]), plain["warnings"]
    for written in ("space", "single quotes", "escaped"):
        assert _replayed(root, export_file, day, CALLS[written]) == plain, written


def test_each_cluster_folds_as_render_configures_its_agent(tmp_path: Path) -> None:
    """The fold of each cluster's agent: agent.aggregate, then the overrides selecting the
    cluster in order, later ones winning (render/agent_overrides.py's merge)."""
    from dsf_compile.backtest.run import _aggregation
    from dsf_compile.pipeline.inputs import load_inputs

    root = copy_fleet(tmp_path)
    settings = root / "dsf.yaml"
    text = settings.read_text()
    assert "  overrides:\n    - clusterName: edge01\n" in text
    text = text.replace(
        "  overrides:\n    - clusterName: edge01\n",
        "  aggregate: {a: max, b: min}\n"
        "  overrides:\n"
        "    - clusterName: 'worker*'\n"
        "      aggregate: {a: sum, c: avg}\n"
        "    - clusterName: worker02\n"
        "      aggregate: {c: min}\n"
        "    - clusterName: edge01\n",
    )
    settings.write_text(text)
    how = _aggregation(load_inputs(root))
    folds = {
        cluster: [how(cluster, name) for name in "abcd"]
        for cluster in ("worker01", "worker02", "edge01")
    }
    assert folds == {
        "worker01": ["sum", "min", "avg", "last"],
        "worker02": ["sum", "min", "min", "last"],
        "edge01": ["max", "min", "last", "last"],
    }


def test_a_step_s_score_warnings_are_marked_by_the_scheduler() -> None:
    """An absent score is said of the moment (``momentary``), which the replay says per
    step; a lasting warning is not marked."""
    from datetime import UTC, datetime

    from dsf_compile.backtest.replay import _lasting
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
    from dsf_compile.placement.scheduler import Cluster, ScoreIndex, schedule

    placement = Placement.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta1",
            "kind": "Placement",
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {
                "spreadPolicy": {
                    "spreadConstraints": [{"topologyKey": "zone", "topologyKeyType": "Label"}]
                },
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [
                        {
                            "scoreCoordinate": {
                                "type": "AddOn",
                                "addOn": {"resourceName": "absent", "scoreName": "s"},
                            },
                            "weight": 1,
                        }
                    ],
                },
            },
        }
    )
    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    at = datetime(2026, 1, 1, tzinfo=UTC)
    result = schedule(placement, [Cluster("c1")], [binding], ScoreIndex({}, {}), (), at)
    absent = [w for w in result.warnings if "absent" in w]
    assert absent and set(result.momentary) == set(absent), result.warnings
    lasting = _lasting(result)
    assert lasting and not set(lasting) & set(absent)
    assert any("spreadPolicy" in w for w in lasting)


def test_history_reads_say_backtest(day: Any) -> None:
    """The history's server sees backtest's own User-Agent, not sync's."""
    from http.server import BaseHTTPRequestHandler

    seen: list[str] = []

    class _Recording(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.headers.get("User-Agent", ""))
            body = b"not found"
            self.send_response(404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    with serving(_Recording) as url:
        code, _, err = backtest("--history", url, *window_args(day))
    assert code == 2, err
    assert seen and set(seen) == {"dsf-compile-backtest/1"}
