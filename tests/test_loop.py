"""The whole loop, end to end: Git → sync → render → ManifestWork → agent → hub.

1. A copy of the example fleet is synced for real against the reference scorers served on
   loopback (``samples.fleet``, with ``sync --resolve`` as ``python -m samples.fleet sync``
   does) and rendered.
2. worker02's ConfigMap is taken out of its rendered ManifestWork as OCM applies it (the
   manifest object in ``spec.workload.manifests``) and served by an emulated managed-cluster
   API; worker02 is the cluster on which the fleet masks ``llm_forecast_score``.
3. ``dsf-agent`` runs as a process against it, a real Prometheus holding backfilled
   container CPU counters (what the example scorers' query selects), the samples, and an
   emulated hub. The summaries name in-cluster services; the ConfigMap is served as rendered,
   byte for byte, and the agent reaches those names through a forward proxy on loopback
   (``tests.fleet_proxy``: ``HTTP_PROXY``, which the agent honours as it does behind a
   site proxy) that stands in for the cluster's DNS. Rewriting the URLs instead would test
   a ConfigMap nobody renders; the names are not IP addresses, so loopback aliases cannot
   serve them.
4. The ``dynamic_score`` series on ``/metrics`` and the AddOnPlacementScores on the hub
   are checked, values and items, including the masked score being absent.
5. ``dsf-compile explain --hub-kubeconfig`` against the same hub: the example Placements'
   scores are the ones the agent wrote, and their decisions follow.
6. A scorer is changed in Git, synced, re-rendered and fed to the running agent; the
   change takes effect and the stale series and items disappear.
7. The same loop with upstream's sample scorer (a FastAPI app under uvicorn, written from
   its documented behaviour) serving ``sample-scorer``.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dsf_compile.commands.cli import run
from samples.fleet import resolve_flags, running_fleet
from tests.agent.agent_fakes import FakeKube
from tests.agent.conftest import (
    AgentProcess,
    agent_env,
    backfilled_prometheus,
    free_port,
    launch_agent,
    wait_until_healthy,
)
from tests.fleet_proxy import FleetProxy
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT, copy_fleet

pytestmark = pytest.mark.integration

CLUSTER = "worker02"  # the fleet masks llm_forecast_score on worker02
AGENT_NAMESPACE = "dynamic-scoring"
PROMETHEUS_SERVICE = "kube-prometheus-kube-prome-prometheus.monitoring.svc:9090"
SAMPLE_SERVICE = "sample-scorer.dynamic-scoring.svc:8000"
LLM_SERVICE = "llm-forecast.scoring.example.net:8000"
WAIT = 90.0  # generous: a loaded 2-core CI machine

# ------------------------------------------------------------------ the metrics

# CPU counters of containers, in cores: constant rates, so every window of the scorers'
# query ``sum by (node, namespace, pod) (rate(...{container!="", pod!=""}[1m]))`` sees the
# same value. (node, namespace, pod, container) -> rate; None = the label is absent.
CPU_RATES: dict[tuple[str, str | None, str | None, str | None], float] = {
    ("n1", "web", "web-1", "app"): 10.0,
    ("n1", "web", "web-1", "sidecar"): 2.5,  # summed with app by the query: 12.5
    ("n2", "web", "web-2", "app"): 250.0,
    ("n1", "db", "db-1", "postgres"): 3.75,
    ("n1", "web", "web-1", None): 999.0,  # the pod's own cgroup: container!="" drops it
    ("n2", "kube-system", None, "kubelet"): 7.0,  # not a pod: pod!="" drops it
}
# What the query gives per (node, namespace, pod), and so what the sample scorer averages.
CPU_BY_POD = {
    ("n1", "web", "web-1"): 12.5,
    ("n2", "web", "web-2"): 250.0,
    ("n1", "db", "db-1"): 3.75,
}


def cpu_openmetrics(now: float) -> str:
    """Two hours of counters every 15 s up to 15 minutes ahead of ``now``: the agent queries
    up to its own "now" while the test runs, and a window past the last sample would be
    extrapolated to a different rate."""
    start = int(now) // 15 * 15 - 7200
    lines = ["# TYPE container_cpu_usage_seconds counter"]
    for timestamp in range(start, start + 7200 + 900 + 1, 15):
        for (node, namespace, pod, container), rate in CPU_RATES.items():
            labels = {"node": node, "namespace": namespace, "pod": pod, "container": container}
            text = ",".join(f'{k}="{v}"' for k, v in labels.items() if v is not None)
            lines.append(
                f"container_cpu_usage_seconds_total{{{text}}} {rate * (timestamp - start)} {timestamp}"
            )
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def cpu_prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with backfilled_prometheus(
        tmp_path_factory.mktemp("prometheus"), cpu_openmetrics(time.time())
    ) as url:
        yield url


@pytest.fixture
def proxy(cpu_prometheus: str) -> Iterator[FleetProxy]:
    with FleetProxy({PROMETHEUS_SERVICE: urlsplit(cpu_prometheus).netloc}) as started:
        yield started


# --------------------------------------------------------------- the clusters


@pytest.fixture
def managed() -> Iterator[FakeKube]:
    """worker02's API server (the agent reads its ConfigMap here)."""
    fake = FakeKube().start()
    yield fake
    fake.stop()


