"""Scores and decisions read from snapshot files and folders, and, list-only, from a hub."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from dsf_compile.edges.hub import HubAccess
from dsf_compile.errors import InputError
from dsf_compile.hubread import state as hub_state
from dsf_compile.hubread.state import read_decisions, read_hub, read_scores
from dsf_compile.inputs import load
from dsf_compile.inputs.settings import HubSettings
from tests.agent.agent_fakes import FakeKube

# What `kubectl get addonplacementscores -A -o yaml` prints: server-set metadata included.
KUBECTL_SCORES = """\
apiVersion: v1
items:
- apiVersion: cluster.open-cluster-management.io/v1alpha1
  kind: AddOnPlacementScore
  metadata:
    creationTimestamp: "2026-11-21T10:00:00Z"
    labels:
      app.kubernetes.io/managed-by: dsf-agent
    name: example-performance-score
    namespace: worker01
    resourceVersion: "4711"
    uid: 0b5e4c1a-0000-0000-0000-000000000001
  status:
    scores:
    - name: app01;3g.48gb
      value: 70
    validUntil: "2026-11-23T10:00:00Z"
- apiVersion: cluster.open-cluster-management.io/v1alpha1
  kind: AddOnPlacementScore
  metadata:
    name: example-performance-score
    namespace: worker02
  status:
    scores:
    - name: app01;3g.48gb
      value: 85
kind: List
metadata:
  resourceVersion: ""
