"""``explain`` at fleet scale: 1,000 clusters × 100 Placements × 5 AddOn coordinates.

The figure is the time to read the scores snapshot (through the project's located
loader) and schedule every Placement; the in-run baseline is loading the same snapshot
with PyYAML's C loader alone (``yaml.load(text, CSafeLoader)``), the least any reader
of that file pays. Run: ``python bench/explain_bench.py [--clusters N] [--placements N]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from dsf_compile.hubread.state import read_scores  # noqa: E402
from dsf_compile.inputs.placements import Placement  # noqa: E402
from dsf_compile.placement.scheduler import Cluster, ScoreIndex, schedule  # noqa: E402

SCORES = 5
ITEMS = 4
AT = datetime(2026, 11, 22, 10, tzinfo=UTC)


def snapshot_text(clusters: int) -> str:
    items = []
    for c in range(clusters):
        for s in range(SCORES):
            items.append(
                {
                    "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
                    "kind": "AddOnPlacementScore",
                    "metadata": {"name": f"score-{s}", "namespace": f"cluster-{c:05d}"},
                    "status": {
                        "scores": [
                            {"name": f"item-{i}", "value": (c * 7 + s * 13 + i) % 201 - 100}
                            for i in range(ITEMS)
                        ],
                        "validUntil": "2026-11-23T00:00:00Z",
                    },
                }
            )
    return yaml.dump({"apiVersion": "v1", "kind": "List", "items": items}, Dumper=yaml.CSafeDumper)


#: The CEL variant: every third Placement selects by a score threshold and a label.
CEL_EXPRESSIONS = (
    "managedCluster.scores('score-0').exists(s, s.name == 'item-0' && s.value > -90)",
    "managedCluster.metadata.labels['tier'] != 'excluded'",
)


def _predicates(p: int, with_cel: bool) -> list[dict[str, object]]:
    if not with_cel or p % 3:
        return []
    return [{"requiredClusterSelector": {"celSelector": {"celExpressions": list(CEL_EXPRESSIONS)}}}]


def placements(count: int, *, with_cel: bool = False) -> list[Placement]:
    return [
        Placement.model_validate(
            {
                "apiVersion": "cluster.open-cluster-management.io/v1beta1",
                "kind": "Placement",
                "metadata": {"name": f"p{p}", "namespace": "default"},
                "spec": {
                    "predicates": _predicates(p, with_cel),
                    "numberOfClusters": 3,
                    "prioritizerPolicy": {
                        "mode": "Exact",
                        "configurations": [
                            {
                                "scoreCoordinate": {
                                    "type": "AddOn",
                                    "addOn": {
                                        "resourceName": f"score-{s}",
                                        "scoreName": f"item-{(p + s) % ITEMS}",
                                    },
                                },
                                "weight": 1 + (p + s) % 3,
                            }
                            for s in range(SCORES)
                        ],
                    },
                },
            }
        )
        for p in range(count)
    ]


def measure(
    clusters_count: int, placement_count: int, *, with_cel: bool = False
) -> dict[str, float]:
    """Seconds to load the snapshot with the C loader, to read it, to schedule every Placement.

    ``with_cel``: a third of the Placements also select by CEL (compiled once per
    expression, evaluated per cluster).
    """
    from dsf_compile.inputs.placements import ManagedClusterSetBinding

    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": "cluster.open-cluster-management.io/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    clusters = [Cluster(f"cluster-{c:05d}", labels={"tier": "gold"}) for c in range(clusters_count)]
    chosen = placements(placement_count, with_cel=with_cel)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scores.yaml"
        text = snapshot_text(clusters_count)
        path.write_text(text)
        started = time.perf_counter()
        yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        floor = time.perf_counter() - started
        started = time.perf_counter()
        scores = read_scores(str(path))
        loaded = time.perf_counter() - started
        started = time.perf_counter()
        index = ScoreIndex.of(scores)  # as explain does: once for every Placement
        results = [schedule(p, clusters, [binding], index, (), AT) for p in chosen]
        scheduled = time.perf_counter() - started
    assert all(len(r.decisions) == min(3, clusters_count) for r in results)
    return {"floor": floor, "read": loaded, "schedule": scheduled, "kib": len(text) / 1024}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--placements", type=int, default=100)
    parser.add_argument("--cel", action="store_true", help="a third of the Placements use CEL")
    args = parser.parse_args(argv)
    figures = measure(args.clusters, args.placements, with_cel=args.cel)
    floor, loaded, scheduled = figures["floor"], figures["read"], figures["schedule"]
    total = loaded + scheduled
    print(
        f"{args.clusters} clusters × {args.placements} Placements × {SCORES} AddOn coordinates "
        f"({figures['kib']:.0f} KiB snapshot)"
    )
    rows = [
        ("baseline: PyYAML C loader on the snapshot", floor, 1.0),
        ("explain: read the snapshot (located, validated)", loaded, loaded / floor),
        ("explain: schedule every Placement", scheduled, scheduled / floor),
        ("explain: total", total, total / floor),
    ]
    print(f"{'what':<52} {'seconds':>9} {'× baseline':>11}")
    for name, seconds, ratio in rows:
        print(f"{name:<52} {seconds:>9.3f} {ratio:>11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