@pytest.fixture
def hub() -> Iterator[FakeKube]:
    """The hub's API server (the agent writes AddOnPlacementScores here)."""
    fake = FakeKube().start()
    yield fake
    fake.stop()


@pytest.fixture
def agents() -> Iterator[list[AgentProcess]]:
    started: list[AgentProcess] = []
    yield started
    for agent in started:
        agent.terminate()


# ------------------------------------------------------------------- helpers


def compile_cli(*args: str) -> str:
    """Run ``dsf-compile ARGS``; fail the test unless it exits 0; return stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err)
    assert code == 0, f"dsf-compile {' '.join(args)} exited {code}\n{err.getvalue()}"
    return err.getvalue()


def compile_cli_out(*args: str) -> str:
    """Run ``dsf-compile ARGS``; fail the test unless it exits 0; return stdout."""
    out, err = io.StringIO(), io.StringIO()
    code = run(list(args), out, err)
    assert code == 0, f"dsf-compile {' '.join(args)} exited {code}\n{err.getvalue()}"
    return out.getvalue()


def rendered_configmap(repo: Path, cluster: str) -> dict[str, Any]:
    """The ConfigMap inside the cluster's rendered ManifestWork, as OCM would apply it."""
    work = yaml.safe_load((repo / "rendered/clusters" / cluster / "manifestwork.yaml").read_text())
    assert work["kind"] == "ManifestWork" and work["metadata"]["namespace"] == cluster
    (configmap,) = [m for m in work["spec"]["workload"]["manifests"] if m["kind"] == "ConfigMap"]
    assert configmap["metadata"] == {
        **configmap["metadata"],
        "name": "dynamic-scoring-config",
        "namespace": AGENT_NAMESPACE,
    }
    return dict(configmap)


def summaries_of(configmap: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["scoreName"]: s for s in json.loads(configmap["data"]["summaries"])}


def start_agent(
    tmp_path: Path, managed: FakeKube, hub: FakeKube, proxy: FleetProxy, agents: list[AgentProcess]
) -> AgentProcess:
    """``dsf-agent`` for worker02: its own API from ``KUBECONFIG`` (in-cluster in production),
    the hub from ``--hub-kubeconfig``, in-cluster service names through ``proxy``."""
    (tmp_path / "managed.kubeconfig").write_text(managed.kubeconfig("MANAGED-TOKEN"))
    (tmp_path / "hub.kubeconfig").write_text(hub.kubeconfig("HUB-TOKEN"))
    env = agent_env(
        KUBECONFIG=str(tmp_path / "managed.kubeconfig"),
        HTTP_PROXY=proxy.url,
        NO_PROXY="127.0.0.1,localhost",
    )
    agent = launch_agent(
        tmp_path / "agent.log",
        "--cluster-name",
        CLUSTER,
        "--hub-kubeconfig",
        str(tmp_path / "hub.kubeconfig"),
        env=env,
    )
    agents.append(agent)
    wait_until_healthy(agent)
    return agent


