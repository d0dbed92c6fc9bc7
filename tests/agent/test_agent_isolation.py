"""Issue 17 row 10 at a small scale: a scorer answering more results than the cap, beside a
healthy one, against ``python -m agent`` as a process. The flood is refused and counted,
the healthy scorer keeps cycling, ``/metrics`` stays small and promtool accepts it."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.agent.agent_fakes import (
    FakeServer,
    Reply,
    Request,
    average_scorer,
    prometheus_matrix,
    sample_series,
)
from tests.agent.agent_probes import promtool_check
from tests.agent.conftest import CLUSTER, AgentProcess, make_summary, write_config
from tests.agent.fleet_apis import poll_until

#: over the default cap of 10,000 results, and well inside the 16 MiB answer cap (~1.4 MB)
FLOOD = 20_000


def flood_answer(count: int) -> bytes:
    results = [
        {"metric": {"node": f"node-{i}", "pod": f"pod-{i}"}, "score": i % 100} for i in range(count)
    ]
    return json.dumps({"results": results}).encode()


def counter(text: str, name: str, **labels: str) -> float:
    """The value of one sample in exposition ``text`` (0 when absent)."""
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def test_a_flooding_scorer_is_cut_at_the_cap_and_the_others_keep_cycling(
    serve: Callable[..., FakeServer],
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    flood = flood_answer(FLOOD)

    def handler(request: Request) -> Reply:
        if request.path.endswith("/query_range"):
            return Reply.json(prometheus_matrix(sample_series(2)))
        if request.path == "/flood/scoring":
            return Reply(body=flood)
        return average_scorer(request)

    server = serve(handler)
    prometheus = f"{server.url}/api/v1/query_range"
    config = tmp_path / "summaries.json"
    write_config(
        config,
        [
            make_summary(
                name=name,
                scoreName=name,
                sourceEndpoint=prometheus,
                scoringEndpoint=f"{server.url}{path}",
                scoreDestination="None",
            )
            for name, path in (("healthy", "/scoring"), ("flood", "/flood/scoring"))
        ],
    )
    (tmp_path / "secrets").mkdir()
    agent = agent_process(
        "--cluster-name", CLUSTER, "--config-file", str(config),
        "--secrets-dir", str(tmp_path / "secrets"),
    )  # fmt: skip

    def refused() -> float:
        return counter(
            agent.metrics(),
            "dynamic_scoring_failures_total",
            score_name="flood",
            reason="too_many_results",
        )

    poll_until(lambda: refused() >= 3, "three refused answers")
    text = agent.metrics()
    ok = counter(text, "dynamic_scoring_requests_total", score_name="healthy", status="success")
    assert ok >= 2
    assert (
        counter(text, "dynamic_scoring_requests_total", score_name="healthy", status="failure") == 0
    )
    assert (
        counter(text, "dynamic_scoring_requests_total", score_name="flood", status="success") == 0
    )
    # the healthy scorer's series, none of the flood's: the exposition stays small
    assert len(re.findall(r'^dynamic_score\{.*ds_score_name="healthy"', text, re.M)) == 2
    assert 'ds_score_name="flood"' not in text
    assert len(text) < 20_000
    assert "too_many_results" in agent.log() and "Traceback" not in agent.log()
    if shutil.which("promtool") is None:
        pytest.skip("promtool not installed (Debian package prometheus)")
    checked = promtool_check(text)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_cap_is_read_from_the_environment(
    serve: Callable[..., FakeServer],
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    from tests.agent.conftest import agent_env

    server = serve(lambda request: Reply(body=flood_answer(3)))
    config = tmp_path / "summaries.json"
    write_config(
        config,
        [
            make_summary(
                sourceType="None", sourceEndpoint="", sourceQuery="", sourceRange=0,
                sourceStep=0, scoringEndpoint=f"{server.url}/scoring", scoreDestination="None",
            )
        ],
    )  # fmt: skip
    agent = agent_process(
        "--cluster-name", CLUSTER, "--config-file", str(config), "--secrets-dir", str(tmp_path),
        env=agent_env(DSF_MAX_RESULTS="2"),
    )  # fmt: skip
    poll_until(
        lambda: counter(
            agent.metrics(), "dynamic_scoring_failures_total", reason="too_many_results"
        ),
        "a refused answer",
    )
