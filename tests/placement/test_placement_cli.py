"""Placements through the CLI: located errors and warnings, rendering, explain, decisions in a diff."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.fleet_repo import EXAMPLE_FLEET
from tests.placement.placement_repo import (
    AT,
    GPU_INFERENCE,
    GREEN_BATCH,
    add_cel,
    cli,
    digest,
    edit,
    write,
)

# ------------------------------------------------------------------ errors

Change = Callable[[Path], None]

ERROR_CASES: list[tuple[str, Change, str, str, str]] = [
    (
        "typo-in-resource-name",
        lambda r: edit(r, GPU_INFERENCE, "example-performance-score", "example-perfomance-score"),
        f"{GPU_INFERENCE}:23:",
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn.resourceName",
        "did you mean 'example-performance-score'?",
    ),
    (
        "unsanitized-score-name",
        lambda r: edit(r, GPU_INFERENCE, "example-performance-score", "example_performance_score"),
        f"{GPU_INFERENCE}:23:",
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn.resourceName",
        "AddOnPlacementScore names are sanitized score names: score 'example_performance_score' "
        "is published as 'example-performance-score'",
    ),
    (
        "item-the-format-never-produces",
        lambda r: edit(r, GPU_INFERENCE, "scoreName: app01;3g.48gb", "scoreName: cluster"),
        f"{GPU_INFERENCE}:24:",
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn.scoreName",
        "never produces an item 'cluster': its scoreDimensionFormat '${app};${device}' gives "
        "items like '<app>;<device>'",
    ),
    (
        "unknown-built-in",
        lambda r: edit(r, GREEN_BATCH, "builtIn: ResourceAllocatableCPU", "builtIn: Balanse"),
        f"{GREEN_BATCH}:26:",
        "spec.prioritizerPolicy.configurations[1].scoreCoordinate.builtIn",
        "'Balanse' is not a built-in prioritizer (did you mean 'Balance'?)",
    ),
    (
        "score-of-a-metrics-only-scorer",
        lambda r: edit(
            r,
            "scorers/static-scorers.yaml",
            "scoreDestination: AddOnPlacementScore",
            "scoreDestination: None",
        ),
        f"{GPU_INFERENCE}:23:",
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn.resourceName",
        "scorer 'example-performance-scorer' has scoreDestination None, so its scores go to "
        "metrics only; set scoreDestination: AddOnPlacementScore to publish them",
    ),
    (
        "cel-that-does-not-compile",
        lambda r: add_cel(r, "managedCluster.metadata.labels['gpu'] =="),
        f"{GPU_INFERENCE}:19:",
        "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]",
        "compilation failed: ERROR: <input>:1:",
    ),
    (
        "cel-reading-a-score-nobody-publishes",
        lambda r: add_cel(
            r, "managedCluster.scores('example-perfomance-score').exists(s, s.value > 50)"
        ),
        f"{GPU_INFERENCE}:19:",
        "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]",
        "no scorer publishes an AddOnPlacementScore named 'example-perfomance-score' "
        "(OCM would score every cluster 0 for it) (did you mean 'example-performance-score'?)",
    ),
    (
        "cel-that-is-not-boolean",
        lambda r: add_cel(r, "managedCluster.metadata.name"),
        f"{GPU_INFERENCE}:19:",
        "spec.predicates[0].requiredClusterSelector.celSelector.celExpressions[0]",
        "evaluates to string, not a bool",
    ),
    (
        "toleration-ocm-calls-misconfigured",
        lambda r: edit(
            r,
            GPU_INFERENCE,
            "  numberOfClusters: 1\n",
            "  numberOfClusters: 1\n  tolerations:\n    - operator: Equal\n      value: x\n",
        ),
        f"{GPU_INFERENCE}:11:",
        "spec.tolerations[0].operator",
        "a toleration without a key must use operator Exists (OCM reports the Placement misconfigured)",
    ),
    (
        "binding-not-named-after-its-set",
        lambda r: edit(r, "placements/bindings.yaml", "clusterSet: global", "clusterSet: gpus"),
        "placements/bindings.yaml:9:",
        "spec.clusterSet",
        "must equal metadata.name 'global'",
    ),
    (
        "weight-out-of-range",
        lambda r: edit(r, GREEN_BATCH, "weight: 2", "weight: 11"),
        f"{GREEN_BATCH}:23:",
        "spec.prioritizerPolicy.configurations[0].weight",
        "10",
    ),
    (
        "unknown-field-with-a-suggestion",
        lambda r: edit(r, GREEN_BATCH, "numberOfClusters: 1", "numberOfCluster: 1"),
        f"{GREEN_BATCH}:9:",
        "spec.numberOfCluster",
        "numberOfClusters",
    ),
    (
        "placement-without-namespace",
        lambda r: edit(r, GREEN_BATCH, "  namespace: default\n", ""),
        f"{GREEN_BATCH}:",
        "metadata.namespace",
        "",
    ),
    (
        "duplicate-placement",
        lambda r: write(r, "placements/again.yaml", (r / GREEN_BATCH).read_text()),
        f"{GREEN_BATCH}:6:",
        "metadata.name",
        "a second Placement default/green-batch (the first is placements/again.yaml:6;",
    ),
    (
        "kind-not-read-from-placements",
        lambda r: write(
            r,
            "placements/other.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n",
        ),
        "placements/other.yaml:2:",
        "kind",
        "'ConfigMap' is not read from placements/",
    ),
]


@pytest.mark.parametrize(
    ("change", "where", "field", "message"),
    [case[1:] for case in ERROR_CASES],
    ids=[case[0] for case in ERROR_CASES],
)
def test_a_bad_placement_is_a_located_error_and_nothing_is_written(
    fleet: Path, change: Change, where: str, field: str, message: str
) -> None:
    change(fleet)
    before = digest(fleet / "rendered")
    for command in (["validate"], ["render"]):
        code, _, err = cli(fleet, *command)
        assert code == 1, err
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if ": error: " in line]
        assert any(
            line.startswith(where) and f": error: {field}:" in line and message in line
            for line in lines
        ), err
    assert digest(fleet / "rendered") == before


# ---------------------------------------------------------------- warnings


def placement_warnings(err: str) -> list[str]:
    """The warnings about placements/ (not dsf.yaml's, about the example's repository)."""
    return sorted(x for x in err.splitlines() if x.startswith("placements/") and ": warning: " in x)


def test_a_masked_score_is_a_warning_and_strict_makes_it_an_error(fleet: Path) -> None:
    # without the gpu predicate the Placement can select edge01, where example_* is masked
    edit(
        fleet,
        GPU_INFERENCE,
        '  predicates:\n    - requiredClusterSelector:\n        labelSelector:\n          matchLabels:\n            gpu: "true"\n',
        "",
    )
    code, _, err = cli(fleet, "validate")
    assert code == 0, err
    (warning,) = placement_warnings(err)
    assert warning.startswith(f"{GPU_INFERENCE}:")
    assert (
        "score 'example_performance_score' is masked on 1 of the 3 clusters this Placement "
        "can select (edge01): they score 0 for it"
    ) in warning
    code, _, err = cli(fleet, "--format", "github", "validate")
    assert code == 0 and f"::warning file={GPU_INFERENCE},line=" in err
    code, _, err = cli(fleet, "validate", "--strict")
    assert code == 1
    assert ": error: " in err and "masked on 1 of the 3 clusters" in err


def test_an_unbound_namespace_and_an_empty_selection_are_warnings(fleet: Path) -> None:
    edit(fleet, GREEN_BATCH, "namespace: default", "namespace: batch")
    edit(fleet, GPU_INFERENCE, 'gpu: "true"', 'gpu: "maybe"')
    code, _, err = cli(fleet, "validate")
    assert code == 0, err
    warnings = placement_warnings(err)
    assert len(warnings) == 2, err
    assert "selects no cluster of the inventory" in warnings[0]
    assert (
        "no ManagedClusterSetBinding in placements/ binds a cluster set to namespace 'batch'"
        in (warnings[1])
    )


def test_an_inactive_scorer_behind_a_placement_is_a_warning(fleet: Path) -> None:
    lock = json.loads((fleet / "dsf.lock.json").read_text())
    entry = lock["scorers"]["example-performance-scorer"]
    entry["health"], entry["reason"] = "Inactive", "GET http://x/config: HTTP 500"
    (fleet / "dsf.lock.json").write_text(json.dumps(lock, indent=2) + "\n")
    code, _, err = cli(fleet, "validate")
    assert code == 0, err
    assert "scorer 'example-performance-scorer' is Inactive in dsf.lock.json" in err
    # also for a Placement that selects nothing (yet): the score is not published either way
    edit(fleet, GPU_INFERENCE, "namespace: default", "namespace: inference")
    code, _, err = cli(fleet, "validate")
    warnings = [line for line in err.splitlines() if line.startswith(f"{GPU_INFERENCE}:")]
    assert code == 0 and len(warnings) == 2, err
    assert "no ManagedClusterSetBinding in placements/ binds" in warnings[0]
    assert "scorer 'example-performance-scorer' is Inactive in dsf.lock.json" in warnings[1]


# --------------------------------------------------------------- rendering


def test_placements_are_rendered_per_namespace_with_their_wave(fleet: Path) -> None:
    folder = fleet / "rendered/hub/placements/default"
    assert {
        "kustomization.yaml",
        "managedclustersetbinding-global.yaml",
        "placement-gpu-inference.yaml",
        "placement-green-batch.yaml",
        "manifestworkreplicaset-mwrs-app01.yaml",
        "policy-policy-enable-mig-3g-worker01.yaml",
        "placement-placement-app01.yaml",  # written by optimize into placements/optimized/
    } <= {p.name for p in folder.iterdir()}
    text = (folder / "placement-gpu-inference.yaml").read_text()
    assert "argocd.argoproj.io/sync-wave: '2'" in text
    assert "sortBy" not in text  # defaults the author left out stay out
    edit(fleet, GREEN_BATCH, "weight: 2", "weight: 3")
    code, out, _ = cli(fleet, "diff")
    assert code == 1
    assert "rendered/hub/placements/default/placement-green-batch.yaml" in out


# ----------------------------------------------------------------- explain


def test_explain_ranks_the_example_fleet_from_the_snapshot(fleet: Path) -> None:
    scores = str(fleet / "snapshots")
    code, out, err = cli(fleet, "explain", "--scores", scores, "--at", AT, "--format", "json")
    assert code == 0, err
    document = json.loads(out)
    assert document["at"] == AT
    by_name = {p["name"]: p for p in document["placements"]}
    gpu = by_name["gpu-inference"]
    assert gpu["filtered"] == {"clusterSets": [], "predicates": ["edge01"], "taints": []}
    assert gpu["prioritizers"] == [
        {
            "name": "AddOn/example-performance-score/app01;3g.48gb",
            "weight": 1,
            "scores": {"worker01": 70, "worker02": 85},
        }
    ]
    assert (gpu["totals"], gpu["decisions"]) == ({"worker01": 70, "worker02": 85}, ["worker02"])
    green = by_name["green-batch"]
    # 2 × 60 + Balance 100 + ResourceAllocatableCPU 100 + Steady 0 against 2 × 40 + 100 − 100
    assert (green["totals"], green["decisions"]) == (
        {"worker01": 320, "worker02": 80},
        ["worker01"],
    )
    code, text, _ = cli(fleet, "explain", "default/gpu-inference", "--scores", scores, "--at", AT)
    assert code == 0 and "decisions: worker02" in text and "green-batch" not in text
    code, markdown, _ = cli(
        fleet, "explain", "--scores", scores, "--at", AT, "--format", "markdown"
    )
    assert code == 0 and "| worker02 |" in markdown


def test_explain_without_scores_says_every_addon_score_is_zero(fleet: Path) -> None:
    code, out, _ = cli(fleet, "explain", "--at", AT, "--format", "json")
    assert code == 0
    gpu = next(p for p in json.loads(out)["placements"] if p["name"] == "gpu-inference")
    assert gpu["totals"] == {"worker01": 0, "worker02": 0}
    assert gpu["decisions"] == ["worker01"]  # a tie goes to the first name
    assert any("score" in warning.lower() for warning in gpu["warnings"])


def test_expired_scores_count_zero(fleet: Path) -> None:
    code, out, _ = cli(
        fleet, "explain", "--scores", str(fleet / "snapshots"), "--at", "2026-11-25T00:00:00Z"
    )
    assert code == 0
    assert "expired" in out.lower() or "validuntil" in out.lower()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["explain", "default/nope"], "no Placement default/nope in placements/"),
        (["explain", "--at", "yesterday"], "is not an RFC 3339 time"),
        (["explain", "--at", "2026-11-22T10:00:00"], "needs a time zone"),
    ],
)
def test_explain_usage_errors(fleet: Path, argv: list[str], message: str) -> None:
    code, _, err = cli(fleet, *argv)
    assert code == 2 and message in err and "Traceback" not in err


def test_a_bad_scores_snapshot_is_a_located_error(fleet: Path) -> None:
    write(
        fleet,
        "bad-scores.yaml",
        "apiVersion: cluster.open-cluster-management.io/v1alpha1\nkind: AddOnPlacementScore\n"
        "metadata: {name: s, namespace: worker01}\nstatus:\n  scores:\n    - {name: a, value: 500}\n",
    )
    code, _, err = cli(fleet, "explain", "--scores", str(fleet / "bad-scores.yaml"))
    assert code == 1
    assert "bad-scores.yaml:6:" in err and "status.scores[0].value" in err


# ---------------------------------------------------- decisions in a review


def test_a_change_that_moves_a_workload_is_shown_in_the_pull_request(fleet: Path) -> None:
    """As a new user: a typo, the suggestion, the fix, explain, a change, the moved decision."""
    edit(fleet, GPU_INFERENCE, "example-performance-score", "example-perf-score")
    code, _, err = cli(fleet, "validate")
    assert code == 1 and "did you mean 'example-performance-score'?" in err
    edit(fleet, GPU_INFERENCE, "example-perf-score", "example-performance-score")
    assert cli(fleet, "validate")[0] == 0
    scores = str(fleet / "snapshots")
    assert "decisions: worker02" in cli(fleet, "explain", "--scores", scores, "--at", AT)[1]
    edit(fleet, GPU_INFERENCE, "scoreName: app01;3g.48gb", "scoreName: app01;2g.24gb")
    code, out, _ = cli(fleet, "diff", "--scores", scores, "--at", AT)
    assert code == 1
    assert out.splitlines()[-1] == "placement default/gpu-inference: worker02 -> worker01"
    code, out, _ = cli(fleet, "diff", "--format", "markdown", "--scores", scores, "--at", AT)
    assert "| default/gpu-inference | worker02 | worker01 |" in out
    code, out, _ = cli(fleet, "render", "--check", "--scores", scores, "--at", AT)
    assert code == 1 and "placement default/gpu-inference: worker02 -> worker01" in out
    assert cli(fleet, "render")[0] == 0
    code, out, _ = cli(fleet, "diff", "--scores", scores, "--at", AT)
    assert code == 0 and "placement " not in out


def test_the_decision_diff_shows_margins_and_group_moves(fleet: Path) -> None:
    scores = str(fleet / "snapshots")
    # worker02 85 vs worker01 70 at weight 1 (margin 15); at weight 2, 170 vs 140
    edit(fleet, GPU_INFERENCE, "        weight: 1\n", "        weight: 2\n")
    code, out, _ = cli(fleet, "diff", "--scores", scores, "--at", AT)
    assert code == 1
    assert out.endswith(
        "placement default/gpu-inference: worker02 -> worker02\n"
        "  worker02 now wins by 30 instead of 15\n"
    )
    assert cli(fleet, "render")[0] == 0
    # a named group takes the gpu clusters: worker02 leaves the unnamed group
    edit(
        fleet,
        GPU_INFERENCE,
        "  numberOfClusters: 1\n",
        "  numberOfClusters: 1\n  decisionStrategy:\n    groupStrategy:\n      decisionGroups:\n"
        "        - groupName: canary\n          groupClusterSelector:\n"
        '            labelSelector: {matchLabels: {gpu: "true"}}\n',
    )
    code, out, _ = cli(fleet, "diff", "--scores", scores, "--at", AT)
    assert out.endswith(
        "placement default/gpu-inference: worker02 -> worker02\n"
        "  worker02 moves from group 0 (unnamed) to group 0 canary\n"
    )
    code, out, _ = cli(fleet, "diff", "--format", "markdown", "--scores", scores, "--at", AT)
    assert (
        "| default/gpu-inference | worker02 | worker02 | "
        "worker02 moves from group 0 (unnamed) to group 0 canary |"
    ) in out


# -------------------------------------------------------------------- a hub


def test_explain_reads_a_hub_with_the_scores_the_agent_wrote(fleet: Path, tmp_path: Path) -> None:
    """The agent's own publisher writes AddOnPlacementScores; explain reads them (list only)."""
    import asyncio
    from datetime import UTC, datetime

    from agent.kube import custom_objects_api, hub_client
    from agent.placement_score import placement_score_status
    from agent.publish import HubPublisher
    from dsf_contract.placement_scores import StatusScore
    from tests.agent.agent_fakes import FakeKube

    hub = FakeKube().start()
    try:
        kubeconfig = tmp_path / "hub.kubeconfig"
        kubeconfig.write_text(hub.kubeconfig())
        api = custom_objects_api(hub_client(kubeconfig))
        now = datetime(2026, 11, 22, 9, 0, tzinfo=UTC)
        for cluster, value in (("worker01", 30), ("worker02", 60)):
            status = placement_score_status(
                [StatusScore("app01;3g.48gb", value)], now=now, interval=3600
            )
            asyncio.run(HubPublisher(api, cluster).publish("example-performance-score", status))
        requests_before = len(hub.server.taken())
        code, out, err = cli(
            fleet,
            "explain",
            "default/gpu-inference",
            "--hub-kubeconfig",
            str(kubeconfig),
            "--at",
            AT,
            "--format",
            "json",
        )
        assert code == 0, err
        (gpu,) = json.loads(out)["placements"]
        assert gpu["totals"] == {"worker01": 30, "worker02": 60}
        assert gpu["decisions"] == ["worker02"]
        read = hub.server.taken()[requests_before:]
        assert read and all(r.method == "GET" for r in read)  # list calls only
    finally:
        hub.stop()


