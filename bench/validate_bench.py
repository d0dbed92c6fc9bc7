"""Validate at scale (``docs/benchmarks.md``): time must grow linearly with the input.

    python bench/validate_bench.py [--quick]

Two generated repositories, each validated at size N and 2N in one run, as whole
commands (``python -m dsf_compile validate`` in a child process, the package's bytecode
compiled as an install leaves it):

- a fleet: clusters × scorers × Placements (full: 10,000 × 100 × 1,000), every Placement
  ranking by two scorers' scores and selecting by labels; masks by label selector, by
  name glob, and one per tenth cluster naming it (upstream's form);
- optimizations: PlacementOptimizations whose clusters list 2,000 Policies in all (full),
  with their ManifestWorkReplicaSets.

The figure is the 2N time, the baseline the N time (CPU seconds of the child: see
:func:`validate_seconds`), the ratio their quotient: ≤ 2.5 per doubling means no
quadratic step. ``python -m bench`` imports :func:`rows`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent

REGIONS = ("eu-west", "us-east", "ap-south", "sa-east")
#: Best of this many runs of each command (the machine is shared: the minimum is the signal).
REPEAT = 2
TARGET = 2.5

_API = "dynamic-scoring.open-cluster-management.io/v1alpha1"
_CLUSTER_API = "cluster.open-cluster-management.io"


def _write_all(path: Path, documents: Iterator[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as out:
        yaml.dump_all(documents, out, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper))


def _scorer(index: int) -> dict[str, Any]:
    return {
        "apiVersion": _API,
        "kind": "DynamicScorer",
        "metadata": {"name": f"scorer-{index:04d}"},
        "spec": {
            "description": f"generated scorer {index}",
            "configURL": f"http://scorer-{index:04d}.scoring.svc:8000/config",
            "configSyncMode": "None",
            "scoreDestination": "AddOnPlacementScore",
            "scoreDimensionFormat": "${app};${device}",
            "source": {"type": "None"},
            "scoring": {
                "host": f"http://scorer-{index:04d}.scoring.svc:8000",
                "path": "/scoring",
                "params": {"name": f"score_{index:04d}", "interval": 60},
            },
        },
    }


def _cluster(index: int) -> dict[str, Any]:
    name = f"cluster-{index:05d}"
    return {
        "apiVersion": f"{_CLUSTER_API}/v1",
        "kind": "ManagedCluster",
        # OCM labels every cluster with its name: no two clusters have the same labels
        "metadata": {
            "name": name,
            "labels": {
                "name": name,
                "region": REGIONS[index % len(REGIONS)],
                "gpu": "true" if index % 3 == 0 else "false",
            },
        },
    }


def _placement(index: int, scorers: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{_CLUSTER_API}/v1beta1",
        "kind": "Placement",
        "metadata": {"name": f"placement-{index:05d}", "namespace": f"team-{index % 10}"},
        "spec": {
            "numberOfClusters": 3,
            "predicates": [
                {
                    "requiredClusterSelector": {
                        "labelSelector": {
                            "matchLabels": {"region": REGIONS[index % len(REGIONS)]},
                            "matchExpressions": [
                                {"key": "gpu", "operator": "In", "values": ["true"]}
                            ],
                        }
                    }
                }
            ],
            "prioritizerPolicy": {
                "mode": "Additive",
                "configurations": [
                    {
                        "scoreCoordinate": {
                            "type": "AddOn",
                            "addOn": {
                                "resourceName": f"score-{(index + k) % scorers:04d}",
                                "scoreName": f"app{index % 7};gpu",
                            },
                        },
                        "weight": 2,
                    }
                    for k in (0, 1)
                ],
            },
        },
    }


def _binding(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{_CLUSTER_API}/v1beta2",
        "kind": "ManagedClusterSetBinding",
        "metadata": {"name": "global", "namespace": namespace},
        "spec": {"clusterSet": "global"},
    }


def generate_fleet(root: Path, clusters: int, scorers: int, placements: int) -> None:
    """A fleet of ``clusters`` × ``scorers`` × ``placements`` that validates with warnings only."""
    _write_all(root / "scorers" / "scorers.yaml", (_scorer(i) for i in range(scorers)))
    _write_all(root / "clusters" / "inventory.yaml", (_cluster(i) for i in range(clusters)))
    masks = {
        "apiVersion": _API,
        "kind": "DynamicScoringConfig",
        "metadata": {"name": "dynamic-scoring-config"},
        "spec": {
            "masks": [
                {"clusterSelector": {"matchLabels": {"gpu": "false"}}, "scoreName": "score_00*"},
                {"clusterName": "cluster-0000*", "scoreName": "score_0001"},
                # upstream's form, one cluster and one score each: as many as a tenth of the fleet
                *(
                    {"clusterName": f"cluster-{i:05d}", "scoreName": f"score_{i % scorers:04d}"}
                    for i in range(0, clusters, 10)
                ),
            ]
        },
    }
    _write_all(root / "clusters" / "masks.yaml", iter([masks]))
    _write_all(
        root / "placements" / "placements.yaml",
        (_placement(i, scorers) for i in range(placements)),
    )
    _write_all(root / "placements" / "bindings.yaml", (_binding(f"team-{i}") for i in range(10)))


def generate_optimizations(root: Path, policies: int) -> None:
    """PlacementOptimizations whose clusters list ``policies`` Policies in all (10 per cluster)."""
    per_cluster, per_optimization = 10, 10
    clusters = policies // per_cluster
    _write_all(root / "scorers" / "scorers.yaml", iter([_scorer(0)]))
    _write_all(root / "clusters" / "inventory.yaml", (_cluster(i) for i in range(clusters)))
    objects: list[dict[str, Any]] = [_binding("default")]
    optimizations = []
    for first in range(0, clusters, per_optimization):
        number = first // per_optimization
        listed = []
        for c in range(first, min(first + per_optimization, clusters)):
            names = [f"policy-{c:05d}-{p}" for p in range(per_cluster)]
            listed.append({"name": f"cluster-{c:05d}", "availablePolicies": names})
            objects += [_policy(name, p) for p, name in enumerate(names)]
        workloads = [f"mwrs-{number:04d}-{w}" for w in range(3)]
        objects += [_workload(name) for name in workloads]
        optimizations.append(
            {
                "apiVersion": _API,
                "kind": "PlacementOptimization",
                "metadata": {"name": f"opt-{number:04d}", "namespace": "default"},
                "spec": {
                    "preference": {
                        "addOnPlacementScore": "score-0000",
                        "scoreDimensionFormat": "${app};${device}",
                    },
                    "clusters": listed,
                    "targetWorkloads": workloads,
                },
            }
        )
    _write_all(root / "placements" / "objects.yaml", iter(objects))
    _write_all(root / "placements" / "optimizations.yaml", iter(optimizations))


def _policy(name: str, index: int) -> dict[str, Any]:
    labels = {
        "resource-supply-kind": "gpu",
        "resource-supply-amount": str(index + 1),
        "resource-supply-device": f"dev{index}",
    }
    return {
        "apiVersion": "policy.open-cluster-management.io/v1",
        "kind": "Policy",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"disabled": False, "policy-templates": []},
    }


def _workload(name: str) -> dict[str, Any]:
    labels = {"app": name, "resource-request-kind": "gpu", "resource-request-amount": "1"}
    return {
        "apiVersion": "work.open-cluster-management.io/v1alpha1",
        "kind": "ManifestWorkReplicaSet",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"placementRefs": [{"name": f"{name}-placement"}], "manifestWorkTemplate": {}},
    }


def validate_seconds(root: Path) -> float:
    """CPU seconds (user + system) of ``python -m dsf_compile validate`` as a whole command.

    CPU time, not wall time: on a shared machine the wall time of the same command varies
    by 2× with the neighbours' load, which would drown the ratio this row is about. The
    best of REPEAT runs.
    """
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH", "")]))
    best = float("inf")
    for _ in range(REPEAT):
        with tempfile.TemporaryFile() as err:
            process = subprocess.Popen(
                [sys.executable, "-m", "dsf_compile", "--root", str(root), "validate"],
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
            _, status, usage = os.wait4(process.pid, 0)
            process.returncode = os.waitstatus_to_exitcode(status)  # reaped by wait4
            if process.returncode != 0:
                err.seek(0)
                raise SystemExit(f"validate exited {process.returncode}: {err.read()[-2000:]!r}")
        best = min(best, usage.ru_utime + usage.ru_stime)
    return best


def _doubling(generate: Callable[[Path, int], None]) -> tuple[float, float]:
    """Validate seconds of ``generate(root, 1)`` and ``generate(root, 2)`` (everything doubled)."""
    with tempfile.TemporaryDirectory(prefix="dsf-bench-validate-") as scratch:
        small, large = Path(scratch, "n"), Path(scratch, "2n")
        generate(small, 1)
        generate(large, 2)
        return validate_seconds(small), validate_seconds(large)


#: (clusters, scorers, Placements) of the fleet at N, and the Policies of the optimizations.
FULL = ((10_000, 100, 1_000), 2_000)
QUICK = ((40, 4, 4), 20)


def rows(*, quick: bool) -> list[tuple[str, str, str, str, float, str, bool]]:
    """``(what, workload, figure, baseline, ratio, target, met)`` of each row."""
    from bench.render_bench import compile_packages

    compile_packages()  # as an install leaves them
    (clusters, scorers, placements), policies = QUICK if quick else FULL
    fleet = _doubling(
        lambda root, k: generate_fleet(root, k * clusters, k * scorers, k * placements)
    )
    optimizations = _doubling(lambda root, k: generate_optimizations(root, k * policies))
    out = []
    for what, workload, (n, n2) in (
        ("validate (command), fleet", f"{clusters} clusters × {scorers} scorers × {placements} "
         "Placements, and all doubled", fleet),
        ("validate (command), optimizations", f"PlacementOptimizations referencing {policies} "
         "Policies, and doubled", optimizations),
    ):  # fmt: skip
        ratio = n2 / n
        out.append(
            (what, workload, f"2N {n2:.3f} s CPU", f"N {n:.3f} s CPU", ratio, f"≤ {TARGET}× per doubling",
             ratio <= TARGET)
        )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    for row in rows(quick=args.quick):
        print(" | ".join(str(cell) for cell in row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
