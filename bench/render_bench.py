"""Render benchmark: a generated fleet of N clusters × 50 scorers, masks by label selector.

    python bench/render_bench.py [--clusters 1000] [--scorers 50] [--repeat 3]

Prints a table of wall times (best of ``--repeat``) with the in-run floor — the same
summaries encoded with ``json.dumps(indent=2)`` and written one file per cluster by a
bare loop — and each figure's ratio to it. A second floor, "layout floor", writes the very
files render writes (one object per file, a kustomization per folder: about three files
per cluster) by a bare loop, to separate the cost of the layout from the compiler's own.
The renders are whole commands (``python -m dsf_compile render`` in a child process:
interpreter start, imports and all), each with its own peak RSS; the floors run in this
process. Targets (``docs/benchmarks.md``): full render ≤ 1.2× the floor, no-op render and ``--check``
≤ 10 % of a full render, near-linear scaling. ``python -m bench`` imports :func:`measure`.
"""

from __future__ import annotations

import argparse
import compileall
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's compiler, also when run as a script

from bench.peak import measured_dsf_compile  # noqa: E402
from dsf_compile.commands.cli import run  # noqa: E402
from dsf_compile.inputs.scorer import DynamicScorer  # noqa: E402
from dsf_compile.pipeline.inputs import plan_fleet  # noqa: E402
from dsf_compile.render.manifests import render_manifests  # noqa: E402
from dsf_compile.render.shards import CLUSTERS_FOLDER, shard_count  # noqa: E402
from dsf_compile.resolve.summaries import Plan  # noqa: E402
from dsf_compile.sync.lock import Lockfile, make_entry, write_lockfile  # noqa: E402
from dsf_contract.scoring_api import ScorerConfig  # noqa: E402

FIRST_NO_OP = "no-op, first after render"
REGIONS = ("eu-west", "us-east", "ap-south")


def generate_fleet(root: Path, clusters: int, scorers: int) -> None:
    """Inputs, masks and a lockfile for a fleet; half the scorers are Full, half None."""
    (root / "scorers").mkdir(parents=True)
    (root / "clusters").mkdir()
    docs = []
    lock = {}
    for i in range(scorers):
        full = i % 2 == 0
        name = f"scorer-{i:03d}"
        score = f"{'gpu' if i % 5 == 0 else 'cpu'}_{i:03d}_score"
        spec: dict[str, object] = {
            "description": f"generated scorer {i}",
            "configURL": f"http://{name}.scoring.svc:8000/config",
            "configSyncMode": "Full" if full else "None",
            "scoreDestination": "AddOnPlacementScore",
            "scoreDimensionFormat": "${node};${namespace};${pod}",
        }
        if not full:
            spec["source"] = {
                "type": "Prometheus",
                "host": "http://prometheus.monitoring.svc:9090",
                "path": "/api/v1/query_range",
                "params": {
                    "query": f"sum by (node, namespace, pod) (rate(metric_{i}[1m]))",
                    "range": 3600,
                    "step": 60,
                },
            }
            spec["scoring"] = {"path": "/scoring", "params": {"name": score, "interval": 30}}
        doc = {
            "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
            "kind": "DynamicScorer",
            "metadata": {"name": name},
            "spec": spec,
        }
        docs.append(doc)
        config = None
        if full:
            config = ScorerConfig.model_validate(
                {
                    "source": {
                        "type": "Prometheus",
                        "host": "http://prometheus.monitoring.svc:9090",
                        "path": "/api/v1/query_range",
                        "params": {
                            "query": f"avg by (node, namespace, pod) (metric_{i})",
                            "range": 7200,
                            "step": 60,
                        },
                    },
                    "scoring": {"path": "/scoring", "params": {"name": score, "interval": 60}},
                }
            )
        lock[name] = make_entry(DynamicScorer.model_validate(doc).spec, healthy=True, config=config)
    (root / "scorers/generated.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    inventory = [
        {
            "apiVersion": "cluster.open-cluster-management.io/v1",
            "kind": "ManagedCluster",
            "metadata": {
                "name": f"cluster-{c:04d}",
                "labels": {"gpu": "true" if c % 3 == 0 else "false", "region": REGIONS[c % 3]},
            },
        }
        for c in range(clusters)
    ]
    masks = {
        "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
        "kind": "DynamicScoringConfig",
        "metadata": {"name": "dynamic-scoring-config"},
        "spec": {
            "masks": [
                {"clusterSelector": {"matchLabels": {"gpu": "false"}}, "scoreName": "gpu_*_score"},
                {
                    "clusterSelector": {
                        "matchExpressions": [
                            {"key": "region", "operator": "In", "values": ["ap-south"]}
                        ]
                    },
                    "scoreName": "cpu_00*_score",
                },
            ]
        },
    }
    (root / "clusters/inventory.yaml").write_text(
        yaml.safe_dump_all([*inventory, masks], sort_keys=False)
    )
    write_lockfile(root, Lockfile(scorers=lock))