def test_an_unreachable_hub_is_one_line(fleet: Path, tmp_path: Path) -> None:
    from tests.agent.agent_fakes import FakeKube

    hub = FakeKube().start()
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(hub.kubeconfig())
    hub.stop()
    code, _, err = cli(fleet, "explain", "--hub-kubeconfig", str(kubeconfig), "--at", AT)
    assert code == 2
    assert err == "dsf-compile: error: hub: cannot list addonplacementscores: connection refused\n"
    assert "Traceback" not in err


def test_the_readme_shows_what_explain_prints() -> None:
    from tests.fleet_repo import REPO_ROOT

    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    names = ("default/gpu-inference", "default/green-batch")
    command = f"$ dsf-compile explain {' '.join(names)} --scores snapshots/ --at {AT}\n"
    shown = readme.split(command, 1)[1].split("```", 1)[0]
    code, out, err = cli(
        EXAMPLE_FLEET, "explain", *names, "--scores", str(EXAMPLE_FLEET / "snapshots"), "--at", AT
    )
    assert code == 0, err
    assert shown == out


def test_explain_warns_about_a_score_its_agent_reports_failing(fleet: Path) -> None:
    snapshot = fleet / "snapshots/addonplacementscores.yaml"
    text = snapshot.read_text()
    marker = '        - {name: app02;all, value: 75}\n      validUntil: "2026-11-24T00:00:00Z"\n'
    assert marker in text
    snapshot.write_text(
        text.replace(
            marker,
            marker
            + "      conditions:\n"
            + '        - type: ScoresAvailable\n          status: "False"\n'
            + "          reason: PrometheusUnreachable\n          message: fetch failed (unreachable)\n"
            + '          lastTransitionTime: "2026-11-22T09:30:00Z"\n',
            1,
        )
    )
    code, out, err = cli(
        fleet, "explain", "default/gpu-inference", "--scores", str(snapshot), "--at", AT,
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    (placement,) = json.loads(out)["placements"]
    assert (
        "score example-performance-score failing on cluster worker02 since "
        "2026-11-22T09:30:00Z (PrometheusUnreachable): its last good values are used until they expire"
    ) in placement["warnings"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["render", "--scores", "/nonexistent"], "render: --scores only with --check"),
        (["render", "--decisions", "/nonexistent"], "render: --decisions only with --check"),
        (["render", "--at", AT], "render: --at only with --check"),
        (["render", "--check", "--at", AT], "render: --at judges the times of --scores"),
        (["diff", "--at", AT], "diff: --at judges the times of --scores"),
    ],
)
def test_render_refuses_the_hub_options_it_would_not_read(
    fleet: Path, argv: list[str], message: str
) -> None:
    before = digest(fleet / "rendered")
    code, out, err = cli(fleet, *argv)
    assert code == 2 and message in err and "Traceback" not in err
    assert out == "" and digest(fleet / "rendered") == before
