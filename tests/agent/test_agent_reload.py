"""The agent in-process with ``--config-file``: start, update, stop scorers as the file
changes (in place, by rename, by kubelet-style symlink swap); last good configuration,
also after hostile files and ConfigMaps (deep nesting, huge numbers); readiness; a
missing Secret disables only its scorer; SIGHUP re-reads the configuration."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.agent.agent_fakes import (
    FakeKube,
    FakeServer,
    Reply,
    average_scorer,
    prometheus_matrix,
    sample_series,
)
from tests.agent.conftest import (
    CLUSTER,
    AgentProcess,
    RunningAgent,
    kube_apis,
    make_summary,
    wait_for,
    write_config,
)
from tests.agent.fleet_apis import poll_until


@pytest.fixture
def backends(serve: Callable[..., FakeServer]) -> tuple[FakeServer, FakeServer]:
    prometheus = serve(lambda request: Reply.json(prometheus_matrix(sample_series(2))))
    scorer = serve(average_scorer)
    return prometheus, scorer


def summary_for(
    backends: tuple[FakeServer, FakeServer], score_name: str, **changes: Any
) -> dict[str, Any]:
    prometheus, scorer = backends
    return make_summary(
        name=score_name.replace("_", "-"),
        scoreName=score_name,
        sourceEndpoint=f"{prometheus.url}/api/v1/query_range",
        scoringEndpoint=f"{scorer.url}/scoring",
        **changes,
    )


def successes(agent: RunningAgent, score_name: str) -> float:
    return agent.value("dynamic_scoring_requests_total", score_name=score_name, status="success")


def score_series(agent: RunningAgent, score_name: str) -> list[str]:
    return [
        line
        for line in agent.metrics.exposition().decode().splitlines()
        if line.startswith("dynamic_score{") and f'ds_score_name="{score_name}"' in line
    ]


@pytest.mark.asyncio
async def test_not_ready_until_configuration_loads(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    agent = await start_agent()
    assert (await agent.get("/healthz")).status_code == 200
    assert (await agent.get("/readyz")).status_code == 503
    assert agent.value("dynamic_scoring_config_reloads_total", result="failure") >= 1  # no file yet
    write_config(tmp_path / "summaries.json", [summary_for(backends, "a_score")])
    await wait_for(lambda: successes(agent, "a_score") >= 1, what="first cycle")
    assert (await agent.get("/readyz")).status_code == 200
    assert (await agent.get("/nope")).status_code == 404


@pytest.mark.asyncio
async def test_scorers_start_update_and_stop_with_the_file(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "a_score"), summary_for(backends, "b_score")])
    agent = await start_agent()
    await wait_for(
        lambda: successes(agent, "a_score") >= 2 and successes(agent, "b_score") >= 2, what="cycles"
    )
    assert agent.value("dynamic_scoring_scorers") == 2
    assert len(score_series(agent, "b_score")) == 2

    # Update: b now scores with a different query; remove a.
    write_config(config, [summary_for(backends, "b_score", sourceQuery="changed_query")])
    await wait_for(lambda: agent.value("dynamic_scoring_scorers") == 1, what="a removed")
    prometheus = backends[0]
    await wait_for(
        lambda: any(r.query.get("query") == ["changed_query"] for r in prometheus.taken()),
        what="new query used",
    )
    assert score_series(agent, "a_score") == []
    assert (
        agent.value("dynamic_scoring_requests_total", score_name="a_score", status="success") == 0
    )
    assert len(score_series(agent, "b_score")) == 2


@pytest.mark.asyncio
async def test_broken_file_keeps_the_last_good_configuration(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "a_score")])
    agent = await start_agent()
    await wait_for(lambda: successes(agent, "a_score") >= 1, what="first cycle")
    failures_before = agent.value("dynamic_scoring_config_reloads_total", result="failure")
    config.write_text("[{ this is not json")
    await wait_for(
        lambda: agent.value("dynamic_scoring_config_last_reload_successful") == 0, what="rejection"
    )
    assert (
        agent.value("dynamic_scoring_config_reloads_total", result="failure") == failures_before + 1
    )
    done = successes(agent, "a_score")
    await wait_for(lambda: successes(agent, "a_score") >= done + 2, what="scorer keeps running")
    assert (await agent.get("/readyz")).status_code == 200

    config.unlink()  # a vanished file is also kept at its last good content
    await wait_for(
        lambda: (
            agent.value("dynamic_scoring_config_reloads_total", result="failure")
            >= failures_before + 2
        )
    )
    write_config(config, [summary_for(backends, "a_score"), summary_for(backends, "c_score")])
    await wait_for(lambda: successes(agent, "c_score") >= 1, what="recovery")
    assert agent.value("dynamic_scoring_config_last_reload_successful") == 1


@pytest.mark.asyncio
async def test_bad_summary_is_left_out_and_its_running_scorer_kept(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "a_score"), summary_for(backends, "b_score")])
    agent = await start_agent()
    await wait_for(lambda: successes(agent, "b_score") >= 1, what="b running")
    broken_b = summary_for(backends, "b_score", scoringInterval=-5)
    write_config(
        config, [summary_for(backends, "a_score"), broken_b, summary_for(backends, "c_score")]
    )
    await wait_for(lambda: successes(agent, "c_score") >= 1, what="c started")
    assert agent.value("dynamic_scoring_config_invalid_summaries") == 1
    done = successes(agent, "b_score")
    await wait_for(
        lambda: successes(agent, "b_score") >= done + 1, what="b keeps its last good settings"
    )


@pytest.mark.asyncio
async def test_rename_and_symlink_swap_are_seen(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    # The kubelet layout: config/summaries -> ..data/summaries, ..data -> ..<timestamp>/
    mount = tmp_path / "mount"
    first = mount / "..2024_01_01"
    first.mkdir(parents=True)
    (first / "summaries").write_text(json.dumps([summary_for(backends, "a_score")]))
    os.symlink("..2024_01_01", mount / "..data")
    os.symlink("..data/summaries", mount / "summaries")
    agent = await start_agent(config_file=mount / "summaries")
    await wait_for(lambda: successes(agent, "a_score") >= 1, what="a running")

    second = mount / "..2024_01_02"
    second.mkdir()
    (second / "summaries").write_text(json.dumps([summary_for(backends, "b_score")]))
    os.symlink("..2024_01_02", mount / "..data_tmp")
    os.replace(mount / "..data_tmp", mount / "..data")  # atomic swap, as the kubelet does
    await wait_for(lambda: successes(agent, "b_score") >= 1, what="symlink swap seen")
    await wait_for(lambda: agent.value("dynamic_scoring_scorers") == 1, what="a stopped")

    # And a plain rename over the file (what editors and GitOps tools do).
    plain = tmp_path / "plain.json"
    write_config(plain, [summary_for(backends, "a_score")])
    agent2 = await start_agent(config_file=plain, metrics_port=0)
    await wait_for(lambda: successes(agent2, "a_score") >= 1)
    write_config(plain, [summary_for(backends, "c_score")])
    await wait_for(lambda: successes(agent2, "c_score") >= 1, what="rename seen")


@pytest.mark.asyncio
async def test_missing_secret_disables_only_that_scorer(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    needs_secret = summary_for(
        backends,
        "secret_score",
        scoringEndpointAuthName="scorer-token",
        scoringEndpointAuthKey="token",
    )
    write_config(config, [summary_for(backends, "free_score"), needs_secret])
    agent = await start_agent()
    await wait_for(lambda: successes(agent, "free_score") >= 3, what="free scorer cycles")
    assert successes(agent, "secret_score") == 0
    assert agent.value("dynamic_scoring_scorer_enabled", score_name="secret_score") == 0
    assert (
        agent.value(
            "dynamic_scoring_failures_total",
            score_name="secret_score",
            stage="secret",
            reason="not_found",
        )
        >= 1
    )

    (tmp_path / "secrets" / "scorer-token").mkdir(parents=True)
    (tmp_path / "secrets" / "scorer-token" / "token").write_text("the-scorer-token-xyz")
    await wait_for(
        lambda: successes(agent, "secret_score") >= 1, what="enabled once the Secret appears"
    )
    assert agent.value("dynamic_scoring_scorer_enabled", score_name="secret_score") == 1
    scorer = backends[1]
    assert any(
        r.headers.get("authorization") == "Bearer the-scorer-token-xyz" for r in scorer.taken()
    )


@pytest.mark.asyncio
async def test_interval_change_reschedules(
    start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "slow_score", scoringInterval=3600)])
    agent = await start_agent()
    await wait_for(
        lambda: successes(agent, "slow_score") == 1, what="first cycle right after start"
    )
    write_config(config, [summary_for(backends, "slow_score", scoringInterval=1)])
    await wait_for(
        lambda: successes(agent, "slow_score") >= 3,
        what="new interval used without waiting an hour",
    )


DEEP = "[" * 100_000 + "]" * 100_000
HOSTILE_FILES = {
    "deep_json_array": DEEP,
    "huge_json_number": "[" + "7" * 6000 + "]",
    "huge_yaml_int": "kind: ConfigMap\ndata:\n  summaries: " + "1" * 6000 + "\n",
    "deep_data_summaries": json.dumps({"kind": "ConfigMap", "data": {"summaries": DEEP}}),
}


def failed_reloads(agent: RunningAgent) -> float:
    return agent.value("dynamic_scoring_config_reloads_total", result="failure")


def rejections_reach(agent: RunningAgent, count: int) -> bool:
    return failed_reloads(agent) == count


def successes_pass(agent: RunningAgent, done: float) -> bool:
    return successes(agent, "a_score") > done


def successful_reloads(agent: RunningAgent) -> float:
    return agent.value("dynamic_scoring_config_reloads_total", result="success")


@pytest.mark.asyncio
@pytest.mark.parametrize("hostile", sorted(HOSTILE_FILES))
async def test_hostile_file_is_rejected_and_the_last_good_one_kept(
    hostile: str, start_agent: Any, tmp_path: Path, backends: tuple[FakeServer, FakeServer]
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "a_score")])
    agent = await start_agent()
    await wait_for(lambda: successes(agent, "a_score") >= 1, what="first cycle")
    before = failed_reloads(agent)

    scratch = config.with_name("hostile.tmp")
    scratch.write_text(HOSTILE_FILES[hostile])
    scratch.replace(config)
    await wait_for(lambda: failed_reloads(agent) == before + 1, what="rejection counted")
    assert agent.value("dynamic_scoring_config_last_reload_successful") == 0
    done = successes(agent, "a_score")
    await wait_for(lambda: successes(agent, "a_score") >= done + 1, what="scorer keeps running")
    assert agent.value("dynamic_scoring_scorers") == 1
    assert not agent.task.done()
    assert (await agent.get("/healthz")).status_code == 200

    write_config(config, [summary_for(backends, "a_score"), summary_for(backends, "b_score")])
    await wait_for(lambda: successes(agent, "b_score") >= 1, what="a good file is used again")


@pytest.mark.asyncio
async def test_hostile_configmap_is_rejected_and_the_last_good_one_kept(
    start_agent: Any, kube: FakeKube, backends: tuple[FakeServer, FakeServer]
) -> None:
    namespace, name = "dynamic-scoring", "dynamic-scoring-config"
    kube.set_configmap(
        namespace, name, {"summaries": json.dumps([summary_for(backends, "a_score")])}
    )
    api_client, core, _ = kube_apis(kube)
    try:
        agent = await start_agent(core=core, config_file=None)
        await wait_for(lambda: successes(agent, "a_score") >= 1, what="first cycle")
        for count, hostile in enumerate([DEEP, "[" + "7" * 6000 + "]"], start=1):
            kube.set_configmap(namespace, name, {"summaries": hostile})
            await wait_for(partial(rejections_reach, agent, count), what="rejection")
            assert agent.value("dynamic_scoring_config_last_reload_successful") == 0
            await wait_for(partial(successes_pass, agent, successes(agent, "a_score")), what="kept")
        assert not agent.task.done()
        kube.set_configmap(
            namespace,
            name,
            {"summaries": json.dumps([summary_for(backends, s) for s in ("a_score", "b_score")])},
        )
        await wait_for(lambda: successes(agent, "b_score") >= 1, what="a good ConfigMap again")
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


@pytest.mark.asyncio
async def test_reload_request_lists_the_configmap_again(
    start_agent: Any, kube: FakeKube, backends: tuple[FakeServer, FakeServer]
) -> None:
    kube.set_configmap(
        "dynamic-scoring",
        "dynamic-scoring-config",
        {"summaries": json.dumps([summary_for(backends, "a_score")])},
    )
    api_client, core, _ = kube_apis(kube)
    reload = asyncio.Event()
    try:
        agent = await start_agent(core=core, config_file=None, reload=reload)
        await wait_for(lambda: successful_reloads(agent) == 1, what="first load")
        listed = len([r for r in kube.server.taken() if "watch" not in r.query])
        reload.set()  # what SIGHUP does: the unchanged ConfigMap is read and applied again
        await wait_for(lambda: successful_reloads(agent) == 2, what="reload")
        assert len([r for r in kube.server.taken() if "watch" not in r.query]) > listed
        reload.set()
        await wait_for(lambda: successful_reloads(agent) == 3, what="second reload")
        assert not agent.task.done()
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


def test_sighup_rereads_the_file_and_keeps_running(
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
    backends: tuple[FakeServer, FakeServer],
) -> None:
    config = tmp_path / "summaries.json"
    write_config(config, [summary_for(backends, "a_score")])
    agent = agent_process(
        "--cluster-name", CLUSTER, "--config-file", str(config), "--secrets-dir", str(tmp_path)
    )

    def reloads() -> float:
        for line in agent.metrics().splitlines():
            if line.startswith('dynamic_scoring_config_reloads_total{result="success"}'):
                return float(line.rsplit(" ", 1)[1])
        return 0.0

    poll_until(lambda: reloads() == 1, "first load")
    agent.process.send_signal(signal.SIGHUP)
    poll_until(lambda: reloads() == 2, "re-read after SIGHUP")
    assert agent.process.poll() is None
    agent.process.send_signal(signal.SIGHUP)
    poll_until(lambda: reloads() == 3, "re-read after a second SIGHUP")
    assert agent.process.poll() is None
    assert "config_reload_requested" in agent.log()
    assert agent.terminate() == 0
