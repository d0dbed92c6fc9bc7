"""The compliance claim against a managed cluster API that floods, drips, ends its watches at
once or holds a claim of another owner: the emulated API enforcing the rendered RBAC
(:mod:`tests.agent.fleet_apis`), the real ``kubernetes`` client as the agent builds it.

Every case ends with the request cut or the round refused, counted
(``dynamic_scoring_failures_total{stage="compliance"}``) and logged; the server's counters
show the client stopped reading. No elapsed time is measured: the waits between watches
run on a virtual clock (:class:`VirtualWaits`), which the backoff advances.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import pytest

from agent.compliance import (
    COMPLIANT,
    EMPTY,
    NONCOMPLIANT,
    POLICY_PAGE,
    Backoff,
    ClaimApi,
    ComplianceClaim,
    made_by_agent,
)
from agent.errors import AgentError, Reason
from agent.kube import MAX_API_ANSWER_BYTES, BoundedReadError, custom_objects_api, hub_client
from agent.metrics import AgentMetrics
from dsf_contract.failures import RequestFailure
from dsf_transport.kube_bounds import StopReadError
from tests.agent.agent_fakes import Reply, Request
from tests.agent.agent_probes import value
from tests.agent.compliance_fleet import (
    CLAIM,
    STABLE,
    fleet,
    policy,
    processed,
    render,
    scored,
    start_agent,
)
from tests.agent.conftest import AgentProcess
from tests.agent.exposed import sample_value
from tests.agent.fleet_apis import CLUSTER, SA_TOKEN, FleetApis, fleet_apis, poll_until

pytestmark = pytest.mark.timeout(180)

POLICIES = f"/apis/policy.open-cluster-management.io/v1/namespaces/{CLUSTER}/policies"
GIB = 1024**3


def test_backoff_doubles_up_to_the_poll_and_restarts() -> None:
    backoff = Backoff(first=1.0, most=5.0)
    assert [backoff.next() for _ in range(5)] == [1.0, 2.0, 4.0, 5.0, 5.0]
    backoff.reset()
    assert backoff.next() == 1.0


def test_made_by_agent_reads_the_agents_label() -> None:
    ours = {"metadata": {"labels": {"app.kubernetes.io/managed-by": "dsf-agent"}}}
    assert made_by_agent(ours)
    assert not made_by_agent({"metadata": {"name": "id.k8s.io"}})
    assert not made_by_agent({"metadata": {"labels": {"app.kubernetes.io/managed-by": "x"}}})
    assert not made_by_agent({"metadata": {"labels": ["junk"]}})


@dataclass
class Flood:
    """A chunked body of ``total`` bytes (no newline), counting what the server got out."""

    total: int
    sent: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def chunks(self, chunk: bytes = b" " * 65536) -> Iterator[bytes]:
        while self.sent < self.total:
            with self.lock:
                self.sent += len(chunk)
            yield chunk


def is_watch(request: Request) -> bool:
    return request.query.get("watch", ["false"])[0] == "true"


class VirtualWaits(threading.Event):
    """A loop's stop event on a virtual clock: a wait with a timeout returns at once (the
    stop's state), :attr:`now` advanced by it; past ``most`` such waits, a wait blocks
    until the stop (the loop idles instead of spinning). :attr:`now` is the loop's clock."""

    def __init__(self, most: int) -> None:
        super().__init__()
        self.now, self.most = 0.0, most
        self.waits: list[float] = []

    def clock(self) -> float:
        return self.now

    def wait(self, timeout: float | None = None) -> bool:
        if not timeout:
            return self.is_set() if timeout == 0 else super().wait()
        if len(self.waits) >= self.most:
            return super().wait()
        self.waits.append(timeout)
        self.now += timeout
        return self.is_set()


def early_watches(path: str, virtual: VirtualWaits) -> tuple[list[float], Callable[..., Any]]:
    """The virtual moments of the watches of ``path``, and the hostile answer that ends each
    at once (recording its moment: the loop is inside the request, its clock still)."""
    moments: list[float] = []

    def hostile(request: Request) -> Reply | None:
        if request.path != path or not is_watch(request):
            return None
        moments.append(virtual.now)
        return Reply(chunks=[])

    return moments, hostile


