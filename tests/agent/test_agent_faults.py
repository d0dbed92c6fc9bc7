"""Faults: Prometheus down / slow / garbage / partial, Scoring API 500 /
timeout / garbage / huge / NaN, hub 409 / 500 / unreachable. In every case the agent stays
up, the healthy scorer keeps its cadence, counters show the failure, and the faulty scorer
recovers by itself once the fault ends. Under load (2,000 scorers against a Scoring API
that never answers) the health endpoint still answers and SIGTERM still stops the agent."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from agent.errors import ScoreError
from agent.score import request_scores
from agent.transport import MAX_IN_FLIGHT_PER_HOST, RequestSlots, make_client
from tests.agent.agent_fakes import (
    GOOD_PROMETHEUS,
    FakeKube,
    FakeServer,
    HangingServer,
    Reply,
    Request,
    average_scorer,
    good_prometheus,
)
from tests.agent.conftest import (
    CLUSTER,
    AgentProcess,
    RunningAgent,
    free_port,
    kube_apis,
    make_summary,
    wait_for,
    write_config,
)
from tests.agent.fleet_apis import poll_until
from tests.fleet_repo import EXAMPLE_FLEET


class Switchable:
    """A handler that misbehaves while ``broken`` is set."""

    def __init__(self, good: Callable[[Request], Reply], bad: Reply) -> None:
        self.good, self.bad, self.broken = good, bad, True

    def __call__(self, request: Request) -> Reply:
        return self.bad if self.broken else self.good(request)


def nan_scorer(request: Request) -> Reply:
    return Reply(
        body=b'{"results": [{"metric": {"node": "n0"}, "score": NaN}, {"metric": {"node": "n1"}, "score": 1}]}'
    )


# (score name, which side is broken, the broken answer, expected stage, expected reason)
FAULTS: list[tuple[str, str, Reply, str, str]] = [
    ("prom_down", "prometheus", Reply(status=0), "fetch", "transport_error"),
    ("prom_slow", "prometheus", Reply(body=GOOD_PROMETHEUS, delay=3.0), "fetch", "timeout"),
    (
        "prom_garbage",
        "prometheus",
        Reply(body=b"<html>oops</html>", content_type="text/html"),
        "fetch",
        "invalid_response",
    ),
    (
        "prom_partial",
        "prometheus",
        Reply(body=GOOD_PROMETHEUS, truncate=True),
        "fetch",
        "transport_error",
    ),
    (
        "prom_error",
        "prometheus",
        Reply.json({"status": "error", "error": "query timed out"}, 503),
        "fetch",
        "http_5xx",
    ),
    ("scorer_500", "scorer", Reply(status=500, body=b"internal"), "score", "http_5xx"),
    ("scorer_timeout", "scorer", Reply(body=b'{"results": []}', delay=3.0), "score", "timeout"),
    ("scorer_garbage", "scorer", Reply(body=b'{"results": [tru'), "score", "invalid_response"),
    (
        "scorer_huge",
        "scorer",
        Reply(body=b'{"results": [' + b'{"score": 1},' * 20000 + b'{"score": 1}]}'),
        "score",
        "too_large",
    ),
]


def successes(agent: RunningAgent, score_name: str) -> float:
    return agent.value("dynamic_scoring_requests_total", score_name=score_name, status="success")


def failures(agent: RunningAgent, score_name: str, stage: str, reason: str) -> float:
    return agent.value(
        "dynamic_scoring_failures_total", score_name=score_name, stage=stage, reason=reason
    )


def failure_table(agent: RunningAgent) -> str:
    text = agent.metrics.exposition().decode()
    return "\n".join(
        line
        for line in text.splitlines()
        if line.startswith(("dynamic_scoring_failures_total", "dynamic_scoring_requests_total"))
    )


@pytest.mark.asyncio
async def test_faulty_backends_do_not_disturb_the_others(
    start_agent: Any, tmp_path: Path, serve: Callable[..., FakeServer]
) -> None:
    healthy_prometheus, healthy_scorer = serve(good_prometheus), serve(average_scorer)
    summaries = [
        make_summary(
            name="healthy",
            scoreName="healthy",
            sourceEndpoint=f"{healthy_prometheus.url}/api/v1/query_range",
            scoringEndpoint=f"{healthy_scorer.url}/scoring",
        )
    ]
    switches: list[Switchable] = []
    for score_name, side, bad, _, _ in FAULTS:
        prometheus = Switchable(good_prometheus, bad) if side == "prometheus" else good_prometheus
        scorer = Switchable(average_scorer, bad) if side == "scorer" else average_scorer
        switches.extend(s for s in (prometheus, scorer) if isinstance(s, Switchable))
        summaries.append(
            make_summary(
                name=score_name.replace("_", "-"),
                scoreName=score_name,
                sourceEndpoint=f"{serve(prometheus).url}/api/v1/query_range",
                scoringEndpoint=f"{serve(scorer).url}/scoring",
            )
        )
    # Prometheus really down: nothing listens on the port until the fault ends.
    closed_port = free_port()
    summaries.append(
        make_summary(
            name="prom-refused",
            scoreName="prom_refused",
            sourceEndpoint=f"http://127.0.0.1:{closed_port}/api/v1/query_range",
            scoringEndpoint=f"{healthy_scorer.url}/scoring",
        )
    )
    nan = serve(nan_scorer)
    summaries.append(
        make_summary(
            name="scorer-nan",
            scoreName="scorer_nan",
            sourceEndpoint=f"{healthy_prometheus.url}/api/v1/query_range",
            scoringEndpoint=f"{nan.url}/scoring",
        )
    )
    write_config(tmp_path / "summaries.json", summaries)
    agent = await start_agent(request_timeout=1.0, max_scoring_response_bytes=64 * 1024)

    expected = [(name, stage, reason) for name, _, _, stage, reason in FAULTS] + [
        ("prom_refused", "fetch", "unreachable")
    ]
    await wait_for(
        lambda: all(failures(agent, *e) >= 2 for e in expected),
        timeout=30,
        what="every fault counted twice",
        explain=lambda: failure_table(agent),
    )
    # Meanwhile the healthy scorer kept its 1 s cadence (generous bound: it ran at least
    # as often as the slowest faulty scorer failed), and nothing faulty got through.
    assert successes(agent, "healthy") >= 2
    assert all(successes(agent, name) == 0 for name, *_ in expected)
    assert successes(agent, "scorer_nan") >= 2
    assert agent.value("dynamic_scoring_skipped_results_total", score_name="scorer_nan") >= 2
    assert not agent.task.done()
    assert (await agent.get("/healthz")).status_code == 200

    # The faults end: every scorer recovers by itself.
    for switch in switches:
        switch.broken = False
    refused_prometheus = FakeServer(good_prometheus, port=closed_port).start()
    try:
        await wait_for(
            lambda: all(successes(agent, name) >= 1 for name, *_ in expected),
            timeout=30,
            what="recovery",
        )
    finally:
        refused_prometheus.stop()


@pytest.mark.asyncio
async def test_hub_faults_are_counted_and_recovered(
    start_agent: Any, tmp_path: Path, serve: Callable[..., FakeServer], kube: FakeKube
) -> None:
    prometheus, scorer = serve(good_prometheus), serve(average_scorer)
    summaries = [
        make_summary(
            name=name,
            scoreName=name,
            sourceEndpoint=f"{prometheus.url}/api/v1/query_range",
            scoringEndpoint=f"{scorer.url}/scoring",
        )
        for name in ("first", "second")
    ]
    write_config(tmp_path / "summaries.json", summaries)
    api_client, _, custom = kube_apis(kube)
    try:
        agent = await start_agent(hub=custom, request_timeout=2.0)
        await wait_for(lambda: successes(agent, "first") >= 1 and successes(agent, "second") >= 1)

        kube.conflicts = 3  # a few lost races: retried within the cycle, no failure
        await wait_for(
            lambda: (
                agent.value("dynamic_scoring_hub_conflicts_total", score_name="first")
                + agent.value("dynamic_scoring_hub_conflicts_total", score_name="second")
                >= 3
            ),
            what="conflicts retried",
        )
        kube.fail.extend([("PUT", "addonplacementscores", 500)] * 4)
        await wait_for(
            lambda: (
                failures(agent, "first", "publish", "http_5xx")
                + failures(agent, "second", "publish", "http_5xx")
                >= 4
            ),
            what="500s counted",
        )
        kube.down = True
        await wait_for(
            lambda: (
                failures(agent, "first", "publish", "unreachable") >= 1
                and failures(agent, "second", "publish", "unreachable") >= 1
            ),
            what="unreachable hub counted",
        )
        # Scores still reach /metrics while the hub is away.
        metrics = (await agent.get("/metrics")).text
        assert 'ds_score_name="first"' in metrics
        kube.down = False
        before = successes(agent, "first"), successes(agent, "second")
        await wait_for(
            lambda: (
                successes(agent, "first") > before[0] and successes(agent, "second") > before[1]
            ),
            what="recovery",
        )
        obj = kube.get("addonplacementscores", "worker01", "first")
        assert obj is not None and len(obj["status"]["scores"]) == 2
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


def termination_grace_seconds() -> float:
    """The agent Deployment's grace period as rendered (Kubernetes' default: 30 s)."""
    deployments: list[dict[str, Any]] = []

    def collect(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("kind") == "Deployment":
                deployments.append(node)
            for value in node.values():
                collect(value)
        elif isinstance(node, list):
            for value in node:
                collect(value)

    for document in yaml.safe_load_all(
        (EXAMPLE_FLEET / "rendered" / "hub" / "addon" / "addontemplate.yaml").read_text()
    ):
        collect(document)
    assert len(deployments) == 1
    return float(
        deployments[0]["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30)
    )


def healthz_answers(agent: AgentProcess) -> int:
    """``/healthz``'s status; the 30 s read timeout is a hang guard, not a measure."""
    with urllib.request.urlopen(f"http://127.0.0.1:{agent.port}/healthz", timeout=30) as answer:
        return int(answer.status)


