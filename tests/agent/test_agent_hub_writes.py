"""What the agent writes to the hub, and when: unchanged scores are not written again until
``validUntil`` comes near, changed ones at once; answers the hub could not store are
refused before any write. One cycle at a time with a controlled clock, against the
emulated hub driven by the official client."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio

from agent.publish import HubPublisher
from tests.agent.agent_fakes import FakeKube
from tests.agent.conftest import CLUSTER
from tests.agent.cycle_harness import NOW, Fakes, Harness, prom_answer, series

INTERVAL = 10
OBJECT = "sample-my-score"


class Clocked(Harness):
    """The cycle harness with a clock the test moves, and the hub's writes counted."""

    def __init__(self, tmp_path: Path, kube: FakeKube, custom: Any) -> None:
        super().__init__(Fakes(), tmp_path, HubPublisher(custom, CLUSTER, timeout=5.0))
        self.kube = kube
        self.now = NOW
        self.ctx.wall_clock = lambda: self.now
        self.settings = self.ctx.settings = replace(self.settings, hub_spread=0.0)

    async def cycle_at(self, offset: float, **summary: Any) -> bool:
        self.now = NOW + offset
        return await self.cycle(scoringInterval=INTERVAL, **summary)

    def requests(self, method: str) -> int:
        return sum(
            1
            for r in self.kube.server.taken()
            if r.method == method and "/addonplacementscores" in r.path
        )

    def status_writes(self) -> int:
        return sum(
            1
            for r in self.kube.server.taken()
            if r.method == "PUT" and r.path.endswith(f"/{OBJECT}/status")
        )

    def held(self) -> dict[str, Any]:
        obj = self.kube.get("addonplacementscores", CLUSTER, OBJECT)
        assert obj is not None
        status: dict[str, Any] = obj["status"]
        return status

    def writes(self, result: str) -> float:
        return (
            self.value(
                "dynamic_scoring_hub_writes_total", score_name="sample_my_score", result=result
            )
            or 0.0
        )


@pytest_asyncio.fixture
async def clocked(tmp_path: Path, kube: FakeKube, apis: tuple[Any, Any]) -> AsyncIterator[Clocked]:
    h = Clocked(tmp_path, kube, apis[1])
    yield h
    await h.client.aclose()