@pytest.fixture(scope="module")
def claim_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, Any]:
    folder = tmp_path_factory.mktemp("claim")
    settings = f"  complianceClaim:\n    pollSeconds: 2\n    stableSeconds: {STABLE}\n"
    template, cluster_roles = render(fleet(folder, require=True, settings=settings))
    return processed(template), cluster_roles


@pytest.fixture
def apis(claim_template: tuple[Any, Any], tmp_path: Path) -> Iterator[FleetApis]:
    with fleet_apis(*claim_template, tmp_path) as running:
        yield running


@dataclass
class Claim:
    claim: ComplianceClaim
    metrics: AgentMetrics

    def failures(self, reason: str) -> float:
        labels = {"score_name": "", "stage": "compliance", "reason": reason}
        found = sample_value(self.metrics, "dynamic_scoring_failures_total", labels)
        return 0.0 if found is None else found


def claim_of(
    apis: FleetApis,
    folder: Path,
    *,
    poll: float = 2.0,
    timeout: float = 30.0,
    clock: Callable[[], float] = time.monotonic,
) -> Claim:
    """The claim's loop (not started) with the client the agent builds from a kubeconfig."""
    kubeconfig = folder / "managed.kubeconfig"
    kubeconfig.write_text(apis.managed.kubeconfig(SA_TOKEN))
    api = cast(ClaimApi, custom_objects_api(hub_client(kubeconfig)))
    metrics = AgentMetrics(CLUSTER)
    claim = ComplianceClaim(
        api, CLUSTER, CLAIM, metrics, poll=poll, stable=0.0, timeout=timeout, clock=clock
    )
    return Claim(claim, metrics)


def test_a_flooded_policy_list_is_cut_at_the_byte_cap(apis: FleetApis, tmp_path: Path) -> None:
    flood = Flood(int(1.5 * GIB))
    apis.managed.hostile = lambda request: (
        Reply(chunks=flood.chunks()) if request.path == POLICIES and not is_watch(request) else None
    )
    with pytest.raises(BoundedReadError) as caught:
        claim_of(apis, tmp_path).claim.round()
    assert caught.value.reason == RequestFailure.TOO_LARGE
    assert str(MAX_API_ANSWER_BYTES) in str(caught.value)
    assert flood.sent < 4 * MAX_API_ANSWER_BYTES  # the cap and the socket buffers
    assert apis.denied() == []


def test_a_dripping_policy_list_is_cut_at_the_deadline(apis: FleetApis, tmp_path: Path) -> None:
    body = b'{"kind":"List","metadata":{"resourceVersion":"7"},"items":[]}'
    apis.managed.hostile = lambda request: (
        Reply(chunks=[body[i : i + 1] for i in range(len(body))], drip=0.2)
        if request.path == POLICIES
        else None
    )
    with pytest.raises(BoundedReadError, match="no complete answer within 1 s") as caught:
        claim_of(apis, tmp_path, timeout=1.0).claim.round()
    assert caught.value.reason == RequestFailure.TIMEOUT


def test_an_endless_watch_line_is_cut_at_the_byte_cap(apis: FleetApis, tmp_path: Path) -> None:
    flood = Flood(int(1.5 * GIB))
    apis.managed.hostile = lambda request: (
        Reply(chunks=flood.chunks()) if request.path == POLICIES and is_watch(request) else None
    )
    claim = claim_of(apis, tmp_path).claim
    version = claim.round()
    with pytest.raises(BoundedReadError) as caught:
        claim._watch(version, 2.0)
    assert caught.value.reason == RequestFailure.TOO_LARGE
    assert flood.sent < 4 * MAX_API_ANSWER_BYTES


