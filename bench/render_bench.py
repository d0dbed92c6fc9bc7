"""Render benchmark: a generated fleet of N clusters × 50 scorers, masks by label selector.

    python bench/render_bench.py [--clusters 1000] [--scorers 50] [--repeat 3]

Prints a table of wall times (best of ``--repeat``) with the in-run floor — the same
summaries encoded with ``json.dumps(indent=2)`` and written one file per cluster by a
bare loop — and each figure's ratio to it. A second floor, "layout floor", writes the very
files render writes (one object per file, a kustomization per folder: about three files
per cluster) by a bare loop, to separate the cost of the layout from the compiler's own. Targets (quality.md): full render ≤ 1.5×
the floor, no-op render and ``--check`` ≤ 20 % of a full render, near-linear scaling.
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from dsf_compile.cli import run
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.pipeline import plan_fleet
from dsf_compile.render.manifests import render_manifests, summaries_of
from dsf_compile.scoring_api import ScorerConfig
from dsf_compile.sync.lock import Lockfile, make_entry, write_lockfile

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


def best_of(repeat: int, setup: Callable[[], None], action: Callable[[], None]) -> float:
    times = []
    for _ in range(repeat):
        setup()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def render_cli(root: Path, *extra: str) -> None:
    code = run(["--root", str(root), "render", *extra], io.StringIO(), io.StringIO())
    if code != 0:
        raise SystemExit(f"render {' '.join(extra)} exited {code}")


def measure(clusters: int, scorers: int, repeat: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "fleet"
        generate_fleet(root, clusters, scorers)
        plan = plan_fleet(root)
        per_cluster = [
            (c.name, [s.model_dump() for s in summaries_of(plan, c.name)]) for c in plan.clusters
        ]
        floor_dir = Path(tmp) / "floor"

        def clean_floor() -> None:
            shutil.rmtree(floor_dir, ignore_errors=True)
            floor_dir.mkdir()

        def floor() -> None:
            for name, summaries in per_cluster:
                (floor_dir / f"{name}.json").write_text(json.dumps(summaries, indent=2))

        def clean_rendered() -> None:
            shutil.rmtree(root / "rendered", ignore_errors=True)

        rendered = render_manifests(plan)
        layout_dir = Path(tmp) / "layout"

        def clean_layout() -> None:
            shutil.rmtree(layout_dir, ignore_errors=True)

        def layout_floor() -> None:
            # The same files and folders render writes, by a bare loop: the cost of the
            # layout itself (one object per file, a kustomization per folder).
            for relative, text in rendered.items():
                target = layout_dir / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text)

        figures = {
            "floor": best_of(repeat, clean_floor, floor),
            "layout floor": best_of(repeat, clean_layout, layout_floor),
            "full render": best_of(repeat, clean_rendered, lambda: render_cli(root)),
        }
        render_cli(root)
        figures["no-op render"] = best_of(repeat, lambda: None, lambda: render_cli(root))
        figures["render --check"] = best_of(
            repeat, lambda: None, lambda: render_cli(root, "--check")
        )
        files = sum(1 for p in (root / "rendered").rglob("*") if p.is_file())
        figures["files"] = files
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--scorers", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    print(f"render benchmark: {args.scorers} scorers, best of {args.repeat}\n")
    print(f"{'clusters':>8} {'what':<16} {'seconds':>9} {'× floor':>8} {'÷ full':>7}  target")
    scaling = {}
    for clusters in sorted({10, 100, args.clusters}):
        figures = measure(clusters, args.scorers, args.repeat)
        floor, full = figures["floor"], figures["full render"]
        scaling[clusters] = full
        for what in ("floor", "layout floor", "full render", "no-op render", "render --check"):
            seconds = figures[what]
            target = {
                "full render": "≤ 1.5× floor",
                "no-op render": "≤ 20% of full",
                "render --check": "≤ 20% of full",
            }
            print(
                f"{clusters:>8} {what:<16} {seconds:>9.3f} {seconds / floor:>8.2f} {seconds / full:>7.2f}  "
                f"{target.get(what, '')}"
            )
        print(f"{clusters:>8} {'files written':<16} {int(figures['files']):>9}")
    small, large = min(scaling), max(scaling)
    per_small = scaling[small] / small
    per_large = scaling[large] / large
    print(
        f"\nscaling: {per_small * 1000:.2f} ms/cluster at {small}, {per_large * 1000:.2f} ms/cluster at {large}"
    )


if __name__ == "__main__":
    main()
