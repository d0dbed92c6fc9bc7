"""Agent benchmarks (``docs/benchmarks.md``): prints a table, each row against a baseline measured
in the same run, because the machines are shared and noisy.

1. 200 scorers at a 1 s interval against loopback fakes, shaped like a fleet: each scorer
   with its own Prometheus URL and its own Scoring API URL (``/fleet/<i>/…``: no two
   scorers' requests share a path), a ``query_range`` answer of two series of five points,
   a scoring answer of two results. After a 3 s warm-up, 30 s measured from ``/proc`` over
   the agent's whole process tree: share of scheduled cycles done, median start lag, CPU
   (% of one core), RSS. Baseline: a bare asyncio loop doing the same HTTP calls with one
   ``httpx.AsyncClient`` and nothing else.
2. Idle RSS: the agent with an empty configuration. Baseline: an interpreter that only
   imports the agent's libraries.
3. One cycle with a 20 MB Prometheus answer (2,000 series x 1,000 points): the agent's
   overhead, i.e. its CPU time (the fakes run in another process, so HTTP waits do not
   count). Baseline: the floor - fetch the bytes, ``json.loads``, ``json.dumps``, POST.
4. Isolation: one scorer answering 150,000 results beside healthy scorers at 1 s: the
   healthy scorers' cycles, the slowest ``/metrics``, peak RSS against the rendered memory
   limit, and the flood's answers refused at the result cap. Baseline: the healthy scorers
   alone.
5. Hub writes: scorers whose scores do not change, against the emulated hub: status
   writes and all requests per scorer and cycle. Baseline: one write per cycle (the agent
   before it skipped unchanged scores).

Usage: ``python bench/agent_bench.py [--scorers 200] [--seconds 30]``; with ``--image IMAGE``
only case 1, for the agent in its image (``agent/build-image.sh``) run by podman as the
rendered Deployment runs it.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TICKS = os.sysconf("SC_CLK_TCK")
BIG_SERIES, BIG_POINTS = 2000, 1000
#: the memory case: answers of ~21 MB (compact JSON), scorers every 30 s, a 512 MiB limit
MEM_SERIES, MEM_POINTS, MEM_INTERVAL, MEM_LIMIT = 1000, 1000, 30, 512 * 1024 * 1024
#: the isolation case (docs/benchmarks.md): results in the flooding scorer's answer (~13 MB)
FLOOD_RESULTS = 150_000


def flood_results(seconds: float) -> int:
    """Results of the flood: the isolation case's 150,000, or 20,000 (still past the agent's cap of
    10,000) for short runs such as ``--quick``."""
    return FLOOD_RESULTS if seconds >= 30 else 20_000


#: the hub-write case: scorers' interval (s); 2 s or more, as validUntil is cut to seconds
HUB_INTERVAL = 2
#: the load case: seconds of warm-up before the measured window; points per series
LOAD_WARMUP, LOAD_POINTS = 3.0, 5
#: the load case's URLs: ``/fleet/<i>`` then a route of the fakes, one prefix per scorer
FLEET = "/fleet"

# ----------------------------------------------------------------- fakes (own process)


def _small_prometheus() -> bytes:
    result = [
        {
            "metric": {"node": f"n{i}", "namespace": "ns", "pod": f"p{i}"},
            "values": [[1718600000 + 60 * j, "1.5"] for j in range(LOAD_POINTS)],
        }
        for i in range(2)
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


def _big_prometheus() -> bytes:
    result = [
        {
            "metric": {
                "node": f"node-{i % 50}",
                "namespace": f"ns-{i % 20}",
                "pod": f"pod-{i}",
            },
            "values": [
                [1718600000 + 60 * j, f"{(i * 7 + j) % 1000 / 10}"] for j in range(BIG_POINTS)
            ],
        }
        for i in range(BIG_SERIES)
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


def _mem_prometheus() -> bytes:
    result = [
        {
            "metric": {"node": f"node-{i % 50}", "pod": f"pod-{i}"},
            "values": [[1718600000 + 60 * j, f"{(i + j) % 1000 / 10}"] for j in range(MEM_POINTS)],
        }
        for i in range(MEM_SERIES)
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}},
        separators=(",", ":"),
    ).encode()


def _scores(count: int) -> bytes:
    results = [
        {
            "metric": {"node": f"node-{i % 50}", "namespace": f"ns-{i % 20}", "pod": f"pod-{i}"},
            "score": (i % 200) - 100.5,
        }
        for i in range(count)
    ]
    return json.dumps({"results": results}).encode()


def _response(body: bytes) -> bytes:
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
        % len(body)
        + body
    )


async def serve_fakes(flood: int) -> None:
    """Prometheus and Scoring API fakes on one port; keep-alive; prints the port."""
    routes = {
        b"/flood/scoring": _response(_scores(flood)),
        b"/api/v1/query_range": _response(_small_prometheus()),
        b"/big/api/v1/query_range": _response(_big_prometheus()),
        b"/scoring": _response(_scores(2)),
        b"/big/scoring": _response(_scores(BIG_SERIES)),
        b"/mem/api/v1/query_range": _response(_mem_prometheus()),
        b"/mem/scoring": _response(_scores(MEM_SERIES)),
    }

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *headers = head.split(b"\r\n")
                path = request_line.split(b" ")[1].split(b"?")[0]
                if path.startswith(FLEET.encode() + b"/"):  # /fleet/<i>/api/v1/query_range
                    path = b"/" + path.split(b"/", 3)[-1]
                length = 0
                for header in headers:
                    if header.lower().startswith(b"content-length:"):
                        length = int(header.split(b":")[1])
                if length:
                    await reader.readexactly(length)
                writer.write(
                    routes.get(path, b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, limit=1 << 20)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


# ------------------------------------------------------------- baseline loop (own process)


async def baseline_loop(base: str, scorers: int, seconds: float, warmup: float) -> None:
    """The floor of the 200-scorer run: same requests, same cadence, nothing else."""
    import httpx

    lags: list[float] = []
    done = 0
    loop = asyncio.get_running_loop()
    start = loop.time()
    window = (start + warmup, start + warmup + seconds)
    async with httpx.AsyncClient(timeout=30) as client:

        async def scorer(index: int) -> None:
            nonlocal done
            scheduled = start + index / scorers
            own = f"{base}{FLEET}/{index}"  # each scorer's own URLs, as the agent's
            while True:
                await asyncio.sleep(max(0.0, scheduled - loop.time()))
                began = loop.time()
                answer = await client.get(
                    f"{own}/api/v1/query_range",
                    params={"query": "up", "start": "1", "end": "2", "step": "1"},
                )
                series = answer.json()["data"]["result"]
                scored = await client.post(
                    f"{own}/scoring",
                    content=json.dumps({"data": series}),
                    headers={"Content-Type": "application/json"},
                )
                scored.json()
                if window[0] <= began < window[1]:
                    lags.append(began - scheduled)
                    done += 1
                scheduled += 1.0

        tasks = [asyncio.create_task(scorer(i)) for i in range(scorers)]
        await asyncio.sleep(warmup)
        cpu0, wall0 = _cpu_seconds(os.getpid()), time.monotonic()
        await asyncio.sleep(seconds)
        cpu1, wall1 = _cpu_seconds(os.getpid()), time.monotonic()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    print(
        json.dumps(
            {
                "done": done,
                "lag": statistics.median(lags) if lags else None,
                "cpu": (cpu1 - cpu0) / (wall1 - wall0),
                "rss": _rss_mb(os.getpid()),
            }
        ),
        flush=True,
    )


# ------------------------------------------------------------------------ measuring


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def _process_tree(pid: int) -> list[int]:
    """``pid`` and every process below it, from ``/proc/<pid>/task/<tid>/children``."""
    found, index = [pid], 0
    while index < len(found):
        tasks = Path(f"/proc/{found[index]}/task")
        index += 1
        for task in tasks.iterdir() if tasks.is_dir() else ():
            with contextlib.suppress(OSError):  # a task that ended meanwhile
                found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _tree_cpu_seconds(pid: int) -> float:
    """CPU seconds of ``pid``'s whole tree: the live processes', and what its reaped
    children used (``cutime``, ``cstime`` of ``pid``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    total = (int(fields[13]) + int(fields[14])) / TICKS
    for member in _process_tree(pid):
        with contextlib.suppress(OSError):
            total += _cpu_seconds(member)
    return total


def _tree_rss_mb(pid: int) -> float:
    """Resident memory of ``pid``'s whole tree (MB, the sum of each process's VmRSS)."""
    return sum(_rss_mb(member) for member in _process_tree(pid))


def _rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def _scrape(port: int) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "dynamic_scoring_requests_total":
                totals["requests"] = totals.get("requests", 0.0) + sample.value
                if sample.labels["status"] == "success":
                    totals["success"] = totals.get("success", 0.0) + sample.value
            elif sample.name == "dynamic_scoring_missed_cycles_total":
                totals["missed"] = totals.get("missed", 0.0) + sample.value
            elif sample.name == "dynamic_scoring_cycle_start_lag_seconds_bucket":
                totals[f"le:{sample.labels['le']}"] = sample.value
    return totals


def _histogram_median(before: dict[str, float], after: dict[str, float]) -> float:
    """``histogram_quantile(0.5, ...)`` of the lag histogram's increase between scrapes."""
    bounds = sorted(
        (float(k[3:]), after[k] - before.get(k, 0.0)) for k in after if k.startswith("le:")
    )
    total = bounds[-1][1]
    if total <= 0:
        return float("nan")
    rank, lower, below = total / 2, 0.0, 0.0
    for upper, count in bounds:
        if count >= rank:
            if upper == float("inf"):
                return lower
            return lower + (upper - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = upper, count
    return lower


class Agent:
    """``python -m agent`` as a child process."""

    def __init__(
        self,
        config: Path,
        scratch: Path,
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
    ) -> None:
        self.port = _free_port()
        (scratch / "secrets").mkdir(exist_ok=True)
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "agent",
                "--cluster-name",
                "bench",
                "--config-file",
                str(config),
                "--secrets-dir",
                str(scratch / "secrets"),
                "--metrics-bind",
                f"127.0.0.1:{self.port}",
                "--log-level",
                "error",
                *(args or []),
            ],
            env={**_env(), **(env or {})},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.pid = self.process.pid
        _wait_ready(self.port, lambda: self.process.poll() is not None)

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(30)


class ImageAgent:
    """The agent's image under podman, started as the rendered Deployment runs it (read-only
    root, UID 65532, every capability dropped), on the host's network so that it reaches the
    loopback fakes; ``scratch`` (the configuration and secrets) mounted read-only at the
    same path. CPU and RSS are read from the container's process as for a local agent."""

    def __init__(self, image: str, config: Path, scratch: Path) -> None:
        self.port = _free_port()
        (scratch / "secrets").mkdir(exist_ok=True)
        for path in (scratch, scratch / "secrets"):
            path.chmod(0o755)  # readable by UID 65532
        config.chmod(0o644)
        self._env = _podman_env(scratch)
        self.container = _podman(
            self._env, "run", "-d", "--network", "host", "--read-only", "--cap-drop", "all",
            "--user", "65532:65532", "-v", f"{scratch}:{scratch}:ro", image,
            "--cluster-name", "bench", "--config-file", str(config),
            "--secrets-dir", str(scratch / "secrets"), "--metrics-bind", f"127.0.0.1:{self.port}",
            "--log-level", "error",
        )  # fmt: skip
        self.pid = int(_podman(self._env, "inspect", "--format", "{{.State.Pid}}", self.container))
        _wait_ready(self.port, lambda: not Path(f"/proc/{self.pid}").exists())

    def stop(self) -> int:
        """SIGTERM (``podman stop``), then the container's exit code; the container is removed."""
        try:
            _podman(self._env, "stop", "--time", "30", self.container)
            return int(_podman(self._env, "wait", self.container))
        finally:
            _podman(self._env, "rm", "--force", self.container)


def _podman_env(scratch: Path) -> dict[str, str]:
    """podman's environment: runc as the runtime where installed, no default ulimits (what
    the image tests use)."""
    conf = scratch / "containers.conf"
    engine = '[engine]\nruntime = "runc"\n' if shutil.which("runc") else ""
    conf.write_text(f"[containers]\ndefault_ulimits = []\n{engine}")
    return {**os.environ, "CONTAINERS_CONF": str(conf)}


def _podman(env: dict[str, str], *args: str) -> str:
    return subprocess.run(
        ["podman", *args], env=env, capture_output=True, text=True, check=True, timeout=300
    ).stdout.strip()


def _wait_ready(port: int, gone: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline or gone():
                raise RuntimeError("agent did not become ready") from None
            time.sleep(0.1)


def _summaries(
    base: str, count: int, prefix: str = "", interval: int = 1, *, own_urls: bool = False
) -> list[dict[str, Any]]:
    """``count`` scorers on the fakes; ``own_urls``: each its own ``/fleet/<i>`` URLs."""
    return [
        {
            "name": f"bench-{i}",
            "scoreName": f"bench_score_{i}",
            "sourceType": "Prometheus",
            "sourceEndpoint": f"{base}{f'{FLEET}/{i}' if own_urls else prefix}/api/v1/query_range",
            "sourceEndpointAuthName": "",
            "sourceEndpointAuthKey": "",
            "sourceQuery": "up",
            "sourceRange": 600,
            "sourceStep": 60,
            "scoringEndpoint": f"{base}{f'{FLEET}/{i}' if own_urls else prefix}/scoring",
            "scoringInterval": interval,
            "scoringEndpointAuthName": "",
            "scoringEndpointAuthKey": "",
            "location": "Internal",
            "scoreDestination": "None",
            "scoreDimensionFormat": "${node};${namespace};${pod}",
        }
        for i in range(count)
    ]


def bench_scorers(
    base: str, scorers: int, seconds: float, scratch: Path, image: str | None = None
) -> dict[str, Any]:
    config = scratch / "summaries.json"
    config.write_text(json.dumps(_summaries(base, scorers, own_urls=True)))
    agent = Agent(config, scratch) if image is None else ImageAgent(image, config, scratch)
    try:
        time.sleep(LOAD_WARMUP)  # warm-up: first cycles, connection pool
        before, cpu0, wall0 = _scrape(agent.port), _tree_cpu_seconds(agent.pid), time.monotonic()
        time.sleep(seconds)
        after, cpu1, wall1 = _scrape(agent.port), _tree_cpu_seconds(agent.pid), time.monotonic()
        rss, peak = _tree_rss_mb(agent.pid), _rss_mb(agent.pid, "VmHWM")
    finally:
        code = agent.stop()
    elapsed = wall1 - wall0
    return {
        "done": (after["requests"] - before["requests"]) / (scorers * elapsed),
        "missed": after.get("missed", 0.0) - before.get("missed", 0.0),
        "lag": _histogram_median(before, after),
        "cpu": (cpu1 - cpu0) / elapsed,
        "rss": rss,
        "peak": peak,
        "exit": code,
    }


def bench_memory(base: str, scorers: int, seconds: float, scratch: Path) -> dict[str, Any]:
    """``scorers`` scorers with ~21 MB answers every 30 s under a 512 MiB limit
    (``DSF_MEMORY_LIMIT``): cycles done, missed, peak RSS, and the RSS floor — the lowest
    RSS over the first half of the run (after the first interval) against the lowest over
    the second half. Halves, not single intervals: a single interval's floor can catch
    memory that is about to be freed (before the agent collected a big cycle's garbage,
    zero to three answers' worth lingered between cycles), which says nothing of a creep;
    a creep lifts every floor."""
    config = scratch / "memory.json"
    config.write_text(json.dumps(_summaries(base, scorers, "/mem", MEM_INTERVAL)))
    agent = Agent(config, scratch, env={"DSF_MEMORY_LIMIT": str(MEM_LIMIT)})
    samples: list[tuple[float, float]] = []
    try:
        started = time.monotonic()
        while (now := time.monotonic()) - started < seconds:
            samples.append((now - started, _rss_mb(agent.pid)))
            time.sleep(0.5)
        totals, peak = _scrape(agent.port), _rss_mb(agent.pid, "VmHWM")
    finally:
        code = agent.stop()
    floors = [
        min(rss for at, rss in samples if k * MEM_INTERVAL <= at < (k + 1) * MEM_INTERVAL)
        for k in range(int(seconds // MEM_INTERVAL))
    ]
    half = max(1, (len(floors) - 1) // 2)
    return {
        # cycles that ended well among those that ended (skipped ones count as "missed")
        "done": totals.get("success", 0.0) / max(totals.get("requests", 0.0), 1.0),
        "missed": totals.get("missed", 0.0),
        "peak": peak,
        "floor_first": min(floors[1 : 1 + half]) if len(floors) > 1 else floors[0],
        "floor_last": min(floors[-half:]),
        "exit": code,
    }


def bench_memory_floor() -> float:
    """RSS (MB) of an interpreter that imports the agent's libraries and holds one answer:
    what any agent forwarding it needs at least."""
    output = subprocess.run(
        [
            sys.executable,
            "-c",
            "import asyncio, httpx, pydantic, yaml, dsf_contract.summary, pathlib;"
            "from bench.agent_bench import _mem_prometheus; body = _mem_prometheus();"
            "print(next(l.split()[1] for l in pathlib.Path('/proc/self/status').read_text().splitlines()"
            " if l.startswith('VmRSS')))",
        ],
        env=_env(),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(output.strip()) / 1024


def rendered_memory_limit_mib() -> float:
    """The memory limit of the rendered agent Deployment (``agent.resources`` by default)."""
    sys.path.insert(0, str(REPO))
    from dsf_compile.inputs.agent_settings import AgentSettings
    from dsf_compile.inputs.quantity import quantity_value

    limits = AgentSettings().resources.limits
    assert limits is not None and limits.memory is not None
    return float(quantity_value(limits.memory)) / 2**20


def _samples(port: int) -> tuple[list[tuple[str, dict[str, str], float]], float, int]:
    """Every sample of the agent's ``/metrics``, the seconds the scrape took, and its bytes."""
    from prometheus_client.parser import text_string_to_metric_families

    started = time.perf_counter()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as response:
        body = response.read()
    took = time.perf_counter() - started
    samples = [
        (sample.name, sample.labels, sample.value)
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    ]
    return samples, took, len(body)


def _total(samples: list[tuple[str, dict[str, str], float]], name: str, **labels: str) -> float:
    return sum(
        value
        for found, have, value in samples
        if found == name and all(have.get(k) == v for k, v in labels.items())
    )


def bench_isolation(
    base: str, healthy: int, seconds: float, scratch: Path, *, flood: bool
) -> dict[str, Any]:
    """``healthy`` scorers at 1 s, beside one answering ``FLOOD_RESULTS`` results when
    ``flood``: the healthy scorers' successful cycles per scheduled one, the slowest of
    ``/metrics`` scraped twice a second, peak RSS, and the flood's answers refused at the
    result cap."""
    summaries = _summaries(base, healthy)
    if flood:
        summaries.append(
            {**summaries[0], "name": "flood", "scoreName": "flood",
             "scoringEndpoint": f"{base}/flood/scoring"}
        )  # fmt: skip
    config = scratch / "isolation.json"
    config.write_text(json.dumps(summaries))
    agent = Agent(config, scratch)
    slowest = 0.0
    try:
        time.sleep(min(5.0, 1.0 + seconds))  # warm-up: first cycles, connection pool
        before, _, _ = _samples(agent.port)
        wall0 = time.monotonic()
        while time.monotonic() - wall0 < seconds:
            time.sleep(0.5)
            _, took, _ = _samples(agent.port)
            slowest = max(slowest, took)
        after, took, size = _samples(agent.port)
        elapsed = time.monotonic() - wall0
        peak = _rss_mb(agent.pid, "VmHWM")
    finally:
        agent.stop()

    def delta(name: str, **labels: str) -> float:
        return _total(after, name, **labels) - _total(before, name, **labels)

    ok = delta("dynamic_scoring_requests_total", status="success")
    flood_cycles = delta("dynamic_scoring_requests_total", score_name="flood")
    refused = delta("dynamic_scoring_failures_total", score_name="flood", reason="too_many_results")
    return {
        "done": ok / (healthy * elapsed),
        "scrape": max(slowest, took),
        "bytes": size,
        "peak": peak,
        "refused": refused / flood_cycles if flood_cycles else float("nan"),
        "flood_series": sum(
            1 for name, labels, _ in after if labels.get("ds_score_name") == "flood"
        ),
    }


def bench_hub_writes(base: str, scorers: int, seconds: float, scratch: Path) -> dict[str, Any]:
    """``scorers`` scorers every ``HUB_INTERVAL`` s whose scores never change, publishing to
    the emulated hub (``tests/agent/agent_fakes.FakeKube``, driven by the agent's real
    ``kubernetes`` client): the hub's requests per scorer and cycle, after the first cycle."""
    sys.path.insert(0, str(REPO))
    from tests.agent.agent_fakes import FakeKube

    hub = FakeKube().start()
    try:
        (scratch / "hub.kubeconfig").write_text(hub.kubeconfig())
        summaries = [
            {**summary, "scoreDestination": "AddOnPlacementScore"}
            for summary in _summaries(base, scorers, interval=HUB_INTERVAL)
        ]
        config = scratch / "hub-writes.json"
        config.write_text(json.dumps(summaries))
        agent = Agent(config, scratch, args=["--hub-kubeconfig", str(scratch / "hub.kubeconfig")])
        try:
            time.sleep(HUB_INTERVAL + 2)  # past every first cycle (create, read, write)
            before, _, _ = _samples(agent.port)
            seen = len(hub.server.taken())
            time.sleep(max(seconds, 2 * HUB_INTERVAL))
            after, _, _ = _samples(agent.port)
            taken = hub.server.taken()[seen:]
        finally:
            agent.stop()
    finally:
        hub.stop()
    cycles = _total(after, "dynamic_scoring_requests_total") - _total(
        before, "dynamic_scoring_requests_total"
    )
    requests: dict[str, float] = {}
    for request in taken:
        method = "PUT status" if request.path.endswith("/status") else request.method
        requests[method] = requests.get(method, 0.0) + 1 / max(cycles, 1.0)
    return {
        "scorers": scorers,
        "cycles": cycles,
        "writes": requests.get("PUT status", 0.0),
        "requests": requests,
    }


def bench_baseline(base: str, scorers: int, seconds: float) -> dict[str, Any]:
    output = subprocess.run(
        [
            sys.executable,
            __file__,
            "--baseline-loop",
            base,
            "--scorers",
            str(scorers),
            "--seconds",
            str(seconds),
        ],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 120,
    ).stdout
    result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    result["done"] = result["done"] / (scorers * seconds)
    return result


def bench_idle(scratch: Path) -> tuple[float, float]:
    config = scratch / "empty.json"
    config.write_text("[]")
    agent = Agent(config, scratch)
    try:
        time.sleep(3)
        idle = _rss_mb(agent.pid)
    finally:
        agent.stop()
    floor = subprocess.run(
        [
            sys.executable,
            "-c",
            "import asyncio, httpx, pydantic, yaml, dsf_contract.summary, pathlib;"
            "print(next(l.split()[1] for l in pathlib.Path('/proc/self/status').read_text().splitlines()"
            " if l.startswith('VmRSS')))",
        ],
        env=_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return idle, int(floor.strip()) / 1024


async def bench_payload(base: str, scratch: Path) -> dict[str, float]:
    import httpx

    sys.path.insert(0, str(REPO))
    from agent.cycle import CycleContext, CycleState, run_cycle
    from agent.metrics import AgentMetrics, ScorerMetrics
    from agent.secrets import DirSecretStore
    from agent.settings import RuntimeSettings
    from agent.transport import make_client
    from dsf_contract.summary import Summary

    summary = Summary.model_validate(_summaries(base, 1, "/big")[0])
    settings = RuntimeSettings(cluster_name="bench", secrets_dir=scratch)
    runs: dict[str, list[tuple[float, float]]] = {"agent": [], "floor": []}
    async with make_client(30.0) as client:
        metrics = AgentMetrics("bench")
        ctx = CycleContext(
            settings=settings, client=client, secrets=DirSecretStore(scratch), metrics=metrics
        )
        counters = ScorerMetrics(metrics, summary.scoreName)
        for _ in range(3):
            cpu, wall = time.process_time(), time.perf_counter()
            assert await run_cycle(ctx, summary, counters, CycleState())
            runs["agent"].append((time.process_time() - cpu, time.perf_counter() - wall))

            cpu, wall = time.process_time(), time.perf_counter()
            async with httpx.AsyncClient(timeout=30) as bare:
                answer = await bare.get(summary.sourceEndpoint, params={"query": "up"})
                series = json.loads(answer.content)["data"]["result"]
                scored = await bare.post(
                    summary.scoringEndpoint, content=json.dumps({"data": series}).encode()
                )
                json.loads(scored.content)
            runs["floor"].append((time.process_time() - cpu, time.perf_counter() - wall))
    return {
        "mbytes": len(_big_prometheus()) / 1e6,
        "agent_cpu": min(r[0] for r in runs["agent"]),
        "agent_wall": min(r[1] for r in runs["agent"]),
        "floor_cpu": min(r[0] for r in runs["floor"]),
        "floor_wall": min(r[1] for r in runs["floor"]),
    }


# ---------------------------------------------------------------------------- table


#: One row of the table: measure, the agent's figure, the baseline's, ratio, target.
Row = tuple[str, str, str, float, str]


def _load_rows(agent: dict[str, Any], floor: dict[str, Any]) -> list[Row]:
    """The 200-scorer rows: the agent against the bare httpx loop."""
    return [
        (
            "cycles done (% of scheduled)",
            f"{agent['done'] * 100:.1f}",
            f"{floor['done'] * 100:.1f}",
            agent["done"] / floor["done"],
            ">= 98 %",
        ),
        (
            "median start lag (ms)",
            f"{agent['lag'] * 1000:.2f}",
            f"{floor['lag'] * 1000:.2f}",
            agent["lag"] / max(floor["lag"], 1e-6),
            "< 20 ms",
        ),
        (
            "CPU (% of one core)",
            f"{agent['cpu'] * 100:.1f}",
            f"{floor['cpu'] * 100:.1f}",
            agent["cpu"] / floor["cpu"],
            "<= 12 %",
        ),
        (
            "RSS under load (MiB)",
            f"{agent['rss']:.1f}",
            f"{floor['rss']:.1f}",
            agent["rss"] / floor["rss"],
            "<= 40 MiB",
        ),
    ]


def _print_table(rows: list[Row]) -> None:
    print()
    print(f"| {'measure':<34} | {'agent':>9} | {'baseline':>9} | {'ratio':>6} | target     |")
    print(f"|{'-' * 36}|{'-' * 11}|{'-' * 11}|{'-' * 8}|{'-' * 12}|")
    for name, value, base_value, ratio, target in rows:
        print(f"| {name:<34} | {value:>9} | {base_value:>9} | {ratio:>6.2f} | {target:<10} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scorers", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument(
        "--memory-seconds",
        type=float,
        default=None,
        help="length of the big-answer memory case (20 scorers x 21 MB every 30 s; default "
        "300 s when --seconds is at least 30, else skipped; 0 skips it)",
    )
    parser.add_argument("--memory-scorers", type=int, default=20)
    parser.add_argument(
        "--flood-results",
        type=int,
        default=None,
        help="results in the flooding scorer's answer (default 150,000 when --seconds is at "
        "least 30, else 20,000: still past the agent's cap of 10,000)",
    )
    parser.add_argument(
        "--image",
        metavar="IMAGE",
        help="measure only the load rows, for the agent in IMAGE (agent/build-image.sh) run "
        "by podman as the rendered Deployment runs it",
    )
    parser.add_argument("--serve-fakes", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--baseline-loop", metavar="BASE_URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_seconds is None:
        args.memory_seconds = 300.0 if args.seconds >= 30 else 0.0
    elif 0 < args.memory_seconds < 2 * MEM_INTERVAL:
        parser.error(f"--memory-seconds must be 0 or at least {2 * MEM_INTERVAL}")
    if args.flood_results is None:
        args.flood_results = flood_results(args.seconds)
    if args.serve_fakes:
        asyncio.run(serve_fakes(args.flood_results))
        return
    if args.baseline_loop:
        asyncio.run(
            baseline_loop(args.baseline_loop, args.scorers, args.seconds, warmup=LOAD_WARMUP)
        )
        return

    fakes = subprocess.Popen(
        [sys.executable, __file__, "--serve-fakes", "--flood-results", str(args.flood_results)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert fakes.stdout is not None
        base = f"http://127.0.0.1:{fakes.stdout.readline().strip()}"
        with tempfile.TemporaryDirectory(prefix="agent-bench-") as tmp:
            scratch = Path(tmp)
            print(
                f"agent benchmark: {args.scorers} scorers at 1 s for {args.seconds:.0f} s, {os.cpu_count()} cores",
                flush=True,
            )
            agent = bench_scorers(base, args.scorers, args.seconds, scratch, args.image)
            floor = bench_baseline(base, args.scorers, args.seconds)
            if args.image:
                _print_table(_load_rows(agent, floor))
                print(f"image {args.image}: exit code after SIGTERM {agent['exit']}")
                return
            idle, idle_floor = bench_idle(scratch)
            payload = asyncio.run(bench_payload(base, scratch))
            memory = (
                bench_memory(base, args.memory_scorers, args.memory_seconds, scratch)
                if args.memory_seconds > 0
                else None
            )
            memory_floor = bench_memory_floor() if memory is not None else float("nan")
            healthy = max(2, args.scorers // 10)
            flooded = bench_isolation(base, healthy, args.seconds, scratch, flood=True)
            alone = bench_isolation(base, healthy, args.seconds, scratch, flood=False)
            writes = bench_hub_writes(base, max(2, args.scorers // 4), args.seconds, scratch)
    finally:
        fakes.terminate()
        fakes.wait(10)

    rows = [
        *_load_rows(agent, floor),
        ("idle RSS (MB)", f"{idle:.1f}", f"{idle_floor:.1f}", idle / idle_floor, "tens of MB"),
        (
            "2M-point payload: overhead CPU (s)",
            f"{payload['agent_cpu']:.3f}",
            f"{payload['floor_cpu']:.3f}",
            payload["agent_cpu"] / payload["floor_cpu"],
            "<= 1 s",
        ),
        (
            "2M-point payload: cycle wall (s)",
            f"{payload['agent_wall']:.3f}",
            f"{payload['floor_wall']:.3f}",
            payload["agent_wall"] / payload["floor_wall"],
            "-",
        ),
    ]
    if memory is not None:
        answer_mb = len(_mem_prometheus()) / 1e6
        rows += [
            (
                f"{args.memory_scorers} x {answer_mb:.0f} MB / 30 s: cycles ok (%)",
                f"{memory['done'] * 100:.1f}",
                "100.0",
                memory["done"],
                "no miss",
            ),
            (
                f"{args.memory_scorers} x {answer_mb:.0f} MB / 30 s: peak RSS (MB)",
                f"{memory['peak']:.1f}",
                f"{memory_floor:.1f}",
                memory["peak"] / memory_floor,
                "<= 512 MiB",
            ),
            (
                f"{args.memory_scorers} x {answer_mb:.0f} MB / 30 s: RSS floor growth (%)",
                f"{(memory['floor_last'] / memory['floor_first'] - 1) * 100:.1f}",
                f"{memory['floor_first']:.1f} MB",
                memory["floor_last"] / memory["floor_first"],
                "<= 10 %",
            ),
        ]
    limit = rendered_memory_limit_mib()
    rows += [
        (
            "isolation: healthy cycles ok (%)",
            f"{flooded['done'] * 100:.1f}",
            f"{alone['done'] * 100:.1f}",
            flooded["done"] / max(alone["done"], 1e-9),
            ">= 98 %",
        ),
        (
            "isolation: slowest /metrics (s)",
            f"{flooded['scrape']:.3f}",
            f"{alone['scrape']:.3f}",
            flooded["scrape"] / max(alone["scrape"], 1e-6),
            "<= 1 s",
        ),
        (
            "isolation: peak RSS (MB)",
            f"{flooded['peak']:.1f}",
            f"{alone['peak']:.1f}",
            flooded["peak"] / alone["peak"],
            f"<= {limit:.0f} MiB",
        ),
        (
            "isolation: flood refused (%)",
            f"{flooded['refused'] * 100:.1f}",
            "100.0",
            flooded["refused"],
            ">= 100 %",
        ),
        (
            "hub: status writes per cycle",
            f"{writes['writes']:.2f}",
            "1.00",
            writes["writes"],
            "<= 0.55",
        ),
    ]
    _print_table(rows)
    print(
        f"payload: {payload['mbytes']:.1f} MB, {BIG_SERIES} series x {BIG_POINTS} points. "
        f"agent: peak RSS {agent['peak']:.1f} MB, missed cycles {agent['missed']:.0f}, exit code after SIGTERM {agent['exit']}. "
        "Baselines: a bare httpx loop with the same cadence (rows 1-4); an interpreter importing the "
        "agent's libraries (idle); fetch + json.loads + json.dumps + POST with no checks (payload)."
    )
    if memory is not None:
        print(
            f"memory case: DSF_MEMORY_LIMIT={MEM_LIMIT // 2**20} MiB, {args.memory_seconds:.0f} s, "
            f"missed cycles {memory['missed']:.0f}, exit code {memory['exit']}. Baselines: an "
            "interpreter importing the agent's libraries and holding one answer (peak); the lowest "
            "RSS of the run's first half (floor; the figure is the second half's against it)."
        )

    print(
        f"isolation: {healthy} healthy scorers at 1 s beside one answering "
        f"{args.flood_results:,} results ({len(_scores(args.flood_results)) / 1e6:.1f} MB), "
        f"{args.seconds:.0f} s; /metrics {flooded['bytes'] / 1e3:.0f} kB, "
        f"{flooded['flood_series']:.0f} series of the flood; memory limit: the rendered "
        f"Deployment's {limit:.0f} MiB. Baseline: the healthy scorers alone."
    )
    per_cycle = writes["requests"]
    print(
        f"hub writes: {writes['scorers']} scorers every {HUB_INTERVAL} s with unchanged scores, "
        f"{args.seconds:.0f} s, {writes['cycles']:.0f} cycles; requests per scorer and cycle: "
        + ", ".join(f"{method} {count:.2f}" for method, count in sorted(per_cycle.items()))
        + f". At 10,000 clusters x 100 scorers every 30 s: {writes['writes'] * 1e6 / 30:,.0f} "
        f"status writes/s (every cycle: {1e6 / 30:,.0f}/s)."
    )


if __name__ == "__main__":
    main()
