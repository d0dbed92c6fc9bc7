"""One cycle with injected fakes: an ``httpx.MockTransport`` for Prometheus and the Scoring
API, a Secret directory, and the emulated hub driven through the official client."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import pytest_asyncio

from agent.logs import REDACTOR, configure_logging
from agent.publish import HubPublisher
from tests.agent.agent_fakes import FakeKube
from tests.agent.conftest import CLUSTER
from tests.agent.cycle_harness import (
    Fakes,
    Harness,
    echo_scores,
    prom_answer,
    series,
)


@pytest_asyncio.fixture
async def harness(tmp_path: Path) -> AsyncIterator[Harness]:
    h = Harness(Fakes(), tmp_path, None)
    yield h
    await h.client.aclose()


@pytest_asyncio.fixture
async def hub_harness(
    tmp_path: Path, kube: FakeKube, apis: tuple[Any, Any]
) -> AsyncIterator[Harness]:
    h = Harness(Fakes(), tmp_path, HubPublisher(apis[1], CLUSTER, timeout=5.0, retries=3))
    yield h
    await h.client.aclose()


@pytest.mark.asyncio
async def test_cycle_publishes_metrics_and_placement_score(
    hub_harness: Harness, kube: FakeKube, crd_schema: dict[str, Any]
) -> None:
    hub_harness.fakes.prometheus = lambda r: prom_answer(
        [series("n2", "250"), series("n1", "-3.5")]
    )
    assert await hub_harness.cycle()
    assert hub_harness.score("n1") == -3.5 and hub_harness.score("n2") == 250.0
    assert (
        hub_harness.value(
            "dynamic_scoring_requests_total", score_name="sample_my_score", status="success"
        )
        == 1
    )
    obj = kube.get("addonplacementscores", CLUSTER, "sample-my-score")
    assert obj is not None
    assert obj["status"]["scores"] == [
        {"name": "n1;ns;n1-pod", "value": -4},
        {"name": "n2;ns;n2-pod", "value": 100},
    ]
    assert obj["status"]["validUntil"] == "2024-06-17T04:53:23Z"  # NOW + 3 x 1 s
    jsonschema.validate(obj, crd_schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    # Prometheus got the range query, the scorer got exactly the series.
    prom_request, score_request = hub_harness.fakes.requests
    assert dict(prom_request.url.params) == {
        "query": "up",
        "start": "1718599400",
        "end": "1718600000",
        "step": "60",
    }
    assert score_request.headers["content-type"] == "application/json"
    assert [s["metric"]["node"] for s in json.loads(score_request.content)["data"]] == ["n2", "n1"]


@pytest.mark.asyncio
async def test_second_cycle_updates_in_place(hub_harness: Harness, kube: FakeKube) -> None:
    assert await hub_harness.cycle()
    hub_harness.fakes.prometheus = lambda r: prom_answer([series("n1", "7")])
    assert await hub_harness.cycle()
    obj = kube.get("addonplacementscores", CLUSTER, "sample-my-score")
    assert obj is not None and obj["status"]["scores"] == [{"name": "n1;ns;n1-pod", "value": 7}]
    writes = [r for r in kube.server.taken() if r.method in ("POST", "PUT")]
    assert [r.method for r in writes] == [
        "POST",
        "PUT",
        "PUT",
    ]  # create once, then status writes only


@pytest.mark.asyncio
async def test_conflicts_are_retried_a_bounded_number_of_times(
    hub_harness: Harness, kube: FakeKube
) -> None:
    assert await hub_harness.cycle()
    kube.conflicts = 2
    # new scores each cycle: unchanged ones would not be written again (test_agent_hub_writes)
    hub_harness.fakes.prometheus = lambda r: prom_answer([series("n1", "7")])
    assert await hub_harness.cycle()
    assert (
        hub_harness.value("dynamic_scoring_hub_conflicts_total", score_name="sample_my_score") == 2
    )
    kube.conflicts = 1000
    hub_harness.fakes.prometheus = lambda r: prom_answer([series("n1", "8")])
    before = len(kube.server.taken())
    assert not await hub_harness.cycle()
    puts = [r for r in kube.server.taken()[before:] if r.method == "PUT"]
    assert len(puts) == 4  # the first try plus retries=3
    assert (
        hub_harness.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage="publish",
            reason="conflict",
        )
        == 1
    )
    kube.conflicts = 0
    assert await hub_harness.cycle()


@pytest.mark.asyncio
async def test_object_changed_by_another_writer_is_reread(
    hub_harness: Harness, kube: FakeKube
) -> None:
    assert await hub_harness.cycle()
    current = kube.get("addonplacementscores", CLUSTER, "sample-my-score")
    assert current is not None
    kube.put(
        "addonplacementscores",
        CLUSTER,
        {**current, "metadata": {**current["metadata"], "labels": {"x": "y"}}},
    )
    hub_harness.fakes.prometheus = lambda r: prom_answer([series("n1", "7")])
    assert await hub_harness.cycle()
    kube.delete("addonplacementscores", CLUSTER, "sample-my-score")
    # new scores: written at once (unchanged ones wait for their rewrite, see
    # test_agent_hub_writes), and the object deleted meanwhile is created again
    hub_harness.fakes.prometheus = lambda r: prom_answer([series("n1", "8")])
    assert await hub_harness.cycle()
    assert kube.get("addonplacementscores", CLUSTER, "sample-my-score") is not None


@pytest.mark.asyncio
async def test_hub_500_fails_the_cycle_but_the_scores_reach_metrics(
    hub_harness: Harness, kube: FakeKube
) -> None:
    kube.fail.append(("GET", "addonplacementscores", 500))
    assert not await hub_harness.cycle()
    # agent/README.md: the scores reach /metrics whether or not the hub takes them; the
    # cycle is still a failure, counted at the publish stage
    assert hub_harness.score("n1") == 42.9
    assert (
        hub_harness.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage="publish",
            reason="http_5xx",
        )
        == 1
    )
    assert await hub_harness.cycle()
    assert hub_harness.score("n1") == 42.9


@pytest.mark.asyncio
async def test_destination_none_writes_no_placement_score(
    hub_harness: Harness, kube: FakeKube
) -> None:
    assert await hub_harness.cycle(scoreDestination="None")
    assert kube.get("addonplacementscores", CLUSTER, "sample-my-score") is None
    assert hub_harness.score("n1") == 42.9


@pytest.mark.asyncio
async def test_failed_cycle_changes_nothing_published(harness: Harness) -> None:
    assert await harness.cycle()
    harness.fakes.scorer = lambda r: httpx.Response(500, text="boom")
    assert not await harness.cycle()
    assert harness.score("n1") == 42.9
    assert (
        harness.value(
            "dynamic_scoring_requests_total", score_name="sample_my_score", status="failure"
        )
        == 1
    )
    assert (
        harness.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage="score",
            reason="http_5xx",
        )
        == 1
    )


@pytest.mark.asyncio
async def test_series_missing_from_the_latest_result_are_deleted(harness: Harness) -> None:
    harness.fakes.prometheus = lambda r: prom_answer([series("n1"), series("n2")])
    assert await harness.cycle()
    harness.fakes.prometheus = lambda r: prom_answer([series("n2", "5")])
    assert await harness.cycle()
    assert harness.score("n1") is None and harness.score("n2") == 5.0


@pytest.mark.asyncio
async def test_source_type_none_posts_empty_data(harness: Harness) -> None:
    harness.fakes.scorer = lambda r: httpx.Response(
        200, json={"results": [{"metric": {"node": "static"}, "score": 3}]}
    )
    assert await harness.cycle(
        sourceType="None", sourceEndpoint="", sourceQuery="", sourceRange=0, sourceStep=0
    )
    (request,) = harness.fakes.requests
    assert json.loads(request.content) == {"data": []}


@pytest.mark.asyncio
async def test_queries_split_on_semicolon_are_concatenated(harness: Harness) -> None:
    harness.fakes.prometheus = lambda r: prom_answer([series(r.url.params["query"])])
    assert await harness.cycle(sourceQuery="a;b")
    score_request = harness.fakes.requests[-1]
    assert [s["metric"]["node"] for s in json.loads(score_request.content)["data"]] == ["a", "b"]
    harness.fakes.prometheus = lambda r: (
        prom_answer([])
        if r.url.params["query"] == "a"
        else httpx.Response(422, json={"status": "error"})
    )
    assert not await harness.cycle(sourceQuery="a;b")  # a partial input fails the cycle


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stage", "prometheus", "scorer", "reason"),
    [
        ("fetch", lambda r: httpx.Response(503), echo_scores, "http_5xx"),
        ("fetch", lambda r: httpx.Response(200, text="<html>"), echo_scores, "invalid_response"),
        (
            "fetch",
            lambda r: httpx.Response(200, json={"status": "error"}),
            echo_scores,
            "query_error",
        ),
        (
            "fetch",
            lambda r: httpx.Response(200, json={"status": "success", "data": {}}),
            echo_scores,
            "invalid_response",
        ),
        ("score", None, lambda r: httpx.Response(200, text="not json"), "invalid_response"),
        ("score", None, lambda r: httpx.Response(200, json={"scores": []}), "invalid_response"),
        ("score", None, lambda r: httpx.Response(200, content=b"[" * 10000), "too_large"),
        (
            "score",
            None,
            lambda r: httpx.Response(302, headers={"Location": "http://elsewhere/"}),
            "http_3xx",
        ),
    ],
)
async def test_bad_answers_fail_the_right_stage(
    harness: Harness, stage: str, prometheus: Any, scorer: Any, reason: str
) -> None:
    if prometheus is not None:
        harness.fakes.prometheus = prometheus
    harness.fakes.scorer = scorer
    assert not await harness.cycle()
    assert (
        harness.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage=stage,
            reason=reason,
        )
        == 1
    )


@pytest.mark.asyncio
async def test_nan_scores_are_skipped_and_counted(harness: Harness) -> None:
    harness.fakes.scorer = lambda r: httpx.Response(
        200,
        content=b'{"results": [{"metric": {"node": "n1", "namespace": "ns", "pod": "n1-pod"}, "score": NaN},'
        b'{"metric": {"node": "n2", "namespace": "ns", "pod": "n2-pod"}, "score": 4}]}',
    )
    assert await harness.cycle()
    assert harness.score("n1") is None and harness.score("n2") == 4.0
    assert harness.value("dynamic_scoring_skipped_results_total", score_name="sample_my_score") == 1


@pytest.mark.asyncio
async def test_missing_secret_disables_then_recovers(harness: Harness) -> None:
    auth = {"scoringEndpointAuthName": "scorer-token", "scoringEndpointAuthKey": "token"}
    assert not await harness.cycle(**auth)
    assert harness.value("dynamic_scoring_scorer_enabled", score_name="sample_my_score") == 0
    assert harness.value(
        "dynamic_scoring_failures_total",
        score_name="sample_my_score",
        stage="secret",
        reason="not_found",
    )
    assert harness.fakes.requests == []  # nothing is sent without the token
    harness.secret("scorer-token", "token", "tok-abc-123")
    assert await harness.cycle(**auth)
    assert harness.value("dynamic_scoring_scorer_enabled", score_name="sample_my_score") == 1


@pytest.mark.asyncio
async def test_tokens_are_sent_but_never_logged_or_exposed(harness: Harness) -> None:
    harness.secret("prom-auth", "bearer", "prom-TOKEN-0001")
    harness.secret("scorer-auth", "bearer", "scorer-TOKEN-0002")
    auth = {
        "sourceEndpointAuthName": "prom-auth",
        "sourceEndpointAuthKey": "bearer",
        "scoringEndpointAuthName": "scorer-auth",
        "scoringEndpointAuthKey": "bearer",
    }

    def rejecting(request: httpx.Request) -> httpx.Response:
        # A hostile or buggy scorer that echoes the header back in its error.
        raise httpx.ConnectError(f"refused {request.headers['authorization']}")

    stream = io.StringIO()
    configure_logging("debug", "json", stream=stream)
    try:
        assert await harness.cycle(**auth)
        harness.fakes.scorer = rejecting
        assert not await harness.cycle(**auth)
    finally:
        configure_logging("warning", "text")
    prom_request, score_request = harness.fakes.requests[:2]
    assert prom_request.headers["authorization"] == "Bearer prom-TOKEN-0001"
    assert score_request.headers["authorization"] == "Bearer scorer-TOKEN-0002"
    output = stream.getvalue() + harness.metrics.exposition().decode()
    assert "cycle_failed" in output
    assert "TOKEN" not in output
    assert REDACTOR.redact("x prom-TOKEN-0001 y") == "x *** y"


@pytest.mark.asyncio
async def test_unexpected_errors_cost_one_cycle(
    harness: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    def explode(request: httpx.Request) -> httpx.Response:
        raise RuntimeError("bug in a transport")

    harness.fakes.scorer = explode
    with caplog.at_level(logging.WARNING):
        assert not await harness.cycle()
    assert harness.value(
        "dynamic_scoring_failures_total",
        score_name="sample_my_score",
        stage="score",
        reason="RuntimeError",
    )
