"""``explain --verify`` against an emulated hub (a real HTTP server, the real kubernetes client).

The hub holds Placements, ManagedClusters, a ManagedClusterSet and its binding,
AddOnPlacementScores and the PlacementDecisions OCM would have written; one Placement's
decisions are then made to drift, and ``--verify`` must name exactly that one.
"""

from __future__ import annotations

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
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), "explain", "--verify"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "--hub-kubeconfig" in done.stderr