def test_health_and_sigterm_stay_prompt_with_2000_scorers_on_a_hanging_api(
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
    serve: Callable[..., FakeServer],
) -> None:
    healthy_prometheus, healthy_scorer = serve(good_prometheus), serve(average_scorer)
    hanging = HangingServer().start()
    try:
        summaries = [
            make_summary(
                name=f"load-{index}",
                scoreName=f"load_{index}",
                sourceType="None",
                sourceEndpoint="",
                sourceQuery="",
                sourceRange=0,
                sourceStep=0,
                scoringEndpoint=f"{hanging.url}/scoring",
                scoreDestination="None",
            )
            for index in range(2000)
        ]
        healthy = make_summary(
            name="healthy",
            scoreName="healthy",
            sourceEndpoint=f"{healthy_prometheus.url}/api/v1/query_range",
            scoringEndpoint=f"{healthy_scorer.url}/scoring",
            scoreDestination="None",
        )
        write_config(tmp_path / "summaries.json", [*summaries, healthy])
        agent = agent_process(
            "--cluster-name",
            CLUSTER,
            "--config-file",
            str(tmp_path / "summaries.json"),
            "--secrets-dir",
            str(tmp_path / "secrets"),
        )
        # The scorers have started: as many requests as one host is allowed hang.
        poll_until(
            lambda: hanging.accepted >= MAX_IN_FLIGHT_PER_HOST and agent.status("/readyz") == 200,
            "the load to build up",
            lambda: f"{hanging.accepted} requests hanging\n{agent.log()}",
        )
        # The hanging API does not take every slot: a scorer elsewhere keeps its cadence.
        healthy_successes = re.compile(
            r'^dynamic_scoring_requests_total\{score_name="healthy",status="success"\} (\S+)$', re.M
        )

        def healthy_cycles() -> float:
            found = healthy_successes.search(agent.metrics())
            return float(found.group(1)) if found else 0.0

        # Every probe is answered while the slots are held, ten at least, until the healthy
        # scorer has run twice (how fast: the bench's "slowest /healthz under load" row,
        # python -m bench --only agent).
        probes: list[int] = []

        def probed_beside_healthy_cycles() -> bool:
            probes.append(healthz_answers(agent))
            return len(probes) >= 10 and healthy_cycles() >= 2

        poll_until(
            probed_beside_healthy_cycles,
            "ten probes and the healthy scorer's cycles beside the hanging API",
            agent.log,
        )
        assert set(probes) == {200}
        assert "dynamic_scoring_scorers 2001.0" in agent.metrics()
        assert hanging.accepted == MAX_IN_FLIGHT_PER_HOST

        # SIGTERM: exit 0 before the kubelet's kill at the end of the grace period (how
        # fast: the bench's "SIGTERM to exit under load" row)
        grace = termination_grace_seconds()
        agent.process.send_signal(signal.SIGTERM)
        try:
            code = agent.process.wait(grace)
        except subprocess.TimeoutExpired:
            pytest.fail(f"SIGTERM ignored for {grace} s (the grace period)")
        assert code == 0
    finally:
        hanging.stop()


