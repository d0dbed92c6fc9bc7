"""The agent against hostile Kubernetes APIs: a hub (and a managed cluster API) that drips
its answers, floods them, or never ends a watch, driven through the real ``kubernetes``
client as production builds it (:mod:`agent.kube`).

Every case ends with the request cut: a whole-request deadline, a byte cap. The server's
counters show the client stopped reading (no figure of elapsed time is asserted; the
pytest timeout is only a hang guard).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from agent.config_sources import ConfigMapSource, WatchEndedError
from agent.cycle import CycleContext
from agent.errors import PublishError
from agent.kube import MAX_API_ANSWER_BYTES, core_api, custom_objects_api, hub_client
from agent.loop import STALL_INTERVALS, Agent
from agent.metrics import AgentMetrics
from agent.publish import HubPublisher
from agent.secrets import ApiSecretStore
from agent.settings import RuntimeSettings
from dsf_contract.failures import RequestFailure
from tests.agent.conftest import CLUSTER
from tests.agent.cycle_harness import Fakes, Harness
from tests.agent.fleet_apis import poll_until
from tests.hostile_hub import HostileHub, HubRequest, drip, endless_body

pytestmark = pytest.mark.timeout(120)

SCORE = {
    "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
    "kind": "AddOnPlacementScore",
    "metadata": {"name": "sample-my-score", "namespace": CLUSTER, "resourceVersion": "1"},
    "status": {},
}


def dripping(request: HubRequest) -> Iterator[tuple[float, bytes]]:
    """A whole, valid answer, one byte every 0.2 s: no socket read ever times out."""
    body = json.dumps(SCORE).encode()
    head = (
        f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode()
    yield 0.0, head
    yield from drip(body, 0.2)


def settled(server: HostileHub) -> int:
    """The server's bytes sent once it saw the client hang up on every request (a send
    refused): no more can go out."""
    poll_until(
        lambda: server.hung_up >= len(server.requests) > 0,
        "the client to hang up",
        lambda: f"{server.hung_up} of {len(server.requests)} requests hung up",
    )
    return server.bytes_sent


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[HostileHub, Path]]:
    server = HostileHub().start()
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(server.kubeconfig(), encoding="utf-8")
    yield server, kubeconfig
    server.stop()


def publisher(kubeconfig: Path, timeout: float = 1.0) -> HubPublisher:
    return HubPublisher(custom_objects_api(hub_client(kubeconfig)), CLUSTER, timeout=timeout)


@pytest.mark.asyncio
async def test_a_hub_dripping_its_answer_is_cut_at_the_whole_request_deadline(
    hub: tuple[HostileHub, Path],
) -> None:
    server, kubeconfig = hub
    server.answer = dripping
    writer = publisher(kubeconfig)
    try:
        with pytest.raises(PublishError) as caught:
            await writer.publish("sample-my-score", {"scores": []})
    finally:
        writer.close()
    assert caught.value.reason == RequestFailure.TIMEOUT
    # the client hung up (it did not go on reading in a thread): what the server got out
    # stops growing long before the end of the body
    assert settled(server) < len(json.dumps(SCORE))


@pytest.mark.asyncio
async def test_a_flooding_hub_is_cut_at_the_byte_cap(hub: tuple[HostileHub, Path]) -> None:
    server, kubeconfig = hub
    server.answer = lambda request: endless_body()
    writer = publisher(kubeconfig, timeout=60.0)
    try:
        with pytest.raises(PublishError) as caught:
            await writer.publish("sample-my-score", {"scores": []})
    finally:
        writer.close()
    assert caught.value.reason == RequestFailure.TOO_LARGE
    assert str(MAX_API_ANSWER_BYTES) in str(caught.value)
    # what the server got out before the client hung up: the cap and the socket buffers
    assert server.bytes_sent < 4 * MAX_API_ANSWER_BYTES


@pytest_asyncio.fixture
async def on_dripping_hub(hub: tuple[HostileHub, Path], tmp_path: Path) -> AsyncIterator[Harness]:
    """Cycles whose hub drips every answer."""
    server, kubeconfig = hub
    server.answer = dripping
    writer = publisher(kubeconfig)
    harness = Harness(Fakes(), tmp_path, writer)
    yield harness
    writer.close()
    await harness.client.aclose()


@pytest.mark.asyncio
async def test_the_scores_reach_metrics_while_the_hub_drips(on_dripping_hub: Harness) -> None:
    harness = on_dripping_hub
    assert not await harness.cycle()  # the cycle ends, failed at publish
    assert harness.score("n1") == 42.9
    failed = {"score_name": "sample_my_score", "stage": "publish", "reason": "timeout"}
    assert harness.value("dynamic_scoring_failures_total", **failed) == 1


@pytest.mark.asyncio
async def test_many_scorers_on_a_dripping_hub_all_end_their_cycles(
    on_dripping_hub: Harness,
) -> None:
    # more scorers than the publisher's threads: those waiting for a thread end at the
    # same deadline, and every scorer's scores are on /metrics
    harness = on_dripping_hub
    names = [f"score_{i}" for i in range(12)]
    done = await asyncio.gather(
        *(harness.cycle(name=f"s-{i}", scoreName=n) for i, n in enumerate(names))
    )
    assert done == [False] * len(names)
    assert all(harness.score("n1", name) == 42.9 for name in names)


def test_the_managed_cluster_api_is_bounded_too(hub: tuple[HostileHub, Path]) -> None:
    # a Secret read and the ConfigMap list on an API that drips or floods
    server, kubeconfig = hub
    api = core_api(hub_client(kubeconfig))
    server.answer = dripping
    secrets = ApiSecretStore(api, "dynamic-scoring", timeout=1.0)
    with pytest.raises(Exception, match="no complete answer within 1 s"):
        secrets._read("token")
    server.answer = lambda request: endless_body()
    source = ConfigMapSource(api, "dynamic-scoring", timeout=60.0)
    with pytest.raises(Exception, match=f"answer over {MAX_API_ANSWER_BYTES} bytes"):
        source._list_document()
    assert server.bytes_sent < 4 * MAX_API_ANSWER_BYTES


def test_a_watch_flooding_one_endless_line_ends_and_lists_again(
    hub: tuple[HostileHub, Path],
) -> None:
    server, kubeconfig = hub
    server.answer = lambda request: endless_body()
    source = ConfigMapSource(core_api(hub_client(kubeconfig)), "dynamic-scoring")

    with pytest.raises(WatchEndedError, match="answer over"):
        source._watch("7")


def _agent(interval: int, request_timeout: float) -> Agent:
    settings = RuntimeSettings(cluster_name=CLUSTER, request_timeout=request_timeout)
    ctx = CycleContext(
        settings=settings,
        client=None,  # type: ignore[arg-type]  # no cycle runs here
        secrets=None,  # type: ignore[arg-type]
        metrics=AgentMetrics(CLUSTER),
    )
    agent = Agent(ctx)

    class Runner:
        summary = type("S", (), {"scoringInterval": interval})()

    agent.runners["a"] = Runner()  # type: ignore[assignment]
    agent.ready.set()
    return agent


def test_readyz_fails_when_no_cycle_has_finished_for_several_windows() -> None:
    agent = _agent(interval=5, request_timeout=30.0)
    # the window: the shortest interval, at least the request timeout (every cycle ends
    # within it, the APIs it calls hanging or not)
    assert agent.stall_window() == STALL_INTERVALS * 30.0
    assert agent.is_ready()
    agent.progressed -= agent.stall_window() + 1  # nothing finished for that long
    assert not agent.is_ready()
    agent.finished()
    assert agent.is_ready()
    assert _agent(interval=600, request_timeout=30.0).stall_window() == STALL_INTERVALS * 600
    empty = _agent(interval=1, request_timeout=1.0)
    empty.runners.clear()  # no scorer: nothing to finish, ready once configured
    empty.progressed -= 1e6
    assert empty.is_ready()