def wait_until(
    predicate: Callable[[], Any], what: str, explain: Callable[[], str] = lambda: ""
) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        result = predicate()
        if result:
            return result
        time.sleep(0.2)
    pytest.fail(f"timed out after {WAIT:.0f} s waiting for {what}\n{explain()}")


def series(agent: AgentProcess) -> list[tuple[dict[str, str], float]]:
    """Every ``dynamic_score`` sample on the agent's /metrics: (labels, value)."""
    return [
        (s.labels, s.value)
        for family in text_string_to_metric_families(agent.metrics())
        if family.name == "dynamic_score"
        for s in family.samples
    ]


def scores(agent: AgentProcess) -> dict[tuple[str, str, str, str], tuple[float, dict[str, str]]]:
    """The per-pod ``dynamic_score`` series: (score, node, namespace, pod) -> (value, labels)."""
    keyed = {}
    for labels, value in series(agent):
        if labels["ds_pod"]:
            key = (
                labels["ds_score_name"],
                labels["ds_node"],
                labels["ds_namespace"],
                labels["ds_pod"],
            )
            keyed[key] = (value, labels)
    return keyed


def placement_score(hub: FakeKube, name: str) -> dict[str, Any] | None:
    found = hub.get("addonplacementscores", CLUSTER, name)
    return found.get("status") if found else None


def items_of(hub: FakeKube, name: str) -> list[dict[str, Any]] | None:
    status = placement_score(hub, name)
    return status["scores"] if status else None


def wait_for_items(
    hub: FakeKube, name: str, items: list[dict[str, Any]], agent: AgentProcess
) -> None:
    """Wait until the hub's AddOnPlacementScore ``name`` holds exactly ``items``."""
    wait_until(
        lambda: items_of(hub, name) == items,
        f"{name} on the hub",
        lambda: f"{name}: {items_of(hub, name)}\n{agent.log()}",
    )


def valid_until(hub: FakeKube, name: str) -> str:
    status = placement_score(hub, name)
    assert status is not None
    return str(status["validUntil"])


def hub_value(score: float) -> int:
    """What the agent writes to the hub for ``score``: rounded down, clamped to [-100, 100]."""
    return max(-100, min(100, math.floor(score)))


