"""Shared fixtures of the agent tests: summaries, loopback fakes, the emulated Kubernetes
API, real Prometheus and VictoriaMetrics, and the agent run in-process or as a process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from agent.__main__ import run_agent
from agent.metrics import AgentMetrics
from agent.settings import RuntimeSettings
from tests.agent.agent_fakes import FakeKube, FakeServer, Handler
from tests.agent.exposed import sample_value
from tests.fleet_repo import OCM_CRDS

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_FILE = OCM_CRDS / "addonplacementscore.crd.yaml"
CLUSTER = "worker01"

# --------------------------------------------------------------------- summaries


def make_summary(**overrides: Any) -> dict[str, Any]:
    """A valid summary (upstream's 16 keys) with ``overrides`` applied."""
    summary: dict[str, Any] = {
        "name": "sample-scorer",
        "scoreName": "sample_my_score",
        "sourceType": "Prometheus",
        "sourceEndpoint": "http://127.0.0.1:9/api/v1/query_range",
        "sourceEndpointAuthName": "",
        "sourceEndpointAuthKey": "",
        "sourceQuery": "up",
        "sourceRange": 600,
        "sourceStep": 60,
        "scoringEndpoint": "http://127.0.0.1:9/scoring",
        "scoringInterval": 1,
        "scoringEndpointAuthName": "",
        "scoringEndpointAuthKey": "",
        "location": "Internal",
        "scoreDestination": "AddOnPlacementScore",
        "scoreDimensionFormat": "${node};${namespace};${pod}",
    }
    summary.update(overrides)
    return summary


def write_config(path: Path, summaries: list[dict[str, Any]]) -> None:
    """Replace ``path`` atomically with the JSON summary list (as a GitOps tool would)."""
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps(summaries, indent=2))
    scratch.replace(path)


def configmap_yaml(summaries: list[dict[str, Any]]) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dynamic-scoring-config", "namespace": "dynamic-scoring"},
            "data": {"summaries": json.dumps(summaries, indent=2)},
        }
    )


# ------------------------------------------------------------------- fakes


@pytest.fixture
def serve() -> Iterator[Callable[[Handler], FakeServer]]:
    """Start a :class:`FakeServer` per call; all are stopped at the end of the test."""
    started: list[FakeServer] = []

    def start(handler: Handler) -> FakeServer:
        server = FakeServer(handler).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    fake = FakeKube().start()
    yield fake
    fake.stop()


def kube_apis(fake: FakeKube, token: str = "kube-test-token-123") -> tuple[Any, Any, Any]:
    """``(api_client, CoreV1Api, CustomObjectsApi)`` of the official client against ``fake``."""
    from kubernetes import client, config

    api_client = config.new_client_from_config_dict(
        json.loads(fake.kubeconfig(token)), persist_config=False
    )
    return api_client, client.CoreV1Api(api_client), client.CustomObjectsApi(api_client)


@pytest.fixture
def apis(kube: FakeKube) -> Iterator[tuple[Any, Any]]:
    api_client, core, custom = kube_apis(kube)
    yield core, custom
    api_client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def crd_schema() -> dict[str, Any]:
    if not CRD_FILE.is_file():
        pytest.skip(
            f"OCM CRDs not found at {CRD_FILE}: .ci/fetch-ocm-crds.sh DIR, then DSF_OCM_CRDS=DIR"
        )
    crd = yaml.safe_load(CRD_FILE.read_text())
    schema: dict[str, Any] = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    return schema


# --------------------------------------------------------------- in-process agent


@dataclass
class RunningAgent:
    metrics: AgentMetrics
    port: int
    stop: asyncio.Event
    task: asyncio.Task[None]
    settings: RuntimeSettings
    extra: dict[str, Any] = field(default_factory=dict)

    def value(self, name: str, **labels: str) -> float:
        found = sample_value(self.metrics, name, labels)
        return 0.0 if found is None else found

    async def get(self, path: str) -> httpx.Response:
        async with httpx.AsyncClient() as client:
            return await client.get(f"http://127.0.0.1:{self.port}{path}")