def best_of(repeat: int, action: Callable[[int], float]) -> float:
    """The best of ``repeat`` runs; ``action(run)`` returns its own seconds.

    Every run writes into a folder of its own and nothing is deleted until the whole
    measurement is over: ext4 will not reuse an inode deleted in the last 30 seconds and
    scans past every such inode to allocate a new one, so creating files right after
    deleting tens of thousands of them costs up to 3× more (measured: the same 40,000
    creations in 7.4 s, then 16.7 s and 20.1 s in the next two runs, each after deleting
    the previous tree). A render in a repository does not follow a mass deletion.
    """
    times = []
    for number in range(repeat):
        # The previous run's dirty pages are written back now, not during this one.
        os.sync()
        times.append(action(number))
    return min(times)


#: The packages a command imports from this checkout.
PACKAGES = ("dsf_compile", "dsf_contract", "dsf_transport")


def compile_packages() -> None:
    """This checkout's bytecode, compiled as pip compiles an install: a shell that sets
    ``PYTHONDONTWRITEBYTECODE`` would otherwise time compiling the sources in every
    command (the contract and transport packages included, not only the compiler's)."""
    for package in PACKAGES:
        compileall.compile_dir(REPO / package, quiet=1)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    return env


def render_command(root: Path, *extra: str) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of ``python -m dsf_compile render`` as a whole command."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        argv = ["--root", str(root), "render", *extra]
        with measured_dsf_compile(argv, _env(), stdout=subprocess.DEVNULL, stderr=err) as (
            process,
            peak,
        ):
            process.wait()
            seconds = time.perf_counter() - start
        if process.returncode != 0 or not peak:
            err.seek(0)
            raise SystemExit(
                f"render {' '.join(extra)} exited {process.returncode}: {err.read().decode()[-2000:]}"
            )
    return seconds, peak[0]


def floor_seconds(plan: Plan, scratch: Path, repeat: int) -> float:
    """The floor: the same summaries, ``json.dumps(indent=2)``, one file per cluster."""
    # Each scorer's summary is dumped once; the floor encodes it on every cluster.
    dumped = {name: r.summary.model_dump() for name, r in plan.resolved.items()}
    per_cluster = [(c.name, [dumped[n] for n in c.scorers]) for c in plan.clusters]

    def floor(number: int) -> float:
        start = time.perf_counter()
        folder = scratch / f"floor-{number}"
        folder.mkdir()
        for name, summaries in per_cluster:
            (folder / f"{name}.json").write_text(json.dumps(summaries, indent=2))
        return time.perf_counter() - start

    return best_of(repeat, floor)


def asked_shards(plan: Plan, files: Mapping[str, str]) -> int:
    """The number of shards the plan's ``render.shardBytes`` asks for, given ``files``
    rendered with the count unset (one shard, which the budget is held against)."""
    size = sum(
        len(text.encode("utf-8"))
        for path, text in files.items()
        if path.startswith(f"{CLUSTERS_FOLDER}/") and not path.endswith("/kustomization.yaml")
    )
    return shard_count(size, plan.inputs.settings.render.shardBytes)


def layout_floor_seconds(rendered: Mapping[str, str], scratch: Path, repeat: int) -> float:
    """The very files render writes, by a bare loop: the cost of the layout itself."""

    def layout_floor(number: int) -> float:
        start = time.perf_counter()
        folder = scratch / f"layout-{number}"
        for relative, text in rendered.items():
            target = folder / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
        return time.perf_counter() - start

    return best_of(repeat, layout_floor)


