"""What the hub holds and how often the agents write to it, for a fleet of 10,000 clusters.

    python bench/hub_bench.py [--clusters 10000] [--sample 100] [--scorers 100]

Renders ``--sample`` clusters of the generated fleet of ``render_bench`` (100 scorers, half
every 30 s and half every 60 s, GPU scorers masked off two clusters in three) with the
whole ``dsf-compile render`` command, measures every rendered object as the hub stores a
custom resource (compact JSON), and scales the per-cluster figures to ``--clusters`` — a
cluster's objects do not depend on the size of the fleet. The AddOnPlacementScores are
built by the agent's own code (:mod:`agent.publish`) for 1 to 10,000 items, with the
metadata and ``managedFields`` the API server adds (computed by its rules: no API server
runs here). The write rate is the scorers' cycles per second times the status writes per
cycle that ``python bench/agent_bench.py`` measures against the emulated hub (0.5 when
scores do not change, 1 when they change every cycle).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.dimensions import StatusScore  # noqa: E402
from agent.publish import (  # noqa: E402
    MAX_STORED_BYTES,
    placement_score_object,
    placement_score_status,
    scores_condition,
    stored_size,
)
from bench.render_bench import generate_fleet, render_command  # noqa: E402
from dsf_contract.scores import CONDITION_TYPE  # noqa: E402

MIB = 1024 * 1024
#: etcd's default backend quota, and its default largest request (``--max-request-bytes``)
ETCD_QUOTA = 2 * 1024 * MIB
ETCD_REQUEST = int(1.5 * MIB)
#: the API server compacts etcd's history every 5 minutes by default
COMPACTION_SECONDS = 300
#: status writes per cycle (bench/agent_bench.py's "hub: status writes per cycle")
WRITES_UNCHANGED, WRITES_CHANGING = 0.5, 1.0
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def compact(document: Any) -> int:
    """Bytes of ``document`` as compact JSON (how etcd holds a custom resource)."""
    return len(json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode())


def stored_metadata(name: str, namespace: str) -> dict[str, Any]:
    """What the API server adds to an object's metadata, at its usual sizes."""
    return {
        "name": name,
        "namespace": namespace,
        "uid": "0b5e4a52-7f6c-4c55-9a4b-1f2e3d4c5b6a",
        "resourceVersion": "123456789",
        "generation": 1,
        "creationTimestamp": "2026-11-23T00:00:00Z",
    }


def placement_score_stored(items: int) -> tuple[int, int]:
    """Bytes of an AddOnPlacementScore holding ``items`` items as etcd stores it, and the
    agent's estimate of them (:func:`agent.publish.stored_size`). Item names follow the generated fleet's ``${node};${namespace};${pod}``."""
    now = datetime(2026, 11, 23, tzinfo=UTC)
    names = [
        f"node-{i % 500:03d};namespace-{i % 40:02d};pod-{i:05d}-7d9f8b6c5d" for i in range(items)
    ]
    status = placement_score_status(
        [StatusScore(name, (i % 201) - 100) for i, name in enumerate(sorted(names))],
        now=now,
        interval=30,
    )
    status["conditions"] = [
        scores_condition(
            ok=True,
            reason="ScoresPublished",
            message="the last scoring cycle succeeded",
            now=now,
            previous=None,
        )
    ]
    obj = placement_score_object("cpu-001-score", "cluster-0001", status=status)
    obj["metadata"] = {**stored_metadata("cpu-001-score", "cluster-0001"), **obj["metadata"]}
    # managedFields: the create (labels) and the status writes, a list-map keyed by name
    scores_fields: dict[str, Any] = {".": {}}
    for item in status["scores"]:
        key = "k:" + json.dumps({"name": item["name"]}, separators=(",", ":"))
        scores_fields[key] = {".": {}, "f:name": {}, "f:value": {}}
    condition = "k:" + json.dumps({"type": CONDITION_TYPE}, separators=(",", ":"))
    common = {
        "manager": "OpenAPI-Generator",
        "operation": "Update",
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "time": "2026-11-23T00:00:00Z",
        "fieldsType": "FieldsV1",
    }
    obj["metadata"]["managedFields"] = [
        {
            **common,
            "fieldsV1": {
                "f:metadata": {"f:labels": {".": {}, "f:app.kubernetes.io/managed-by": {}}}
            },
        },
        {
            **common,
            "subresource": "status",
            "fieldsV1": {
                "f:status": {
                    ".": {},
                    "f:conditions": {
                        ".": {},
                        condition: {
                            ".": {},
                            "f:lastTransitionTime": {},
                            "f:message": {},
                            "f:reason": {},
                            "f:status": {},
                            "f:type": {},
                        },
                    },
                    "f:scores": scores_fields,
                    "f:validUntil": {},
                }
            },
        },
    ]
    return compact(obj), stored_size(status)


