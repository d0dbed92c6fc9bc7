"""What the hub holds and how often the agents write to it, for a fleet of 10,000 clusters.

    python bench/hub_bench.py [--clusters 10000] [--sample 100] [--scorers 100]
    python bench/hub_bench.py --verify [--placements 100] [--decisions 100000]

Renders ``--sample`` clusters of the generated fleet of ``render_bench`` (100 scorers, half
every 30 s and half every 60 s, GPU scorers masked off two clusters in three) with the
whole ``dsf-compile render`` command, measures every rendered object as the hub stores a
custom resource (compact JSON), and scales the per-cluster figures to ``--clusters`` — a
cluster's objects do not depend on the size of the fleet. The AddOnPlacementScores are
built by the agent's own code (:mod:`agent.placement_score`) for 1 to 10,000 items, with the
metadata and ``managedFields`` the API server adds (computed by its rules: no API server
runs here). The write rate is the scorers' cycles per second times the status writes per
cycle that ``python bench/agent_bench.py`` measures against the emulated hub (0.5 when
scores do not change, 1 when they change every cycle).

``--verify`` times what ``explain --verify`` does with a hub's objects once they are read
(:func:`measure_verify`): index the PlacementDecisions, replay every Placement and compare
its decisions with the hub's, against the in-run baseline of validating the same
decisions as the hub read does (what every run pays anyway). Comparing each Placement
against every decision made 100 Placements × 100,000 decisions take about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from agent.placement_score import (  # noqa: E402
    MAX_STORED_BYTES,
    placement_score_object,
    placement_score_status,
    scores_condition,
    stored_size,
)
from bench.render_bench import generate_fleet, render_command  # noqa: E402
from dsf_contract.placement_scores import StatusScore  # noqa: E402
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
    agent's estimate of them (:func:`agent.placement_score.stored_size`). Item names follow the generated fleet's ``${node};${namespace};${pod}``."""
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


#: ``explain --verify``'s hub: clusters every Placement selects, decisions spread over them
VERIFY_CLUSTERS = 20
_GROUP = "cluster.open-cluster-management.io"


def _decision(placement: str, index: int, clusters: list[str]) -> dict[str, Any]:
    return {
        "metadata": {
            "name": f"{placement}-decision-{index}",
            "namespace": "default",
            "labels": {
                f"{_GROUP}/placement": placement,
                f"{_GROUP}/decision-group-name": "",
                f"{_GROUP}/decision-group-index": "0",
            },
        },
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def verify_objects(placements: int, decisions: int) -> dict[str, list[dict[str, Any]]]:
    """A hub's Placements and ``decisions`` PlacementDecisions as listed: each Placement's
    own (every cluster, as OCM decides it) and, for the rest, small decisions of
    Placements since deleted (one cluster each), which every Placement's replay must skip."""
    everyone = [f"c-{c:02d}" for c in range(VERIFY_CLUSTERS)]
    placement_items = [
        {"metadata": {"name": f"p-{p:04d}", "namespace": "default"}, "spec": {}}
        for p in range(placements)
    ]
    decision_items = [_decision(f"p-{p:04d}", 1, everyone) for p in range(placements)]
    decision_items += [
        _decision(f"gone-{d:06d}", 1, [everyone[d % VERIFY_CLUSTERS]])
        for d in range(max(0, decisions - placements))
    ]
    return {"placements": placement_items, "decisions": decision_items}


def measure_verify(placements: int, decisions: int) -> dict[str, float]:
    """Seconds to validate the decisions (the read's floor) and to verify every Placement."""
    from dsf_compile.hubread.state import validated_objects
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, PlacementDecision
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.scheduler import ScoreIndex, schedule
    from dsf_compile.placement.verify import Outcome, hub_cluster, hub_placement, verdict

    objects = verify_objects(placements, decisions)
    started = time.perf_counter()
    problems: list[str] = []
    decided = validated_objects(PlacementDecision, objects["decisions"], problems)
    read = time.perf_counter() - started
    assert not problems, problems[:3]
    clusters = [
        hub_cluster({"metadata": {"name": f"c-{c:02d}"}, "spec": {"hubAcceptsClient": True}})
        for c in range(VERIFY_CLUSTERS)
    ]
    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": f"{_GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    at = datetime(2026, 11, 22, tzinfo=UTC)
    started = time.perf_counter()
    index, scores = DecisionIndex.of(decided), ScoreIndex.of(())
    outcomes = [
        verdict(schedule(hub_placement(p), clusters, [binding], scores, index, at), index).outcome
        for p in objects["placements"]
    ]
    verify = time.perf_counter() - started
    assert set(outcomes) == {Outcome.AGREE}, outcomes[:3]
    return {"read": read, "verify": verify}


def verify_main(placements: int, decisions: int) -> None:
    """Print :func:`measure_verify`'s figures."""
    figures = measure_verify(placements, decisions)
    print(f"explain --verify: {placements:,} Placements × {decisions:,} PlacementDecisions")
    print(f"- validating the decisions (baseline): {figures['read']:.3f} s")
    print(
        f"- indexing, replaying and comparing: {figures['verify']:.3f} s "
        f"({figures['verify'] / figures['read']:.2f}× the baseline)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=100)
    parser.add_argument("--scorers", type=int, default=100)
    parser.add_argument("--verify", action="store_true", help="time explain --verify's work")
    parser.add_argument("--placements", type=int, default=100)
    parser.add_argument("--decisions", type=int, default=100_000)
    args = parser.parse_args()
    if args.verify:
        verify_main(args.placements, args.decisions)
        return
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