async def wait_for(
    predicate: Callable[[], bool],
    timeout: float = 15.0,
    what: str = "condition",
    explain: Callable[[], str] | None = None,
) -> None:
    """Poll ``predicate`` until true; fails the test after ``timeout`` (generous: CI is slow)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}" + (f"\n{explain()}" if explain else ""))
        await asyncio.sleep(0.05)


@pytest_asyncio.fixture
async def start_agent(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    """Start :func:`run_agent` in this event loop; every started agent is stopped at the end."""
    running: list[RunningAgent] = []

    async def start(
        settings: RuntimeSettings | None = None,
        *,
        core: Any = None,
        hub: Any = None,
        reload: asyncio.Event | None = None,
        **changes: Any,
    ) -> RunningAgent:
        base = settings or RuntimeSettings(
            cluster_name=CLUSTER,
            config_file=tmp_path / "summaries.json",
            secrets_dir=tmp_path / "secrets",
            metrics_host="127.0.0.1",
            metrics_port=0,
            request_timeout=5.0,
            config_poll_seconds=0.1,
        )
        settings = replace(base, **changes)
        metrics = AgentMetrics(settings.cluster_name)
        stop = asyncio.Event()
        listening: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        def on_listening(port: int) -> None:
            listening.set_result(port)

        task = asyncio.create_task(
            run_agent(
                settings,
                stop,
                metrics=metrics,
                core=core,
                hub=hub,
                on_listening=on_listening,
                reload=reload,
            )
        )
        waiters: list[asyncio.Future[Any]] = [task, listening]
        done, _ = await asyncio.wait(waiters, timeout=10, return_when=asyncio.FIRST_COMPLETED)
        if task in done:
            task.result()
        agent = RunningAgent(metrics, listening.result(), stop, task, settings)
        running.append(agent)
        return agent

    yield start
    for agent in running:
        agent.stop.set()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(agent.task, 10)


# ------------------------------------------------------------- agent process


@dataclass
class AgentProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as response:
            return str(response.read().decode())

    def status(self, path: str) -> int:
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.port}{path}", timeout=5
            ) as response:
                return int(response.status)
        except urllib.error.HTTPError as err:
            return int(err.code)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def terminate(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait(5)


def agent_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.lower().endswith("_proxy") and not k.startswith("DSF_")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH", "")]))
    env.update(extra)
    return env


def launch_agent(log_path: Path, *args: str, env: dict[str, str] | None = None) -> AgentProcess:
    """Start ``python -m agent`` with ``args`` on a free loopback port, logging to ``log_path``."""
    port = free_port()
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(
            [sys.executable, "-m", "agent", "--metrics-bind", f"127.0.0.1:{port}", *args],
            stdout=log_file,
            stderr=subprocess.STDOUT,
            env=env if env is not None else agent_env(),
            cwd=log_path.parent,
        )
    return AgentProcess(process, port, log_path)


def wait_until_healthy(handle: AgentProcess, timeout: float = 20.0) -> None:
    """Wait until the agent's ``/healthz`` answers 200; fail the test if it exits first."""
    deadline = time.monotonic() + timeout
    while True:
        if handle.process.poll() is not None:
            pytest.fail(f"agent exited with {handle.process.returncode}:\n{handle.log()}")
        try:
            if handle.status("/healthz") == 200:
                return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"agent not healthy:\n{handle.log()}")
        time.sleep(0.1)


@pytest.fixture
def agent_process(tmp_path: Path) -> Iterator[Callable[..., AgentProcess]]:
    """Start ``python -m agent`` with arguments; stopped with SIGTERM at the end."""
    started: list[AgentProcess] = []

    def start(
        *args: str, env: dict[str, str] | None = None, wait_healthy: bool = True
    ) -> AgentProcess:
        handle = launch_agent(tmp_path / f"agent-{len(started)}.log", *args, env=env)
        started.append(handle)
        if wait_healthy:
            wait_until_healthy(handle)
        return handle

    yield start
    for handle in started:
        handle.terminate()