def measure_rendered(sample: int, scorers: int) -> dict[str, Any]:
    """Per-cluster bytes of each rendered kind, the AddOnPlacementScores each cluster's
    agent keeps, and their cycles per second."""
    with tempfile.TemporaryDirectory(prefix="dsf-bench-hub-") as tmp:
        root = Path(tmp)
        generate_fleet(root, sample, scorers)
        render_command(root)
        kinds: dict[str, list[int]] = {}
        scores_per_cluster: list[int] = []
        cycles_per_second = 0.0
        for path in sorted((root / "rendered").rglob("*.yaml")):
            if path.name == "kustomization.yaml":
                continue
            for document in yaml.load_all(path.read_text(), Loader=_LOADER):
                if not isinstance(document, dict):
                    continue
                scope = "cluster" if "clusters" in path.relative_to(root).parts else "hub"
                kinds.setdefault(f"{scope}:{document.get('kind')}", []).append(compact(document))
                if document.get("kind") == "ManifestWork":
                    summaries = _summaries(document)
                    published = [
                        s for s in summaries if s["scoreDestination"] == "AddOnPlacementScore"
                    ]
                    scores_per_cluster.append(len(published))
                    cycles_per_second += sum(1 / s["scoringInterval"] for s in published)
    return {
        "kinds": kinds,
        "clusters": sample,
        "scores": scores_per_cluster,
        "cycles_per_cluster": cycles_per_second / sample,
    }


def _summaries(manifestwork: dict[str, Any]) -> list[dict[str, Any]]:
    for manifest in manifestwork["spec"]["workload"]["manifests"]:
        if manifest.get("kind") == "ConfigMap" and "summaries" in manifest.get("data", {}):
            found: list[dict[str, Any]] = json.loads(manifest["data"]["summaries"])
            return found
    return []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--scorers", type=int, default=100)
    args = parser.parse_args()
    rendered = measure_rendered(args.sample, args.scorers)
    scale = args.clusters / rendered["clusters"]
    print(f"hub at {args.clusters:,} clusters × {args.scorers} scorers (measured on {args.sample})")
    print()
    print("| object | count | bytes each | total |")
    print("| --- | ---: | ---: | ---: |")
    total = 0.0
    for kind, sizes in sorted(rendered["kinds"].items()):
        scope, name = kind.split(":", 1)
        count = len(sizes) * (scale if scope == "cluster" else 1)
        size = sum(sizes) * (scale if scope == "cluster" else 1)
        total += size
        print(
            f"| {name} ({scope}) | {count:,.0f} | {min(sizes) / 1e3:.1f}–{max(sizes) / 1e3:.1f} kB "
            f"| {size / 1e6:,.1f} MB |"
        )
    objects = sum(rendered["scores"]) * scale
    print(f"| rendered, in all | | | {total / 1e6:,.1f} MB |")
    print()
    print(f"AddOnPlacementScores: {objects:,.0f} ({objects / args.clusters:.0f} per cluster)")
    print()
    print(
        "| items per object | stored bytes each | agent's estimate | all objects | under 1.5 MiB |"
    )
    print("| ---: | ---: | ---: | ---: | --- |")
    for items in (1, 10, 100, 1000, 5000, 10_000):
        stored, estimate = placement_score_stored(items)
        fits = "yes" if stored <= ETCD_REQUEST else "no"
        refused = " (refused by the agent)" if estimate > MAX_STORED_BYTES else ""
        print(
            f"| {items:,} | {stored / 1e3:,.1f} kB | {estimate / 1e3:,.1f} kB "
            f"| {stored * objects / 1e9:,.2f} GB | {fits}{refused} |"
        )
    cycles = rendered["cycles_per_cluster"] * args.clusters
    print()
    print(f"scoring cycles: {cycles:,.0f}/s across the fleet")
    stored, _ = placement_score_stored(10)
    for label, per_cycle in (("unchanged", WRITES_UNCHANGED), ("changing", WRITES_CHANGING)):
        writes = cycles * per_cycle
        history = writes * COMPACTION_SECONDS * stored
        print(
            f"- scores {label}: {writes:,.0f} status writes/s; between two compactions etcd "
            f"keeps {writes * COMPACTION_SECONDS / 1e6:,.1f} M revisions, {history / 1e9:,.1f} GB "
            f"at 10 items each (quota {ETCD_QUOTA / 2**30:.0f} GiB)"
        )
    print()
    print("clusters whose objects and write history fit in etcd's 2 GiB quota:")
    rendered_per_cluster = (
        sum(sum(sizes) for kind, sizes in rendered["kinds"].items() if kind.startswith("cluster:"))
        / rendered["clusters"]
    )
    scores = sum(rendered["scores"]) / rendered["clusters"]
    for items in (1, 10, 100):
        size, _ = placement_score_stored(items)
        fitting: list[float] = []
        for per_cycle in (WRITES_UNCHANGED, WRITES_CHANGING):
            history = rendered["cycles_per_cluster"] * per_cycle * COMPACTION_SECONDS * size
            fitting.append(ETCD_QUOTA / (rendered_per_cluster + scores * size + history))
        print(
            f"- {items} items per AddOnPlacementScore: {fitting[0]:,.0f} clusters with unchanged "
            f"scores, {fitting[1]:,.0f} when every score changes every cycle"
        )


if __name__ == "__main__":
    main()