@pytest.mark.asyncio
async def test_unchanged_scores_are_not_written_again_until_valid_until_comes_near(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    assert clocked.status_writes() == 1
    first = clocked.held()
    assert first["validUntil"] == "2024-06-17T04:53:50Z"  # NOW + 3 x 10 s

    # one interval later: the hub holds these scores for two more intervals
    assert await clocked.cycle_at(INTERVAL)
    assert clocked.status_writes() == 1
    assert clocked.held() == first
    assert (clocked.writes("written"), clocked.writes("unchanged")) == (1, 1)
    # the scores were published all the same
    assert clocked.score("n1") == 42.9

    # two intervals later only one is left: written again, before the scores lapse
    assert await clocked.cycle_at(2 * INTERVAL + 0.4)
    assert clocked.status_writes() == 2
    assert clocked.held()["validUntil"] == "2024-06-17T04:54:10Z"
    assert clocked.held()["scores"] == first["scores"]
    assert (clocked.writes("written"), clocked.writes("unchanged")) == (2, 1)


@pytest.mark.asyncio
async def test_changed_scores_are_written_at_once(clocked: Clocked) -> None:
    assert await clocked.cycle_at(0)
    clocked.fakes.prometheus = lambda r: prom_answer([series("n1", "12")])
    assert await clocked.cycle_at(1)  # long before validUntil
    assert clocked.status_writes() == 2
    assert clocked.held()["scores"] == [{"name": "n1;ns;n1-pod", "value": 12}]
    # a new item with the same values elsewhere is a change too
    clocked.fakes.prometheus = lambda r: prom_answer([series("n1", "12"), series("n2", "12")])
    assert await clocked.cycle_at(2)
    assert clocked.status_writes() == 3


@pytest.mark.asyncio
async def test_a_recovered_scorer_writes_its_condition_even_with_the_same_scores(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    clocked.fakes.prometheus = lambda r: httpx.Response(500)
    assert not await clocked.cycle_at(INTERVAL)
    assert clocked.held()["conditions"][0]["status"] == "False"
    clocked.fakes.prometheus = lambda r: prom_answer([series("n1", "42.9")])
    writes = clocked.status_writes()
    assert await clocked.cycle_at(INTERVAL + 1)
    assert clocked.status_writes() == writes + 1
    assert clocked.held()["conditions"][0]["status"] == "True"


@pytest.mark.asyncio
async def test_a_restarted_agent_reads_once_and_writes_nothing_while_scores_hold(
    clocked: Clocked, tmp_path: Path, kube: FakeKube, apis: tuple[Any, Any]
) -> None:
    assert await clocked.cycle_at(0)
    restarted = Clocked(tmp_path / "restarted", kube, apis[1])  # nothing in memory
    try:
        gets, puts = restarted.requests("GET"), restarted.requests("PUT")
        assert await restarted.cycle_at(5)
        assert await restarted.cycle_at(5 + INTERVAL - 1)
        assert (restarted.requests("GET"), restarted.requests("PUT")) == (gets + 1, puts)
        assert await restarted.cycle_at(5 + INTERVAL + 1)  # 14 s left < 1.5 intervals
        assert restarted.requests("PUT") == puts + 1
    finally:
        await restarted.client.aclose()


@pytest.mark.asyncio
async def test_scores_the_hub_could_not_store_are_refused_before_writing(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    good = clocked.held()["scores"]
    long = "x" * 20_000  # item names are not cut: 100 of them make 2 MB
    answer = {"results": [{"metric": {"node": f"{long}{i}"}, "score": 1} for i in range(100)]}
    clocked.settings = clocked.ctx.settings = replace(
        clocked.settings, max_scoring_response_bytes=4 * 1024 * 1024
    )
    clocked.fakes.scorer = lambda r: httpx.Response(200, content=json.dumps(answer).encode())
    writes = clocked.status_writes()
    assert not await clocked.cycle_at(1)
    assert (
        clocked.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage="score",
            reason="status_too_large",
        )
        == 1
    )
    held = clocked.held()
    assert held["scores"] == good  # kept until validUntil
    assert held["conditions"][0]["reason"] == "InvalidResponse"
    assert clocked.status_writes() == writes + 1  # the condition only
    assert clocked.score("n1") == 42.9  # dynamic_score did not move either


@pytest.mark.asyncio
async def test_an_answer_over_the_result_cap_fails_the_cycle_and_is_counted(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    clocked.settings = clocked.ctx.settings = replace(clocked.settings, max_results=3)
    clocked.fakes.prometheus = lambda r: prom_answer([series(f"m{i}") for i in range(4)])
    assert not await clocked.cycle_at(1)
    assert (
        clocked.value(
            "dynamic_scoring_failures_total",
            score_name="sample_my_score",
            stage="score",
            reason="too_many_results",
        )
        == 1
    )
    assert clocked.score("m0") is None and clocked.score("n1") == 42.9
    assert "more than 3 results" in clocked.held()["conditions"][0]["message"]


def test_the_first_hub_write_is_spread_within_half_an_interval_and_the_setting() -> None:
    from agent.cycle import first_write_delay
    from agent.settings import RuntimeSettings
    from dsf_contract.summary import Summary
    from tests.agent.conftest import make_summary

    def delays(interval: int, spread: float = 10.0, cluster: str = CLUSTER) -> list[float]:
        settings = RuntimeSettings(cluster_name=cluster, hub_spread=spread)
        summary = Summary.model_validate(make_summary(scoringInterval=interval))
        return [first_write_delay(settings, f"score_{i}", summary) for i in range(200)]

    assert all(0 <= d < 10 for d in delays(30)) and max(delays(30)) > 8
    assert all(0 <= d < 0.5 for d in delays(1))
    assert delays(30, spread=0) == [0.0] * 200
    # every cluster spreads its own way: a fleet restarting together is spread too
    assert delays(30) != delays(30, cluster="worker02")


@pytest.mark.asyncio
async def test_a_shortened_interval_rewrites_unchanged_scores_with_the_shorter_validity(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    clocked.now = NOW + 1
    assert await clocked.cycle(scoringInterval=2)  # 29 s left, more than 3 x 2 s
    assert clocked.status_writes() == 2
    assert clocked.held()["validUntil"] == "2024-06-17T04:53:27Z"  # NOW + 1 + 3 x 2 s


@pytest.mark.asyncio
async def test_an_object_deleted_on_the_hub_comes_back_by_the_next_rewrite(
    clocked: Clocked,
) -> None:
    assert await clocked.cycle_at(0)
    clocked.kube.delete("addonplacementscores", CLUSTER, OBJECT)
    assert await clocked.cycle_at(INTERVAL)  # the agent cannot know without reading
    assert clocked.kube.get("addonplacementscores", CLUSTER, OBJECT) is None
    assert await clocked.cycle_at(2 * INTERVAL)
    assert clocked.held()["scores"] == [{"name": "n1;ns;n1-pod", "value": 42}]