# ------------------------------------------------------- real metric stores

# Fixed data: constant values per series, so the average scorer's answer is exact.
SERIES_VALUES = {
    ("n1", "web", "web-1"): 12.5,
    ("n2", "web", "web-2"): 250.0,
    ("n3", "db", "db-1"): -3.5,
}
METRIC = "dsf_test_load"


def _sample_times() -> list[int]:
    end = int(time.time()) // 60 * 60 - 60
    return list(range(end - 3600, end + 1, 60))


def _wait_http(url: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{process.args!r} exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} not ready after {timeout} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


@contextlib.contextmanager
def backfilled_prometheus(root: Path, openmetrics: str) -> Iterator[str]:
    """Real Prometheus on 127.0.0.1 whose TSDB is ``openmetrics`` backfilled with promtool
    into ``root``; yields its base URL and stops it on exit."""
    for tool in ("prometheus", "promtool"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (Debian package prometheus)")
    (root / "data.om").write_text(openmetrics)
    subprocess.run(
        [
            "promtool",
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(root / "data.om"),
            str(root / "data"),
        ],
        check=True,
        capture_output=True,
    )
    (root / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\n")
    port = free_port()
    with (root / "prometheus.log").open("wb") as log_file:
        process = subprocess.Popen(
            [
                "prometheus",
                f"--config.file={root / 'prometheus.yml'}",
                f"--storage.tsdb.path={root / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--storage.tsdb.retention.time=30d",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_http(f"http://127.0.0.1:{port}/-/ready", process)
        yield f"http://127.0.0.1:{port}"
    finally:
        _stop(process)


@pytest.fixture(scope="session")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Real Prometheus on 127.0.0.1 with fixed backfilled data; yields its base URL."""
    lines = [f"# TYPE {METRIC} gauge"]
    for timestamp in _sample_times():
        for (node, namespace, pod), value in SERIES_VALUES.items():
            lines.append(
                f'{METRIC}{{node="{node}",namespace="{namespace}",pod="{pod}"}} {value} {timestamp}'
            )
    lines.append("# EOF")
    with backfilled_prometheus(
        tmp_path_factory.mktemp("prometheus"), "\n".join(lines) + "\n"
    ) as url:
        yield url


@contextlib.contextmanager
def started_victoria_metrics(root: Path) -> Iterator[str]:
    """Real VictoriaMetrics on 127.0.0.1 storing into ``root``; yields its base URL and
    stops it on exit."""
    if shutil.which("victoria-metrics") is None:
        pytest.skip("victoria-metrics not installed (Debian package victoria-metrics)")
    port = free_port()
    with (root / "vm.log").open("wb") as log_file:
        process = subprocess.Popen(
            [
                "victoria-metrics",
                f"-httpListenAddr=127.0.0.1:{port}",
                f"-storageDataPath={root / 'data'}",
                "-retentionPeriod=10y",
            ],
            stdout=log_file,
            stderr=subprocess.STDOUT,
        )
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_http(f"{base}/health", process)
        yield base
    finally:
        _stop(process)


def import_into_victoria_metrics(base: str, path: str, body: bytes) -> None:
    """POST ``body`` to ``base + path`` (an import API), then flush it to be searchable."""
    request = urllib.request.Request(f"{base}{path}", data=body, method="POST")
    with urllib.request.urlopen(request, timeout=30):
        pass
    with urllib.request.urlopen(f"{base}/internal/force_flush", timeout=30):
        pass


@pytest.fixture(scope="session")
def victoria_metrics(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Real VictoriaMetrics on 127.0.0.1 with the same fixed data; yields its base URL."""
    with started_victoria_metrics(tmp_path_factory.mktemp("victoria")) as base:
        lines = [
            f'{METRIC}{{node="{node}",namespace="{namespace}",pod="{pod}"}} {value} {timestamp * 1000}'
            for timestamp in _sample_times()
            for (node, namespace, pod), value in SERIES_VALUES.items()
        ]
        import_into_victoria_metrics(base, "/api/v1/import/prometheus", "\n".join(lines).encode())
        yield base
