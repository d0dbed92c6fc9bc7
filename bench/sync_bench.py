"""Sync speed: N ``Full`` scorers on loopback, each answering after a delay.

Target (``docs/benchmarks.md``, the figures of :mod:`bench.command_bench`): 200 scorers x 100 ms
in <= 0.6 s wall, where sequential would be 20 s; one hanging scorer costs at most the timeout
+ 0.3 s and delays no other.

The sequential baseline is estimated in the same run: N x the measured latency of one
request on a warmed client (median of several), which is what polling one by one costs.
The server runs in a separate process so it does not share the client's interpreter lock.
Each case runs ``--repeat`` times; the median wall time is shown.

    PYTHONPATH=. python bench/sync_bench.py [--scorers 200] [--delay 0.1] [--timeout 2]
        [--concurrency 32,64,200]
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import statistics
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

_ROOT = Path(__file__).resolve().parent.parent
# The package, and the loopback servers the tests use.
sys.path.insert(0, str(_ROOT))

from bench.command_bench import HANG_EXTRA, SYNC_TARGET  # noqa: E402
from dsf_compile.inputs.scorer import DynamicScorer  # noqa: E402
from dsf_compile.inputs.sync_settings import SyncSettings  # noqa: E402
from dsf_compile.sync.fetch import sync_lock  # noqa: E402
from dsf_compile.sync.lock import Lockfile, encode_lockfile  # noqa: E402
from tests.sync_servers import LoopbackServer, hang, json_body  # noqa: E402 - after the sys.path set-up

CONFIG = {
    "name": "bench-scorer",
    "source": {"type": "Prometheus", "path": "/api/v1/query_range", "params": {"range": 3600}},
    "scoring": {"path": "/scoring", "params": {"name": "bench_score", "interval": 30}},
}


def _serve(delay: float, conn: Connection) -> None:
    with LoopbackServer() as server:
        server.route("/config", json_body(CONFIG, delay=delay))
        server.route("/hang", hang())
        conn.send(server.port)
        conn.recv()  # until the parent says stop


def _scorer(name: str, url: str) -> DynamicScorer:
    return DynamicScorer.model_validate(
        {
            "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
            "kind": "DynamicScorer",
            "metadata": {"name": name},
            "spec": {
                "description": "bench",
                "configURL": url,
                "configSyncMode": "Full",
                "scoreDestination": "AddOnPlacementScore",
            },
        }
    )


@dataclass
class Row:
    case: str
    concurrency: int
    wall: float
    cpu: float
    active: int
    inactive: int


def _run(scorers: list[DynamicScorer], settings: SyncSettings) -> tuple[float, float, Lockfile]:
    """Wall time, this process's CPU time, and the lockfile of one sync."""
    start, cpu = time.perf_counter(), time.process_time()
    lock = asyncio.run(sync_lock(scorers, Lockfile(), settings)).lock
    return time.perf_counter() - start, time.process_time() - cpu, lock


def _row(case: str, scorers: list[DynamicScorer], settings: SyncSettings, repeat: int) -> Row:
    runs = [_run(scorers, settings) for _ in range(repeat)]
    wall = statistics.median(w for w, _, _ in runs)
    cpu = statistics.median(c for _, c, _ in runs)
    lock = runs[-1][2]
    # Same inputs, same bytes: the runs must agree.
    assert len({encode_lockfile(lk) for _, _, lk in runs}) == 1
    active = sum(1 for e in lock.scorers.values() if e.health == "Active")
    return Row(case, settings.concurrency, wall, cpu, active, len(lock.scorers) - active)


async def _request_latency(url: str, samples: int) -> float:
    """Median latency of one GET on a warmed client: the cost of one step of a sequential poll."""
    async with httpx.AsyncClient() as client:
        await client.get(url)  # warm-up: connection setup code paths, imports
        times = []
        for _ in range(samples):
            start = time.perf_counter()
            response = await client.get(url)
            times.append(time.perf_counter() - start)
            response.raise_for_status()
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scorers", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.1, help="seconds each answer takes")
    parser.add_argument(
        "--timeout", type=float, default=2.0, help="sync.timeoutSeconds for the hang case"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the median is shown")
    parser.add_argument(
        "--concurrency",
        default="",
        help="comma-separated sync.concurrency values (default: the default, 64 and N)",
    )
    args = parser.parse_args()
    default = SyncSettings()
    levels = sorted(
        {int(c) for c in args.concurrency.split(",") if c}
        or {default.concurrency, 64, args.scorers}
    )

    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_serve, args=(args.delay, child), daemon=True)
    process.start()
    try:
        port = parent.recv()
        base = f"http://127.0.0.1:{port}"
        latency = asyncio.run(_request_latency(f"{base}/config?n=single", 7))
        sequential = args.scorers * latency
        fast = [_scorer(f"s{i:04}", f"{base}/config?n={i}") for i in range(args.scorers)]
        with_hang = [_scorer("hang", f"{base}/hang"), *fast[1:]]
        _run(fast[:1], default)  # warm-up: imports, first TLS context
        rows = []
        for concurrency in levels:
            settings = SyncSettings(concurrency=concurrency)
            case = f"{args.scorers} x {args.delay * 1000:g} ms"
            rows.append(_row(case, fast, settings, args.repeat))
        for concurrency in sorted({default.concurrency, args.scorers}):
            settings = SyncSettings(concurrency=concurrency, timeoutSeconds=args.timeout)
            case = f"1 hang + {args.scorers - 1} x {args.delay * 1000:g} ms, timeout {args.timeout:g} s"
            rows.append(_row(case, with_hang, settings, 1))
    finally:
        parent.send("stop")
        process.join(timeout=15)

    print(f"single-request latency, warmed client (median of 7): {latency * 1000:.1f} ms")
    print(
        f"sequential baseline estimate: {args.scorers} x {latency * 1000:.1f} ms = {sequential:.2f} s"
    )
    print()
    print(
        "| case | concurrency | wall (s) | client CPU (s) | sequential est. (s) | ratio "
        "| Active | Inactive | target |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    default_ok = True
    for row in rows:
        if "hang" in row.case:
            limit = args.timeout + HANG_EXTRA
            good = row.wall <= limit and row.inactive == 1
            target = f"<= {limit:g} s, only the hang Inactive"
        else:
            good = row.wall <= SYNC_TARGET and row.inactive == 0
            target = f"<= {SYNC_TARGET:g} s"
        if row.concurrency == default.concurrency:
            default_ok = default_ok and good
        print(
            f"| {row.case} | {row.concurrency} | {row.wall:.3f} | {row.cpu:.3f} | {sequential:.2f} "
            f"| {sequential / row.wall:.1f}x | {row.active} | {row.inactive} "
            f"| {'met' if good else 'MISSED'} ({target}) |"
        )
    return 0 if default_ok else 1


if __name__ == "__main__":
    sys.exit(main())