"""

DECISION = {
    "apiVersion": "cluster.open-cluster-management.io/v1beta1",
    "kind": "PlacementDecision",
    "metadata": {
        "name": "gpu-inference-decision-1",
        "namespace": "default",
        "labels": {"cluster.open-cluster-management.io/placement": "gpu-inference"},
    },
    "status": {"decisions": [{"clusterName": "worker02", "reason": ""}]},
}


def test_kubectl_output_is_read_with_its_server_metadata(tmp_path: Path) -> None:
    (tmp_path / "scores.yaml").write_text(KUBECTL_SCORES)
    scores = read_scores(str(tmp_path / "scores.yaml"))
    assert [(s.metadata.namespace, [i.value for i in s.status.scores]) for s in scores] == [
        ("worker01", [70]),
        ("worker02", [85]),
    ]
    assert scores[0].status.validUntil == datetime(2026, 11, 23, 10, tzinfo=UTC)


def test_a_folder_holds_yaml_and_json_at_any_depth(tmp_path: Path) -> None:
    folder = tmp_path / "decisions"
    (folder / "hub-a" / "default").mkdir(parents=True)
    # `kubectl get placementdecisions -A -o json`, saved as it comes
    (folder / "hub-a" / "default" / "decisions.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "List", "items": [DECISION]})
    )
    (folder / "README.md").write_text("refreshed nightly")
    (folder / ".gitkeep").write_text("")
    decisions = read_decisions(str(folder))
    assert [(d.placement_name, d.status.decisions[0].clusterName) for d in decisions] == [
        ("gpu-inference", "worker02")
    ]


def test_a_snapshot_may_be_larger_than_a_hand_written_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Inputs in Git are capped; a hub's scores are not hand-written and grow with the fleet.
    monkeypatch.setattr(load, "MAX_FILE_BYTES", 256)
    (tmp_path / "scores.yaml").write_text(KUBECTL_SCORES)
    assert len(KUBECTL_SCORES) > 256
    assert len(read_scores(str(tmp_path / "scores.yaml"))) == 2
    monkeypatch.setattr(hub_state, "MAX_SNAPSHOT_BYTES", 256)
    with pytest.raises(InputError) as caught:
        read_scores(str(tmp_path / "scores.yaml"))
    assert caught.value.problems[0].message == "file is larger than 0 MiB"


def test_one_object_in_two_snapshots_is_an_error_naming_both(tmp_path: Path) -> None:
    (tmp_path / "scores").mkdir()
    (tmp_path / "scores" / "monday.yaml").write_text(KUBECTL_SCORES)
    (tmp_path / "scores" / "tuesday.yaml").write_text(
        KUBECTL_SCORES.replace("value: 85", "value: 5")
    )
    with pytest.raises(InputError) as caught:
        read_scores(str(tmp_path / "scores"))
    assert [p.format() for p in caught.value.problems] == [
        "scores/tuesday.yaml:9:5: error: items[0].metadata.name: AddOnPlacementScore "
        "worker01/example-performance-score is also in scores/monday.yaml:9; keep one snapshot of it",
        "scores/tuesday.yaml:21:5: error: items[1].metadata.name: AddOnPlacementScore "
        "worker02/example-performance-score is also in scores/monday.yaml:21; keep one snapshot of it",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            KUBECTL_SCORES.replace("value: 85", "value: 850"),
            "26:7: error: items[1].status.scores[0].value: must be <= 100",
        ),
        (
            KUBECTL_SCORES.replace(
                "  kind: AddOnPlacementScore\n  metadata:\n    name",
                "  kind: Placement\n  metadata:\n    name",
            ),
            "19:3: error: items[1].kind: must be AddOnPlacementScore (or a List of them)",
        ),
    ],
    ids=["value-out-of-range", "another-kind-in-the-list"],
)
def test_a_bad_snapshot_is_a_located_error(tmp_path: Path, text: str, expected: str) -> None:
    (tmp_path / "scores.yaml").write_text(text)
    with pytest.raises(InputError) as caught:
        read_scores(str(tmp_path / "scores.yaml"))
    assert [p.format() for p in caught.value.problems] == [f"{tmp_path}/scores.yaml:{expected}"]


def test_an_empty_folder_and_an_empty_list(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError) as caught:
        read_scores(str(tmp_path / "empty"))
    assert caught.value.problems[0].message == "holds no .yaml, .yml or .json file"
    # a client that prints an empty list as `items: null`
    (tmp_path / "none.yaml").write_text("apiVersion: v1\nkind: List\nitems:\n")
    assert read_scores(str(tmp_path / "none.yaml")) == ()


# --------------------------------------------------------------------------- hub


@pytest.fixture
def hub() -> Iterator[FakeKube]:
    fake = FakeKube().start()
    yield fake
    fake.stop()


def _score(cluster: str, value: int) -> dict[str, object]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"name": "example-performance-score", "namespace": cluster},
        "status": {"scores": [{"name": "app01;3g.48gb", "value": value}]},
    }


def test_a_hub_is_listed_in_pages(hub: FakeKube, tmp_path: Path) -> None:
    for index in range(5):
        hub.put("addonplacementscores", f"worker{index:02d}", _score(f"worker{index:02d}", index))
    hub.put("placementdecisions", "default", DECISION)
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(hub.kubeconfig())
    before = len(hub.server.taken())

    state = read_hub(HubAccess(str(kubeconfig)), HubSettings(pageSize=2))

    assert state.scores is not None
    assert [s.status.scores[0].value for s in state.scores] == [0, 1, 2, 3, 4]
    assert [d.placement_name for d in state.decisions] == ["gpu-inference"]
    asked = hub.server.taken()[before:]
    assert {r.method for r in asked} == {"GET"}
    pages = [r.query for r in asked if r.path.endswith("/addonplacementscores")]
    assert [(q["limit"], q.get("continue")) for q in pages] == [
        (["2"], None),
        (["2"], ["2"]),
        (["2"], ["4"]),
    ]


def test_a_link_named_on_the_command_line_is_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "dated").mkdir()
    (tmp_path / "dated" / "scores-2026-11-22.yaml").write_text(KUBECTL_SCORES)
    (tmp_path / "latest.yaml").symlink_to("dated/scores-2026-11-22.yaml")
    (tmp_path / "current").symlink_to("dated")
    assert len(read_scores("latest.yaml")) == 2
    assert len(read_scores("current")) == 2
    # inside a snapshot folder, a link is still refused (it could lead anywhere)
    (tmp_path / "dated" / "again.yaml").symlink_to("scores-2026-11-22.yaml")
    with pytest.raises(InputError) as caught:
        read_scores("current")
    assert [p.format() for p in caught.value.problems] == [
        "dated/again.yaml:0:0: error: must be a regular file or folder, not a link"
    ]