def measure(
    clusters: int, scorers: int, repeat: int, scratch: Path | None = None
) -> dict[str, float]:
    """Floors in this process; full, no-op and ``--check`` renders as whole commands.

    Everything is written under ``scratch`` (a temporary folder when None, removed at
    the end); the caller removes ``scratch`` when it passes one, after its last run.
    """
    if scratch is None:
        with tempfile.TemporaryDirectory() as tmp:
            return measure(clusters, scorers, repeat, Path(tmp))
    scratch = Path(tempfile.mkdtemp(prefix=f"{clusters}x{scorers}-", dir=scratch))
    # The commands run with the compiler's bytecode compiled, as an installed package has
    # it (pip compiles it at install time) and as any earlier run leaves it; without this,
    # a shell that sets PYTHONDONTWRITEBYTECODE would time compiling the compiler's sources.
    compile_packages()
    inputs = scratch / "inputs"
    generate_fleet(inputs, clusters, scorers)
    plan = plan_fleet(inputs)
    rendered = render_manifests(plan)
    # render no longer chooses the number of shards on its own (past render.shardBytes it
    # refuses until render.shards pins one): the fleet pins the count the budget asks for
    (inputs / "dsf.yaml").write_text(f"render:\n  shards: {asked_shards(plan, rendered)}\n")
    figures = {
        "floor": floor_seconds(plan, scratch, repeat),
        "layout floor": layout_floor_seconds(rendered, scratch, repeat),
    }
    del plan, rendered
    peaks: list[float] = []

    def fresh_fleet(name: str) -> Path:
        # the inputs without rendered/ or a cache: a full render into new folders
        root = scratch / name
        shutil.copytree(inputs, root)
        return root

    def full(number: int) -> float:
        seconds, peak = render_command(fresh_fleet(f"command-{number}"))
        peaks.append(peak)
        return seconds

    figures["full render"] = best_of(repeat, full)
    figures["full render peak MB"] = min(peaks)

    def in_process(number: int) -> float:
        # the compiler's own work: this process has imported everything already
        root = fresh_fleet(f"in-process-{number}")
        start = time.perf_counter()
        code = run(["--root", str(root), "render"], io.StringIO(), io.StringIO())
        seconds = time.perf_counter() - start
        if code != 0:
            raise SystemExit(f"render exited {code}")
        return seconds

    figures["full render in process"] = best_of(repeat, in_process)
    # The first check after a render relies on the lstat the render recorded (it read back
    # what it wrote); were that missing, it would read every rendered file. Both measured.
    figures[FIRST_NO_OP] = best_of(
        repeat, lambda number: render_command(scratch / f"command-{number}")[0]
    )
    root = scratch / "command-0"
    figures["no-op render"] = best_of(repeat, lambda _: render_command(root)[0])
    figures["render --check"] = best_of(repeat, lambda _: render_command(root, "--check")[0])
    files = [p for p in (root / "rendered").rglob("*") if p.is_file()]
    figures["files"] = len(files)
    figures["output MB"] = sum(p.stat().st_size for p in files) / 1e6
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--scorers", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(f"render benchmark: {args.scorers} scorers, best of {args.repeat}\n")
    print(f"{'clusters':>8} {'what':<25} {'seconds':>9} {'× floor':>8} {'÷ full':>7}  target")
    scaling = {}
    for clusters in sorted({10, 100, args.clusters}):
        figures = measure(clusters, args.scorers, args.repeat)
        floor, full = figures["floor"], figures["full render"]
        scaling[clusters] = full
        for what in (
            "floor",
            "layout floor",
            "full render",
            "full render in process",
            FIRST_NO_OP,
            "no-op render",
            "render --check",
        ):
            seconds = figures[what]
            target = {
                "full render": "≤ 1.2× floor",
                FIRST_NO_OP: "≤ 10% of full",
                "no-op render": "≤ 10% of full",
                "render --check": "≤ 10% of full",
            }
            print(
                f"{clusters:>8} {what:<25} {seconds:>9.3f} {seconds / floor:>8.2f} {seconds / full:>7.2f}  "
                f"{target.get(what, '')}"
            )
        print(
            f"{clusters:>8} {'files written':<25} {int(figures['files']):>9}, "
            f"{figures['output MB']:.1f} MB; full render peak RSS {figures['full render peak MB']:.0f} MB"
        )
    small, large = min(scaling), max(scaling)
    per_small = scaling[small] / small
    per_large = scaling[large] / large
    print(
        f"\nscaling: {per_small * 1000:.2f} ms/cluster at {small}, {per_large * 1000:.2f} ms/cluster at {large}"
    )


if __name__ == "__main__":
    main()