def test_the_policies_are_listed_in_pages(apis: FleetApis, tmp_path: Path) -> None:
    for index in range(2 * POLICY_PAGE + 1):
        apis.managed.put("policies", CLUSTER, policy(f"p{index:03}", "Compliant"))
    claim = claim_of(apis, tmp_path)
    claim.claim.round()
    lists = [r for r in apis.managed.server.taken(POLICIES) if not is_watch(r)]
    assert [r.query.get("continue", [""])[0] for r in lists] == ["", "50", "100"]
    assert {r.query["limit"][0] for r in lists} == {str(POLICY_PAGE)}
    stored = apis.managed.get("clusterclaims", "", CLAIM)
    assert stored is not None and stored["spec"]["value"] == COMPLIANT
    # a noncompliant Policy on the first page ends the read there
    apis.managed.put("policies", CLUSTER, policy("p000", "NonCompliant"))
    claim.claim.round()
    lists = [r for r in apis.managed.server.taken(POLICIES) if not is_watch(r)]
    assert len(lists) == 4
    assert apis.managed.get("clusterclaims", "", CLAIM)["spec"]["value"] == NONCOMPLIANT  # type: ignore[index]


def test_a_watch_ending_at_once_is_backed_off_and_counted(
    apis: FleetApis, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    virtual = VirtualWaits(most=4)
    watches, apis.managed.hostile = early_watches(POLICIES, virtual)
    claim = claim_of(apis, tmp_path, poll=4.0, clock=virtual.clock)
    claim.claim._stop = claim.claim._calls._stop = virtual  # the loop waits on virtual time
    caplog.set_level(logging.DEBUG, logger="dsf.agent.compliance")
    claim.claim.start()
    try:
        poll_until(
            lambda: claim.failures(Reason.WATCH_ENDED) >= 4,
            "four early watch ends counted",
            lambda: caplog.text,
        )
    finally:
        claim.claim.stop()
    lists = [r for r in apis.managed.server.taken(POLICIES) if not is_watch(r)]
    # one list and one watch a round, each round after the backoff of the one before
    assert len(watches) <= claim.failures(Reason.WATCH_ENDED) + 1
    assert len(lists) <= len(watches) + 1
    waits = [
        r.__dict__["dsf_fields"]["retry_seconds"]
        for r in caplog.records
        if r.msg == "compliance_claim_failed"
    ]
    assert waits[:4] == [1.0, 2.0, 4.0, 4.0]  # doubled, up to the poll interval
    # each watch after the backoff the one before was told: nothing else waited between
    gaps = [later - earlier for earlier, later in itertools.pairwise(watches)]
    assert gaps[:3] == waits[:3] and virtual.waits == waits[:4]
    # said once they repeat (one is an outage's), the repeats at debug
    levels = [r.levelno for r in caplog.records if r.msg == "compliance_claim_failed"]
    assert levels[:4] == [logging.DEBUG, logging.DEBUG, logging.WARNING, logging.DEBUG]


def test_a_claim_the_agent_did_not_make_is_never_taken_over(
    apis: FleetApis, tmp_path: Path
) -> None:
    others = {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "ClusterClaim",
        "metadata": {"name": CLAIM},
        "spec": {"value": "someone-elses"},
    }
    apis.managed.put("clusterclaims", "", others)
    claim = claim_of(apis, tmp_path)
    with pytest.raises(AgentError, match="not made by the agent") as caught:
        claim.claim.round()
    assert caught.value.reason == Reason.NOT_OWNED
    assert apis.managed.get("clusterclaims", "", CLAIM)["spec"]["value"] == "someone-elses"  # type: ignore[index]
    # labelled as the agent's, it is handed over
    others["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "dsf-agent"}  # type: ignore[index]
    apis.managed.put("clusterclaims", "", others)
    claim.claim.round()
    assert apis.managed.get("clusterclaims", "", CLAIM)["spec"]["value"] == EMPTY  # type: ignore[index]


def test_a_claim_the_agent_creates_carries_its_label(apis: FleetApis, tmp_path: Path) -> None:
    claim_of(apis, tmp_path).claim.round()
    stored = apis.managed.get("clusterclaims", "", CLAIM)
    assert stored is not None and made_by_agent(stored) and stored["spec"]["value"] == EMPTY


def peak_rss_bytes(agent: AgentProcess) -> int:
    """The agent's peak resident memory (``VmHWM``), in bytes."""
    status = Path(f"/proc/{agent.process.pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


@pytest.mark.integration
def test_the_agent_under_a_flooded_policy_list_stays_small_and_scores(
    claim_template: tuple[Any, Any],
    prometheus: str,
    agent_process: Callable[..., AgentProcess],
    tmp_path: Path,
) -> None:
    from tests.agent.fleet_apis import sample_scorer, scorer_summary, serve_configuration

    template, cluster_roles = claim_template
    flood = Flood(int(1.5 * GIB))
    with sample_scorer() as scorer, fleet_apis(template, cluster_roles, tmp_path) as running:
        running.managed.hostile = lambda request: (
            Reply(chunks=flood.chunks())
            if request.path == POLICIES and not is_watch(request)
            else None
        )
        serve_configuration(running, template, [scorer_summary(template, prometheus, scorer)])
        agent = start_agent(running, template, tmp_path / "agent", agent_process)
        labels = {"score_name": "", "stage": "compliance", "reason": "too_large"}
        poll_until(
            lambda: value(agent, "dynamic_scoring_failures_total", **labels) >= 2,
            "two flooded lists counted",
            agent.log,
        )
        scored(agent, 2)
        assert "compliance_claim_failed" in agent.log()
        # the pod's limit is 320Mi; the flood is 1.5 GiB
        assert peak_rss_bytes(agent) < 200 * 1024 * 1024
        assert running.managed.get("clusterclaims", "", CLAIM) is None


def test_the_agents_client_refuses_a_request_outside_its_bounded_reads(
    apis: FleetApis, tmp_path: Path
) -> None:
    # every agent call to any API goes through one bounded client: a call that bypassed
    # the bounded reads (as the claim's did) fails before it is sent
    kubeconfig = tmp_path / "managed.kubeconfig"
    kubeconfig.write_text(apis.managed.kubeconfig(SA_TOKEN))
    api = cast(ClaimApi, custom_objects_api(hub_client(kubeconfig)))
    before = len(apis.managed.server.taken())
    with pytest.raises(StopReadError, match="outside the agent's bounded reads"):
        api.list_namespaced_custom_object(
            "policy.open-cluster-management.io", "v1", CLUSTER, "policies"
        )
    assert len(apis.managed.server.taken()) == before


@pytest.mark.asyncio
async def test_the_configmaps_watch_ending_at_once_is_backed_off_and_counted_too(
    apis: FleetApis, tmp_path: Path
) -> None:
    # the rule is every watch's: an empty watch is not a change
    import asyncio

    from agent.config_sources import ConfigMapSource
    from agent.kube import core_api

    kubeconfig = tmp_path / "managed.kubeconfig"
    kubeconfig.write_text(apis.managed.kubeconfig(SA_TOKEN))
    apis.managed.set_configmap(apis.namespace, "dynamic-scoring-config", {"summaries": "[]"})
    configmaps = f"/api/v1/namespaces/{apis.namespace}/configmaps"
    virtual = VirtualWaits(most=3)
    watches, apis.managed.hostile = early_watches(configmaps, virtual)
    errors: list[tuple[str, str]] = []
    source = ConfigMapSource(
        core_api(hub_client(kubeconfig)),
        apis.namespace,
        max_backoff=4.0,
        on_error=lambda request, reason: errors.append((request, reason)),
    )
    source._stop = virtual  # the loop waits on virtual time

    async def follow() -> None:
        async for _ in source.events():
            pass

    task = asyncio.create_task(follow())
    try:
        for _ in range(600):  # a hang guard: the counts, not the time, are asserted
            if len(errors) >= 3:
                break
            await asyncio.sleep(0.1)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert errors[:3] == [("watch", Reason.WATCH_ENDED)] * 3
    gaps = [later - earlier for earlier, later in itertools.pairwise(watches)]
    assert virtual.waits == [1.0, 2.0, 4.0] and gaps == [1.0, 2.0, 4.0][: len(gaps)]
    assert len(watches) <= len(errors) + 1
