"""``explain --verify`` against an emulated hub (a real HTTP server, the real kubernetes client).

The hub holds Placements, ManagedClusters, a ManagedClusterSet and its binding,
AddOnPlacementScores and the PlacementDecisions OCM would have written; one Placement's
decisions are then made to drift, and ``--verify`` must name exactly that one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.agent.agent_fakes import FakeKube

GROUP = "cluster.open-cluster-management.io"
AT = "2026-11-22T10:00:00Z"
GOLD = "managedCluster.metadata.labels['tier'] == 'gold'"


def cluster(name: str, tier: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {"tier": tier}, "resourceVersion": "7"},
        "spec": {"hubAcceptsClient": True},
        "status": {"allocatable": {"cpu": "4"}, "capacity": {"cpu": "4"}},
    }


def cluster_set(name: str, label_selector: dict[str, Any] | None) -> dict[str, Any]:
    """A ManagedClusterSet: by label selector, or (None) by the exclusive cluster-set label."""
    selector: dict[str, Any] = (
        {"selectorType": "ExclusiveClusterSetLabel"}
        if label_selector is None
        else {"selectorType": "LabelSelector", "labelSelector": label_selector}
    )
    return {
        "apiVersion": f"{GROUP}/v1beta2",
        "kind": "ManagedClusterSet",
        "metadata": {"name": name},
        "spec": {"clusterSelector": selector},
    }


def placement(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    # as the hub serves it: defaults filled in, status present
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Placement",
        "metadata": {"name": name, "namespace": "default", "generation": 1, "uid": "u-" + name},
        "spec": {
            "decisionStrategy": {"groupStrategy": {"clustersPerDecisionGroup": "100%"}},
            "prioritizerPolicy": {"mode": "Additive"},
            "spreadPolicy": {},
            **spec,
        },
        "status": {"numberOfSelectedClusters": 1},
    }


def decision(placement_name: str, index: int, clusters: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "PlacementDecision",
        "metadata": {
            "name": f"{placement_name}-decision-{index}",
            "namespace": "default",
            "labels": {
                f"{GROUP}/placement": placement_name,
                f"{GROUP}/decision-group-name": "",
                f"{GROUP}/decision-group-index": "0",
            },
        },
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    }


def score(cluster_name: str, value: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"name": "gpu-score", "namespace": cluster_name},
        "status": {"scores": [{"name": "gpu", "value": value}]},
    }


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[FakeKube, Path]]:
    fake = FakeKube().start()
    for name, tier in (("a", "gold"), ("b", "gold"), ("c", "bronze")):
        fake.put("managedclusters", "", cluster(name, tier))
    # the set OCM creates: a LabelSelector set with an empty selector holds every cluster
    fake.put("managedclustersets", "", cluster_set("global", {}))
    fake.put(
        "managedclustersetbindings",
        "default",
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        },
    )
    for name, value in (("a", 10), ("b", 90), ("c", 50)):
        fake.put("addonplacementscores", name, score(name, value))
    gold = {"celSelector": {"celExpressions": [GOLD]}}
    fake.put(
        "placements",
        "default",
        placement("gold", {"predicates": [{"requiredClusterSelector": gold}]}),
    )
    best = {
        "numberOfClusters": 1,
        "prioritizerPolicy": {
            "mode": "Exact",
            "configurations": [
                {
                    "scoreCoordinate": {
                        "type": "AddOn",
                        "addOn": {"resourceName": "gpu-score", "scoreName": "gpu"},
                    },
                    "weight": 1,
                }
            ],
        },
    }
    fake.put("placements", "default", placement("best", best))
    # what OCM wrote: gold picks a and b; best picks b (score 90)
    fake.put("placementdecisions", "default", decision("gold", 1, ["a", "b"]))
    fake.put("placementdecisions", "default", decision("best", 1, ["b"]))
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(fake.kubeconfig())
    yield fake, kubeconfig
    fake.stop()


def verify(kubeconfig: Path, tmp_path: Path, *names: str) -> subprocess.CompletedProcess[str]:
    # the command as a user runs it; an empty --root: nothing is read from Git
    root = tmp_path / "empty"
    root.mkdir(exist_ok=True)
    return subprocess.run(
        [
            sys.executable, "-m", "dsf_compile", "--root", str(root), "explain", "--verify",
            "--hub-kubeconfig", str(kubeconfig), "--at", AT, *names,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip


def test_a_hub_that_agrees(hub: tuple[FakeKube, Path], tmp_path: Path) -> None:
    fake, kubeconfig = hub
    before = len(fake.server.taken())
    done = verify(kubeconfig, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert done.stderr == "dsf-compile: 2 Placements agree with the hub's decisions\n"
    assert {r.method for r in fake.server.taken()[before:]} == {"GET"}  # list only


def test_verify_names_exactly_the_drifted_placement(
    hub: tuple[FakeKube, Path], tmp_path: Path
) -> None:
    fake, kubeconfig = hub
    # the hub's scheduler has not caught up: b's score fell, OCM's decision did not move
    fake.put("addonplacementscores", "b", score("b", 20))
    done = verify(kubeconfig, tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout == (
        "placement default/best differs from the hub:\n"
        "  the replay decides c; the hub's decisions hold b\n"
        "  PlacementDecision best-decision-1: replay group 0 (unnamed): c; "
        "hub group 0 (unnamed): b\n"
    )
    assert done.stderr == "dsf-compile: 1 of 2 Placements differ from the hub's decisions\n"
    # naming only the other Placement: it agrees
    assert verify(kubeconfig, tmp_path, "default/gold").returncode == 0


def test_a_missing_decision_object_is_a_difference(
    hub: tuple[FakeKube, Path], tmp_path: Path
) -> None:
    fake, kubeconfig = hub
    fake.delete("placementdecisions", "default", "gold-decision-1")
    done = verify(kubeconfig, tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("placement default/gold differs from the hub:\n")
    assert (
        "PlacementDecision gold-decision-1: replay group 0 (unnamed): a, b; hub none" in done.stdout
    )
    assert "default/best" not in done.stdout


def test_cluster_sets_are_the_hubs(hub: tuple[FakeKube, Path], tmp_path: Path) -> None:
    # sdk-go GetClustersFromClusterSet: a LabelSelector set holds what its selector
    # matches; GetValidManagedClusterSetBindings: a binding of a missing set is ignored
    fake, kubeconfig = hub
    fake.put("managedclustersets", "", cluster_set("bronze", {"matchLabels": {"tier": "bronze"}}))
    for name in ("bronze", "ghost"):
        fake.put(
            "managedclustersetbindings",
            "default",
            {
                "apiVersion": f"{GROUP}/v1beta2",
                "kind": "ManagedClusterSetBinding",
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"clusterSet": name},
            },
        )
    fake.put("placements", "default", placement("bronze", {"clusterSets": ["bronze", "ghost"]}))
    fake.put("placementdecisions", "default", decision("bronze", 1, ["c"]))
    assert verify(kubeconfig, tmp_path, "default/bronze").returncode == 0
    fake.put("placementdecisions", "default", decision("bronze", 1, ["a", "c"]))
    done = verify(kubeconfig, tmp_path, "default/bronze")
    assert done.returncode == 1
    assert "the replay decides c; the hub's decisions hold a, c" in done.stdout


def test_verify_needs_a_hub(tmp_path: Path) -> None:
    root = tmp_path / "empty"
    root.mkdir()
    # no --hub-kubeconfig, no $KUBECONFIG, no ~/.kube/config: kubectl's places, all empty
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), "explain", "--verify"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**env, "HOME": str(tmp_path / "home")},
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "hub: ~/.kube/config is not usable" in done.stderr


def frozen_placement() -> dict[str, Any]:
    """A Placement OCM does not schedule (the annotation): its decisions stay as they are."""
    frozen = placement("frozen", {"numberOfClusters": 1})
    frozen["metadata"]["annotations"] = {f"{GROUP}/experimental-scheduling-disable": "true"}
    return frozen


def test_a_placement_not_simulated_is_not_counted_as_agreeing(
    hub: tuple[FakeKube, Path], tmp_path: Path
) -> None:
    # the replay of a Placement OCM does not schedule is the hub's own decisions: it
    # proves nothing, so it is named and counted apart, never as agreeing
    fake, kubeconfig = hub
    fake.put("placements", "default", frozen_placement())
    fake.put("placementdecisions", "default", decision("frozen", 1, ["c"]))
    done = verify(kubeconfig, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "dsf-compile: warning: placement default/frozen not compared: not scheduled: the "
        f'annotation {GROUP}/experimental-scheduling-disable: "true" keeps OCM from '
        "scheduling this Placement; its existing decisions stay",
        "dsf-compile: 2 Placements agree with the hub's decisions; 1 not simulated, not compared",
    ]
    # asked for that one alone, nothing is verified: exit 2, not "1 Placement agrees"
    alone = verify(kubeconfig, tmp_path, "default/frozen")
    assert alone.returncode == 2, alone.stderr
    assert alone.stderr.splitlines()[-1] == (
        "dsf-compile: no Placement could be compared with the hub's decisions; "
        "1 not simulated, not compared"
    )
    # a difference elsewhere still reads as one of the compared ones
    fake.put("addonplacementscores", "b", score("b", 20))
    drifted = verify(kubeconfig, tmp_path)
    assert drifted.returncode == 1
    assert drifted.stderr.splitlines()[-1] == (
        "dsf-compile: 1 of 2 Placements differ from the hub's decisions; "
        "1 not simulated, not compared"
    )


def test_an_unreadable_placement_is_named_as_such_not_as_missing(
    hub: tuple[FakeKube, Path], tmp_path: Path
) -> None:
    fake, kubeconfig = hub
    broken = placement("broken", {"numberOfClusters": -1})
    fake.put("placements", "default", broken)
    done = verify(kubeconfig, tmp_path, "default/broken")
    assert done.returncode == 2, done.stderr
    assert "not on the hub" not in done.stderr
    assert done.stderr.splitlines() == [
        "dsf-compile: error: the hub's Placement default/broken cannot be read, not compared: "
        "spec.numberOfClusters: must be >= 0",
        "dsf-compile: no Placement could be compared with the hub's decisions; "
        "1 unreadable, not compared",
    ]
    # beside Placements that agree, the run still cannot say the hub was verified
    everything = verify(kubeconfig, tmp_path)
    assert everything.returncode == 2
    assert everything.stderr.splitlines()[-1] == (
        "dsf-compile: 2 Placements agree with the hub's decisions; 1 unreadable, not compared"
    )
    # a name the hub does not list at all is still a usage error saying so
    missing = verify(kubeconfig, tmp_path, "default/nowhere")
    assert missing.returncode == 2
    assert "no Placement default/nowhere on the hub" in missing.stderr


def test_each_decision_is_read_once_for_every_placement(monkeypatch: pytest.MonkeyPatch) -> None:
    # 100 Placements × 100,000 decisions took a minute when every Placement filtered every
    # decision: now the index reads each decision's placement label once per run
    from datetime import UTC, datetime

    from bench.hub_bench import VERIFY_CLUSTERS, verify_objects
    from dsf_compile.hubread.state import validated_objects
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, PlacementDecision
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.scheduler import ScoreIndex, schedule
    from dsf_compile.placement.verify import Outcome, hub_cluster, hub_placement, verdict

    objects = verify_objects(30, 3000)
    problems: list[str] = []
    decisions = validated_objects(PlacementDecision, objects["decisions"], problems)
    assert not problems and len(decisions) == 3000
    clusters = [hub_cluster(cluster(f"c-{c:02d}", "gold")) for c in range(VERIFY_CLUSTERS)]
    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    reads = 0
    label = PlacementDecision.placement_name

    def counted(self: PlacementDecision) -> str | None:
        nonlocal reads
        reads += 1
        return label.fget(self)  # type: ignore[attr-defined]

    monkeypatch.setattr(PlacementDecision, "placement_name", property(counted))
    at = datetime(2026, 11, 22, tzinfo=UTC)
    index, scores = DecisionIndex.of(decisions), ScoreIndex.of(())
    outcomes = {
        verdict(schedule(hub_placement(p), clusters, [binding], scores, index, at), index).outcome
        for p in objects["placements"]
    }
    assert outcomes == {Outcome.AGREE}
    assert reads == len(decisions)


def test_balance_reads_the_same_counts_from_the_index() -> None:
    # Balance scores a cluster by the decisions of every *other* Placement
    from datetime import UTC, datetime

    from dsf_compile.inputs.placements import (
        ManagedClusterSetBinding,
        Placement,
        PlacementDecision,
    )
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.scheduler import ScoreIndex, schedule
    from dsf_compile.placement.verify import hub_cluster, hub_placement

    clusters = [hub_cluster(cluster(n, "gold")) for n in ("a", "b", "c")]
    binding = ManagedClusterSetBinding.model_validate(
        {
            "apiVersion": f"{GROUP}/v1beta2",
            "kind": "ManagedClusterSetBinding",
            "metadata": {"name": "global", "namespace": "default"},
            "spec": {"clusterSet": "global"},
        }
    )
    decisions = [
        PlacementDecision.model_validate(decision(owner, 1, picked))
        for owner, picked in (("other", ["a", "a", "b"]), ("mine", ["c"]), ("third", ["a"]))
    ]
    mine: Placement = hub_placement(
        placement(
            "mine",
            {
                "numberOfClusters": 1,
                "prioritizerPolicy": {
                    "mode": "Exact",
                    "configurations": [{"scoreCoordinate": {"builtIn": "Balance"}, "weight": 1}],
                },
            },
        )
    )
    at = datetime(2026, 11, 22, tzinfo=UTC)
    scores = ScoreIndex.of(())
    plain = schedule(mine, clusters, [binding], scores, decisions, at)
    indexed = schedule(mine, clusters, [binding], scores, DecisionIndex.of(decisions), at)
    assert plain == indexed
    assert [p.scores for p in indexed.prioritizers if p.name == "Balance"] == [
        {"a": -100, "b": 32, "c": 100}
    ]


def test_verify_json_is_one_document_ok_only_when_the_hub_agrees(
    hub: tuple[FakeKube, Path], tmp_path: Path
) -> None:
    fake, kubeconfig = hub
    done = verify(kubeconfig, tmp_path, "--format", "json")
    assert (done.returncode, done.stderr) == (0, "")
    document = json.loads(done.stdout)
    assert document["ok"] is True
    assert [(p["placement"], p["outcome"]) for p in document["placements"]] == [
        ("default/best", "agrees"),
        ("default/gold", "agrees"),
    ]
    fake.put("addonplacementscores", "b", score("b", 20))
    done = verify(kubeconfig, tmp_path, "--format", "json")
    assert (done.returncode, done.stderr) == (1, "")
    document = json.loads(done.stdout)
    assert document["ok"] is False
    (drift,) = [p for p in document["placements"] if p["outcome"] == "differs"]
    assert drift["placement"] == "default/best"
    assert "the replay decides c; the hub's decisions hold b" in drift["lines"]
    assert document["summary"] == "1 of 2 Placements differ from the hub's decisions"


def test_verify_finds_the_hub_as_kubectl_does(hub: tuple[FakeKube, Path], tmp_path: Path) -> None:
    _, kubeconfig = hub
    root = tmp_path / "empty"
    root.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    argv = [sys.executable, "-m", "dsf_compile", "--root", str(root), "explain", "--verify"]
    for extra, variables in (
        ((), {"KUBECONFIG": str(kubeconfig)}),
        (("--context", "fake"), {"KUBECONFIG": str(kubeconfig)}),
        (("--hub-kubeconfig", str(kubeconfig)), {"KUBECONFIG": str(tmp_path / "missing")}),
    ):
        done = subprocess.run(
            [*argv, *extra, "--at", AT],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**env, **variables},
        )
        assert done.returncode == 0, (extra, done.stderr)
        assert done.stderr == "dsf-compile: 2 Placements agree with the hub's decisions\n"
