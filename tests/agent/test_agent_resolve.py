"""``dsf-agent --resolve``: in-cluster service names reach loopback, URLs and Host kept."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent.settings import parse_settings
from tests.agent.agent_fakes import FakeServer, average_scorer, good_prometheus
from tests.agent.conftest import CLUSTER, AgentProcess, agent_env, make_summary, write_config
from tests.agent.fleet_apis import poll_until

SCORER = "scorer.dynamic-scoring.svc:8000"
PROMETHEUS = "prometheus.monitoring.svc:9090"


@pytest.mark.integration
def test_service_names_reach_loopback_with_their_host_headers(
    tmp_path: Path,
    serve: Callable[..., FakeServer],
    agent_process: Callable[..., AgentProcess],
) -> None:
    prometheus, scorer = serve(good_prometheus), serve(average_scorer)
    summary = make_summary(
        sourceEndpoint=f"http://{PROMETHEUS}/api/v1/query_range",
        scoringEndpoint=f"http://{SCORER}/scoring",
        scoreDestination="None",
    )
    write_config(tmp_path / "summaries.json", [summary])
    agent = agent_process(
        "--cluster-name",
        CLUSTER,
        "--config-file",
        str(tmp_path / "summaries.json"),
        "--secrets-dir",
        str(tmp_path / "secrets"),
        "--resolve",
        f"{SCORER}:127.0.0.1:{scorer.port}",
        env=agent_env(DSF_RESOLVE=f"{PROMETHEUS}:127.0.0.1:{prometheus.port}"),
    )
    poll_until(lambda: scorer.taken("/scoring"), "a scoring request", agent.metrics)
    assert scorer.taken("/scoring")[0].headers["host"] == SCORER
    assert prometheus.taken("/api/v1/query_range")[0].headers["host"] == PROMETHEUS


def test_a_bad_resolve_entry_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        parse_settings(["--cluster-name", "c1", "--resolve", "no-port"], environ={})
    assert exit_.value.code == 2
    assert "--resolve 'no-port'" in capsys.readouterr().err
