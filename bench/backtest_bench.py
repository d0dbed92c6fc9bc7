"""``backtest`` at fleet scale: 1,000 clusters × 20 Placements ranking by 5 scorers (one
item each), 7 days of samples every 5 minutes, replayed at a 5-minute step.

The figure is the whole command (``dsf-compile backtest --format json`` in a child
process: interpreter, imports, inputs, history, replay, report); the in-run baseline is
a bare Python loop parsing the same history file with orjson, line by line. Both are
compared in CPU seconds (user + system) and shown in wall seconds too: on a shared
two-core machine the wall clock of a 2 s loop and of a 20 s command, taken at different
moments, measure the neighbours' load more than the code. The child's peak RSS is
reported beside it. Run: ``python bench/backtest_bench.py [--clusters N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # also when run as a script

from bench.peak import measured_dsf_compile

SCORERS = 5
STEP = 300
START = 1_763_942_400  # a Monday, 00:00 UTC


def write_fleet(root: Path, clusters: int, placements: int) -> None:
    """Scorers (spec only: no lockfile needed), the inventory, Placements and a binding."""
    for folder in ("scorers", "clusters", "placements"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "scorers" / "scorers.yaml").write_text(_documents(_scorers()))
    inventory = [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {"name": f"cluster-{c:05d}", "labels": {"tier": f"t{c % 3}"}},
        }
        for c in range(clusters)
    ]
    (root / "clusters" / "inventory.yaml").write_text(_documents(inventory))
    objects: list[dict[str, object]] = [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    ]
    for p in range(placements):
        configurations = [
            {
                "scoreCoordinate": {
                    "type": "AddOn",
                    "addOn": {"resourceName": f"score-{s}", "scoreName": f"score_{s}"},
                },
                "weight": 1 + (p + s) % 3,
            }
            for s in range(SCORERS)
        ]
        objects.append(
            {
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "Placement",
                "metadata": {"name": f"placement-{p:03d}", "namespace": "default"},
                "spec": {
                    "numberOfClusters": 1 + p % 5,
                    "prioritizerPolicy": {"mode": "Additive", "configurations": configurations},
                },
            }
        )
    (root / "placements" / "placements.yaml").write_text(_documents(objects))


def _scorers() -> list[dict[str, object]]:
    """Spec-only scorers (``configSyncMode: None``): no lockfile needed."""
    return [
        {
            "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
            "kind": "DynamicScorer",
            "metadata": {"name": f"scorer-{s}"},
            "spec": {
                "description": "bench",
                "configURL": f"http://scorer-{s}.example:8000/config",
                "configSyncMode": "None",
                "scoreDestination": "AddOnPlacementScore",
                "scoreDimensionFormat": "${scoreName}",
                "source": {"type": "None"},
                "scoring": {"path": "/scoring", "params": {"name": f"score_{s}", "interval": STEP}},
            },
        }
        for s in range(SCORERS)
    ]


def _documents(objects: Sequence[Mapping[str, object]]) -> str:
    return "".join("---\n" + json.dumps(o) + "\n" for o in objects)


def write_history(path: Path, clusters: int, days: int, seed: int = 1) -> int:
    """A random walk per cluster and scorer, one sample every 5 minutes; returns its bytes."""
    rng = random.Random(seed)
    times = [(START + k * STEP) * 1000 for k in range(days * 86_400 // STEP + 1)]
    with path.open("wb") as out:
        for c in range(clusters):
            for s in range(SCORERS):
                value, values = rng.uniform(-80, 80), []
                for _ in times:
                    value = max(-120.0, min(120.0, value + rng.gauss(0, 4)))
                    values.append(round(value, 2))
                metric = {
                    "__name__": "dynamic_score",
                    "ds_cluster": f"cluster-{c:05d}",
                    "ds_score_name": f"score_{s}",
                }
                out.write(orjson.dumps({"metric": metric, "values": values, "timestamps": times}))
                out.write(b"\n")
    return path.stat().st_size


def bare_parse(path: Path) -> tuple[float, float]:
    """The floor: orjson over every line, nothing kept; (wall, CPU) seconds."""
    started, cpu = time.perf_counter(), time.process_time()
    with path.open("rb") as lines:
        for line in lines:
            orjson.loads(line)
    return time.perf_counter() - started, time.process_time() - cpu


def measure(clusters: int, placements: int, days: int, folder: Path) -> dict[str, float]:
    """Seconds of the command and of the bare parse, the child's peak RSS (MiB), steps."""
    write_fleet(folder, clusters, placements)
    history = folder / "history.jsonl"
    size = write_history(history, clusters, days)
    floor, floor_cpu = bare_parse(history)
    end = START + days * 86_400
    argv = [
        "--root", str(folder), "backtest",
        "--history", str(history), "--from", _iso(START), "--to", _iso(end), "--step", "5m",
        "--format", "json",
    ]  # fmt: skip
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with measured_dsf_compile(argv, os.environ, **pipes) as (process, peak):
        stdout, stderr = process.communicate()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if process.returncode != 0 or not peak:
        raise RuntimeError(stderr.decode(errors="replace")[-2000:])
    report = json.loads(stdout)
    rss = peak[0]
    changes = sum(p["changes"] for p in report["placements"])
    return {"wall": wall, "floor": floor, "cpu": cpu, "floor_cpu": floor_cpu, "rss": rss,
            "steps": report["steps"], "bytes": size, "changes": changes}  # fmt: skip


def _iso(seconds: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def main() -> None:
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--placements", type=int, default=20)
    parser.add_argument("--days", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        print(measure(args.clusters, args.placements, args.days, Path(folder)))


if __name__ == "__main__":
    main()