@pytest.mark.asyncio
async def test_a_dripping_answer_is_cut_at_the_whole_request_deadline(
    serve: Callable[..., FakeServer],
) -> None:
    # Every chunk comes well within the per-read timeout (5 s), the whole answer does not
    # within the request deadline (1 s): without the deadline it would hold a slot 4 s.
    body = b'{"results": [' + b" " * 100 + b"]}"
    chunks = [body[i : i + 12] for i in range(0, len(body), 12)]
    dripping = serve(lambda request: Reply(chunks=chunks, drip=0.4))
    async with make_client(5.0) as client:
        with pytest.raises(ScoreError) as caught:
            await request_scores(
                client,
                f"{dripping.url}/scoring",
                [],
                token=None,
                max_bytes=1 << 20,
                slots=RequestSlots(1.0),
            )
    assert caught.value.reason == "timeout"
    # The same answer within a deadline that allows it is used.
    async with make_client(5.0) as client:
        outcome = await request_scores(
            client,
            f"{dripping.url}/scoring",
            [],
            token=None,
            max_bytes=1 << 20,
            slots=RequestSlots(30.0),
        )
    assert outcome.results == []


@pytest.mark.asyncio
async def test_a_hub_outage_logs_no_library_retries(
    start_agent: Any,
    tmp_path: Path,
    serve: Callable[..., FakeServer],
    kube: FakeKube,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The agent's own client (as built for production) fails at once; the cycle speaks:
    one warning per scorer when the outage starts, one line when it ends, repeats at debug."""
    import logging

    from agent.kube import custom_objects_api, hub_client

    prometheus, scorer = serve(good_prometheus), serve(average_scorer)
    names = [f"score_{index}" for index in range(4)]
    write_config(
        tmp_path / "summaries.json",
        [
            make_summary(
                name=name.replace("_", "-"),
                scoreName=name,
                sourceEndpoint=f"{prometheus.url}/api/v1/query_range",
                scoringEndpoint=f"{scorer.url}/scoring",
            )
            for name in names
        ],
    )
    (tmp_path / "hub.kubeconfig").write_text(kube.kubeconfig())
    api_client = hub_client(tmp_path / "hub.kubeconfig")
    try:
        agent = await start_agent(hub=custom_objects_api(api_client), request_timeout=2.0)
        await wait_for(
            lambda: all(successes(agent, name) >= 1 for name in names), what="first publish"
        )
        caplog.clear()
        with caplog.at_level("DEBUG"):
            kube.down = True
            await wait_for(
                lambda: all(failures(agent, name, "publish", "unreachable") >= 3 for name in names),
                what="several unreachable cycles of every scorer",
            )
            kube.down = False
            await wait_for(
                lambda: all(
                    any(
                        r.getMessage() == "scorer_recovered"
                        and getattr(r, "dsf_fields", {}).get("score_name") == name
                        for r in caplog.records
                    )
                    for name in names
                ),
                what="every scorer recovered",
            )
        library = [
            r for r in caplog.records if r.name.startswith("urllib3") and r.levelno >= logging.INFO
        ]
        assert library == [], [r.getMessage() for r in library]
        loud = [
            r for r in caplog.records if r.name.startswith("dsf.") and r.levelno >= logging.INFO
        ]
        # one cycle_failed when the outage starts and one scorer_recovered per scorer
        assert len(loud) <= 2 * len(names), [r.getMessage() for r in loud]
        repeats = [
            r
            for r in caplog.records
            if r.getMessage() == "cycle_failed" and r.levelno == logging.DEBUG
        ]
        assert len(repeats) >= 2 * len(names)
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


@pytest.mark.asyncio
async def test_a_cluster_api_outage_is_logged_once_by_the_configmap_watch(
    kube: FakeKube,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The ConfigMap's list-and-watch retries every few seconds while the cluster API is
    down: the first failure is a warning, the retries are debug, the recovery one line."""
    import asyncio
    import logging

    from agent.config import ParsedConfig
    from agent.config_sources import ConfigMapSource
    from agent.kube import core_api, hub_client

    kube.set_configmap(
        "dynamic-scoring", "dynamic-scoring-config", {"summaries": json.dumps([make_summary()])}
    )
    (tmp_path / "kubeconfig").write_text(kube.kubeconfig())
    # built like the managed cluster's client (KUBECONFIG is read once, at import)
    api_client = hub_client(tmp_path / "kubeconfig")
    source = ConfigMapSource(core_api(api_client), "dynamic-scoring", timeout=2.0, max_backoff=0.05)
    events: list[Any] = []

    async def consume() -> None:
        async for event in source.events():
            events.append(event)

    def lists() -> int:
        return sum(
            1
            for r in kube.server.taken()
            if r.path.endswith("/configmaps") and "watch" not in r.query
        )

    task = asyncio.create_task(consume())
    try:
        with caplog.at_level("DEBUG"):
            await wait_for(lambda: bool(events), what="the ConfigMap")
            assert isinstance(events[0], ParsedConfig)
            kube.down = True
            before = lists()
            await wait_for(lambda: lists() >= before + 6, what="several failed lists")
            kube.down = False
            await wait_for(
                lambda: any(r.getMessage() == "configmap_watch_recovered" for r in caplog.records),
                what="recovery",
            )
        watch = [r for r in caplog.records if r.name == "dsf.agent.config"]
        errors = [r for r in watch if r.getMessage() == "configmap_watch_error"]
        assert len(errors) >= 5
        assert [r.levelno for r in errors if r.levelno > logging.DEBUG] == [logging.WARNING]
        assert not [
            r for r in caplog.records if r.name.startswith("urllib3") and r.levelno >= logging.INFO
        ]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        source.stop()
        api_client.close()


@pytest.mark.asyncio
async def test_the_hub_shows_why_scores_are_stale_and_when_they_recover(
    start_agent: Any,
    tmp_path: Path,
    serve: Callable[..., FakeServer],
    kube: FakeKube,
    crd_schema: dict[str, Any],
) -> None:
    """Prometheus down: a False ScoresAvailable condition (scores kept), True again after."""
    import jsonschema

    prometheus, scorer = serve(good_prometheus), serve(average_scorer)
    summary = make_summary(
        sourceEndpoint=f"{prometheus.url}/api/v1/query_range",
        sourceEndpointAuthName="prom-auth",
        sourceEndpointAuthKey="token",
        scoringEndpoint=f"{scorer.url}/scoring",
        scoringInterval=1,
    )
    secrets = tmp_path / "secrets" / "prom-auth"
    secrets.mkdir(parents=True)
    (secrets / "token").write_text("PROM-TOKEN-never-shown")
    write_config(tmp_path / "summaries.json", [summary])
    api_client, _, custom = kube_apis(kube)

    def score_object() -> dict[str, Any]:
        return kube.get("addonplacementscores", CLUSTER, "sample-my-score") or {}

    def condition() -> dict[str, Any]:
        conditions = (score_object().get("status") or {}).get("conditions") or [{}]
        found: dict[str, Any] = conditions[0]
        return found

    def status_writes() -> int:
        return sum(
            1 for r in kube.server.taken() if r.method == "PUT" and r.path.endswith("/status")
        )

    def failed_cycles() -> float:
        return agent.value(
            "dynamic_scoring_requests_total", score_name="sample_my_score", status="failure"
        )

    agent = await start_agent(hub=custom, request_timeout=2.0)
    try:
        await wait_for(lambda: condition().get("status") == "True", what="True condition")
        scores = score_object()["status"]["scores"]
        prometheus.handler = lambda request: Reply(status=0)  # connections dropped
        await wait_for(lambda: condition().get("status") == "False", what="False condition")
        failing = condition()
        assert failing["reason"] == "PrometheusUnreachable", failing
        assert "PROM-TOKEN" not in failing["message"]
        obj = score_object()
        assert obj["status"]["scores"] == scores  # the last good scores stay until validUntil
        jsonschema.validate(
            obj, crd_schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER
        )
        # the failure goes on; the hub is written once per change, not once per cycle
        written, failed = status_writes(), failed_cycles()
        await wait_for(lambda: failed_cycles() >= failed + 2, what="more failed cycles")
        assert status_writes() == written
        assert condition() == failing
        prometheus.handler = good_prometheus
        await wait_for(lambda: condition().get("status") == "True", what="recovery")
        recovered = condition()
        assert recovered["reason"] == "ScoresPublished"
        assert recovered["lastTransitionTime"] >= failing["lastTransitionTime"]
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


@pytest.mark.asyncio
async def test_a_cycle_that_fails_at_the_hub_still_moves_dynamic_score(
    start_agent: Any, tmp_path: Path, serve: Callable[..., FakeServer], kube: FakeKube
) -> None:
    """agent/README.md: the scores reach /metrics whether or not the hub takes them; the
    AddOnPlacementScore keeps its last good scores, and the cycle counts as failed."""
    values = iter(range(1, 10_000))

    def rising_scorer(request: Request) -> Reply:
        value = float(next(values))
        return Reply.json({"results": [{"metric": {"node": "n1"}, "score": value}]})

    prometheus, scorer = serve(good_prometheus), serve(rising_scorer)
    summary = make_summary(
        sourceEndpoint=f"{prometheus.url}/api/v1/query_range",
        scoringEndpoint=f"{scorer.url}/scoring",
        scoringInterval=1,
        scoreDimensionFormat="${node}",
    )
    write_config(tmp_path / "summaries.json", [summary])
    api_client, _, custom = kube_apis(kube)
    agent = await start_agent(hub=custom, request_timeout=2.0)

    def score() -> float:
        return agent.value(
            "dynamic_score",
            ds_cluster=CLUSTER,
            ds_score_name="sample_my_score",
            ds_node="n1",
            ds_app="",
            ds_container="",
            ds_device="",
            ds_meta="",
            ds_namespace="",
            ds_pod="",
        )

    try:
        await wait_for(lambda: successes(agent, "sample_my_score") >= 1, what="first cycle")
        kube.fail.extend([("PUT", "addonplacementscores", 500)] * 50)
        failed_before = failures(agent, "sample_my_score", "publish", "http_5xx")
        await wait_for(
            lambda: failures(agent, "sample_my_score", "publish", "http_5xx") >= failed_before + 1,
            what="a failed publish",
        )
        during = score()
        held = kube.get("addonplacementscores", CLUSTER, "sample-my-score")
        await wait_for(
            lambda: failures(agent, "sample_my_score", "publish", "http_5xx") >= failed_before + 3,
            what="more failed publishes",
        )
        assert score() > during  # the scorer's new values reach the gauge all the same
        assert kube.get("addonplacementscores", CLUSTER, "sample-my-score") == held
        kube.fail.clear()
        await wait_for(
            lambda: kube.get("addonplacementscores", CLUSTER, "sample-my-score") != held,
            what="the hub written again",
        )
    finally:
        agent.stop.set()
        await agent.task
        api_client.close()


@pytest.mark.asyncio
async def test_a_restarted_agent_keeps_the_condition_and_its_transition_time(
    kube: FakeKube,
) -> None:
    """The condition on the hub outlives the agent: a failure that goes on after a restart
    keeps its lastTransitionTime (explain's "failing since") and is not written again."""
    from datetime import UTC, datetime

    from agent.publish import HubPublisher

    def at(second: int) -> datetime:
        return datetime(2026, 1, 1, 12, 0, second, tzinfo=UTC)

    def condition() -> dict[str, Any]:
        obj = kube.get("addonplacementscores", CLUSTER, "s") or {}
        found: dict[str, Any] = obj["status"]["conditions"][0]
        return found

    def status_writes() -> int:
        return sum(
            1 for r in kube.server.taken() if r.method == "PUT" and r.path.endswith("/status")
        )

    scores = {"scores": [{"name": "a", "value": 7}], "validUntil": "2026-01-01T12:05:00Z"}
    api_client, _, custom = kube_apis(kube)
    try:
        await HubPublisher(custom, CLUSTER).publish("s", scores, now=at(0))
        first = HubPublisher(custom, CLUSTER)
        await first.report_failure("s", "PrometheusUnreachable", "down", at(10))
        assert condition()["lastTransitionTime"] == "2026-01-01T12:00:10Z"

        restarted = HubPublisher(custom, CLUSTER)  # a new process: nothing in memory
        written = status_writes()
        assert not await restarted.report_failure("s", "PrometheusUnreachable", "down", at(20))
        assert status_writes() == written
        assert await restarted.report_failure("s", "QueryFailed", "HTTP 500", at(30))
        changed = condition()
        assert (changed["reason"], changed["lastTransitionTime"]) == (
            "QueryFailed",
            "2026-01-01T12:00:10Z",  # still False: no transition
        )
        obj = kube.get("addonplacementscores", CLUSTER, "s") or {}
        assert obj["status"]["scores"] == scores["scores"]

        await HubPublisher(custom, CLUSTER).publish("s", scores, now=at(40))
        assert condition()["lastTransitionTime"] == "2026-01-01T12:00:40Z"  # False → True
        await HubPublisher(custom, CLUSTER).publish("s", scores, now=at(50))
        assert condition()["lastTransitionTime"] == "2026-01-01T12:00:40Z"  # True stays True
    finally:
        api_client.close()