def parse_time(valid_until: str) -> datetime:
    return datetime.strptime(valid_until, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def seconds_left(valid_until: str) -> float:
    return (parse_time(valid_until) - datetime.now(UTC)).total_seconds()


def prometheus_queries(proxy: FleetProxy) -> set[str]:
    """The PromQL queries the agent sent to the in-cluster Prometheus."""
    return {
        query
        for url in proxy.urls()
        if urlsplit(url).netloc == PROMETHEUS_SERVICE
        for query in parse_qs(urlsplit(url).query).get("query", [])
    }


def fleet_mapping(mapping: dict[str, str], prometheus: str) -> dict[str, str]:
    return {**mapping, PROMETHEUS_SERVICE: urlsplit(prometheus).netloc}


# ---------------------------------------------------------------- expectations

PERFORMANCE_ITEMS = [
    {"name": "app01;2g.24gb", "value": 40},
    {"name": "app01;3g.48gb", "value": 70},
    {"name": "app01;all", "value": 90},
    {"name": "app02;2g.24gb", "value": 50},
    {"name": "app02;3g.48gb", "value": 60},
    {"name": "app02;all", "value": 80},
]
POWER_ITEMS = [
    {"name": "app01;2g.24gb", "value": 70},
    {"name": "app01;3g.48gb", "value": 20},
    {"name": "app01;all", "value": -60},
    {"name": "app02;2g.24gb", "value": 60},
    {"name": "app02;3g.48gb", "value": 10},
    {"name": "app02;all", "value": -40},
]
SAMPLE_ITEMS = [
    {"name": "n1;db;db-1", "value": 3},  # 3.75 rounded down
    {"name": "n1;web;web-1", "value": 12},  # app 10 + sidecar 2.5
    {"name": "n2;web;web-2", "value": 100},  # 250 clamped
]
POD_ITEM_NAMES = ["n1;db;db-1", "n1;web;web-1", "n2;web;web-2"]

# Step 6: sample-scorer's query, interval and dimensions pinned in Git instead of taken
# from its /config — the web namespace only, every 5 s, items per node and pod.
PINNED_SAMPLE_SCORER = """\
# The quickstart's sample scorer, pinned: this fleet chooses the query, not the scorer.
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: sample-scorer
  namespace: open-cluster-management
spec:
  description: A sample scorer for time series data
  configURL: http://sample-scorer.dynamic-scoring.svc:8000/config
  configSyncMode: None
  location: Internal
  scoreDestination: AddOnPlacementScore
  scoreDimensionFormat: "${node};${pod}"
  source:
    type: Prometheus
    host: http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090
    path: /api/v1/query_range
    params:
      query: 'sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", pod!="", namespace="web"}[1m]))'
      range: 3600
      step: 60
  scoring:
    path: /scoring
    params:
      name: sample_my_score
      interval: 5
"""


# ----------------------------------------------------------------- the loop


def test_the_whole_loop(
    tmp_path: Path,
    cpu_prometheus: str,
    proxy: FleetProxy,
    managed: FakeKube,
    hub: FakeKube,
    agents: list[AgentProcess],
) -> None:
    with running_fleet({}) as mapping:
        proxy.mapping = fleet_mapping(mapping, cpu_prometheus)

        # 1. Sync for real against the running samples, then render.
        repo = copy_fleet(tmp_path / "fleet")
        (repo / "dsf.lock.json").unlink()
        synced = compile_cli("--root", str(repo), "sync", "--strict", *resolve_flags(mapping))
        assert "5 Active, 0 Inactive" in synced
        # The samples' /config gives back the committed lockfile, hence rendered/ as committed.
        assert "0 added, 0 changed, 0 removed" in compile_cli("--root", str(repo), "render")

        # 2. worker02's ConfigMap, out of its ManifestWork, into worker02's API.
        configmap = rendered_configmap(repo, CLUSTER)
        summaries = summaries_of(configmap)
        assert sorted(summaries) == [
            "example_performance_score",
            "example_powerconsumption_score",
            "sample_my_score",
            "simple_prediction_score",
        ]  # llm_forecast_score is masked on worker02
        assert urlsplit(summaries["sample_my_score"]["sourceEndpoint"]).netloc == PROMETHEUS_SERVICE
        managed.put("configmaps", AGENT_NAMESPACE, configmap)

        # 3. The agent.
        started = datetime.now(UTC).replace(microsecond=0)  # validUntil is in whole seconds
        agent = start_agent(tmp_path, managed, hub, proxy, agents)

        # 4. Scores on the hub and on /metrics.
        wanted = {
            "sample-my-score": SAMPLE_ITEMS,
            "example-performance-score": PERFORMANCE_ITEMS,
            "example-powerconsumption-score": POWER_ITEMS,
        }
        for name, items in wanted.items():
            wait_for_items(hub, name, items, agent)
        prediction = wait_until(
            lambda: items_of(hub, "simple-prediction-score"), "simple-prediction-score on the hub"
        )
        assert [item["name"] for item in prediction] == POD_ITEM_NAMES

        published = scores(agent)
        for (node, namespace, pod), cpu in CPU_BY_POD.items():
            value, labels = published[("sample_my_score", node, namespace, pod)]
            assert value == pytest.approx(cpu, rel=1e-9)
            assert labels["ds_cluster"] == CLUSTER
            assert labels["ds_meta"] == "average-of-values-by-sample-scorer"
            # a flat load predicts no change: the prediction scorer's 0
            trend, labels = published[("simple_prediction_score", node, namespace, pod)]
            assert trend == pytest.approx(0.0, abs=1e-6)
            assert labels["ds_meta"] == "linear-trend-by-simple-prediction-scorer"
            item = f"{node};{namespace};{pod}"
            assert {"name": item, "value": hub_value(trend)} in prediction
        static = {
            (labels["ds_score_name"], labels["ds_app"], labels["ds_device"]): value
            for labels, value in series(agent)
            if labels["ds_score_name"].startswith("example_")
        }
        assert static[("example_performance_score", "app01", "all")] == 90.0
        assert static[("example_powerconsumption_score", "app01", "all")] == -60.0
        assert len(static) == 12
        # The masked score: never configured, never published, its service never called.
        assert not [s for s, _ in series(agent) if s["ds_score_name"] == "llm_forecast_score"]
        assert hub.get("addonplacementscores", CLUSTER, "llm-forecast-score") is None
        assert LLM_SERVICE not in proxy.hosts_seen()
        assert {PROMETHEUS_SERVICE, SAMPLE_SERVICE} <= proxy.hosts_seen()
        # Only worker02's namespace on the hub, and the scores are trusted for 3 intervals.
        assert {key[1] for key in hub.state.objects} == {CLUSTER}
        # written after the start and before now, 3 × 30 s ahead (bounds a slow machine
        # cannot break: no figure of elapsed time)
        written_until = parse_time(valid_until(hub, "sample-my-score"))
        assert started + timedelta(seconds=90) <= written_until
        assert seconds_left(valid_until(hub, "sample-my-score")) <= 90

        # 5. explain reads the scores the agent wrote from the same hub (list calls only).
        explained = json.loads(
            compile_cli_out(
                "--root",
                str(repo),
                "explain",
                "default/gpu-inference",
                "default/green-batch",
                "--hub-kubeconfig",
                str(tmp_path / "hub.kubeconfig"),
                "--format",
                "json",
            )
        )
        gpu, green = explained["placements"]
        assert (gpu["name"], green["name"]) == ("gpu-inference", "green-batch")
        assert gpu["filtered"]["predicates"] == ["edge01"]  # gpu: "false"
        # worker02's app01;3g.48gb item is 70; worker01 has no agent here, so no score.
        assert gpu["prioritizers"] == [
            {
                "name": "AddOn/example-performance-score/app01;3g.48gb",
                "weight": 1,
                "scores": {"worker01": 0, "worker02": 70},
            }
        ]
        assert gpu["decisions"] == ["worker02"]  # 0 each without the agent: worker01 by name
        assert any("worker01" in warning for warning in gpu["warnings"])
        # green-batch weighs worker02's power item (60, ×2) against free CPU, where
        # worker01 (28 of 32 cores) beats worker02 (12 of 32): 200 against 120.
        (power,) = [p for p in green["prioritizers"] if p["name"].startswith("AddOn/")]
        assert power == {
            "name": "AddOn/example-powerconsumption-score/app02;2g.24gb",
            "weight": 2,
            "scores": {"worker01": 0, "worker02": 60},
        }
        assert green["totals"] == {"worker01": 200, "worker02": 120}
        assert green["decisions"] == ["worker01"]

        # 6. Change sample-scorer in Git, sync it, re-render, and hand the new ConfigMap over.
        (repo / "scorers/sample-scorer.yaml").write_text(PINNED_SAMPLE_SCORER)
        compile_cli("--root", str(repo), "sync", "sample-scorer", *resolve_flags(mapping))
        rendered = compile_cli("--root", str(repo), "render")
        # the DynamicScorer on the hub and the ManifestWork of each of the 3 clusters
        assert "0 added, 4 changed, 0 removed" in rendered, rendered
        changed = rendered_configmap(repo, CLUSTER)
        summary = summaries_of(changed)["sample_my_score"]
        assert summary["scoringInterval"] == 5 and 'namespace="web"' in summary["sourceQuery"]
        managed.put("configmaps", AGENT_NAMESPACE, changed)

        new_items = [{"name": "n1;web-1", "value": 12}, {"name": "n2;web-2", "value": 100}]
        wait_for_items(hub, "sample-my-score", new_items, agent)
        # The agent sent the new query, and the scores written now are trusted for
        # 3 × 5 s, not 3 × 30 s: the new interval.
        assert summary["sourceQuery"] in prometheus_queries(proxy)
        assert seconds_left(valid_until(hub, "sample-my-score")) <= 16
        # The db-1 series fell out of the query: its series is deleted, the others stay.
        published = scores(agent)
        assert ("sample_my_score", "n1", "db", "db-1") not in published
        assert published[("sample_my_score", "n1", "web", "web-1")][0] == pytest.approx(12.5)
        assert ("simple_prediction_score", "n1", "db", "db-1") in published
        assert items_of(hub, "example-performance-score") == PERFORMANCE_ITEMS

        assert agent.terminate() == 0
    for secret in ("MANAGED-TOKEN", "HUB-TOKEN"):
        assert secret not in agent.log()


# ------------------------------------------------- upstream's own sample scorer


@pytest.fixture
def upstream_sample_scorer(tmp_path: Path) -> Iterator[str]:
    """Upstream's sample scorer (``tests.upstream_sample_scorer``) under uvicorn on 127.0.0.1;
    yields ``127.0.0.1:PORT``."""
    pytest.importorskip("fastapi", reason="fastapi is a test extra: pip install -e '.[test]'")
    pytest.importorskip("uvicorn", reason="uvicorn is a test extra: pip install -e '.[test]'")
    port = free_port()
    with (tmp_path / "uvicorn.log").open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "uvicorn",
                "tests.upstream_sample_scorer:app",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-access-log",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=agent_env(),
            cwd=REPO_ROOT,
        )
    try:
        deadline = time.monotonic() + WAIT
        while True:
            if process.poll() is not None:
                pytest.fail(f"uvicorn exited:\n{(tmp_path / 'uvicorn.log').read_text()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                pytest.fail("uvicorn did not listen")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_the_loop_with_upstreams_sample_scorer(
    tmp_path: Path,
    cpu_prometheus: str,
    proxy: FleetProxy,
    managed: FakeKube,
    hub: FakeKube,
    agents: list[AgentProcess],
    upstream_sample_scorer: str,
) -> None:
    with running_fleet({}) as mapping:
        mapping = {**mapping, SAMPLE_SERVICE: upstream_sample_scorer}
        proxy.mapping = fleet_mapping(mapping, cpu_prometheus)
        repo = copy_fleet(tmp_path / "fleet")
        (repo / "dsf.lock.json").unlink()
        compile_cli("--root", str(repo), "sync", "--strict", *resolve_flags(mapping))
        # Upstream's /config and the reference sample's say the same: the same lockfile.
        assert (repo / "dsf.lock.json").read_text() == (EXAMPLE_FLEET / "dsf.lock.json").read_text()
        compile_cli("--root", str(repo), "render")
        managed.put("configmaps", AGENT_NAMESPACE, rendered_configmap(repo, CLUSTER))

        agent = start_agent(tmp_path, managed, hub, proxy, agents)
        wait_for_items(hub, "sample-my-score", SAMPLE_ITEMS, agent)
        published = scores(agent)
        for (node, namespace, pod), cpu in CPU_BY_POD.items():
            value, labels = published[("sample_my_score", node, namespace, pod)]
            assert value == pytest.approx(cpu, rel=1e-9)
            assert labels["ds_meta"] == "my_something_meta_by_sample_scorer"  # upstream's
        assert agent.terminate() == 0
