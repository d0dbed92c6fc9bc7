"""``dsf-compile optimize`` on the example fleet: the plan, its determinism, its errors."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.cli import run
from dsf_compile.inputs.placements import Placement, PlacementBinding
from tests.fleet_repo import copy_fleet

pytest.importorskip("scipy.optimize")

AT = "2026-11-22T10:00:00Z"
PLAN = "placements/optimized/default-gpu-apps.yaml"
OPTIMIZATION = "placements/gpu-apps/optimization.yaml"


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = copy_fleet(tmp_path / "fleet")
    (root / PLAN).unlink()
    return root


def optimize(root: Path) -> tuple[int, str]:
    code, _, err = cli(root, "optimize", "--scores", str(root / "snapshots"), "--at", AT)
    return code, err


def test_the_plan_is_written_and_the_same_twice(fleet: Path) -> None:
    code, err = optimize(fleet)
    assert code == 0, err
    assert f"{PLAN} written (objective 145)" in err
    first = (fleet / PLAN).read_bytes()
    code, err = optimize(fleet)
    assert code == 0 and f"{PLAN} unchanged" in err
    assert (fleet / PLAN).read_bytes() == first
    # the committed plan of the example fleet is this one
    from tests.fleet_repo import REPO_ROOT

    assert (REPO_ROOT / PLAN).read_bytes() == first
    assert hashlib.sha256(first).hexdigest()


def test_the_plan_chooses_3g_for_performance_and_2g_for_power(fleet: Path) -> None:
    assert optimize(fleet)[0] == 0
    documents = list(yaml.safe_load_all((fleet / PLAN).read_text()))
    bindings = [
        PlacementBinding.model_validate(d) for d in documents if d["kind"] == "PlacementBinding"
    ]
    assert {b.subjects[0].name.rsplit("-", 1)[0] for b in bindings} == {"policy-enable-mig-3g"}
    for document in documents:
        if document["kind"] == "Placement":
            Placement.model_validate(document)
        assert document["metadata"]["labels"] == {
            "dynamic-scoring.open-cluster-management.io/generated-by": "optimize"
        }
    path = fleet / OPTIMIZATION
    path.write_text(
        path.read_text().replace("example-performance-score", "example-powerconsumption-score")
    )
    assert optimize(fleet)[0] == 0
    documents = list(yaml.safe_load_all((fleet / PLAN).read_text()))
    bindings = [
        PlacementBinding.model_validate(d) for d in documents if d["kind"] == "PlacementBinding"
    ]
    assert {b.subjects[0].name.rsplit("-", 1)[0] for b in bindings} == {"policy-enable-mig-2g"}


def test_the_plan_renders_like_any_placement_input(fleet: Path) -> None:
    assert optimize(fleet)[0] == 0
    code, _, err = cli(fleet, "render")
    assert code == 0, err
    rendered = fleet / "rendered/hub/placements/default/placement-placement-app01.yaml"
    assert "generated-by: optimize" in rendered.read_text()


@pytest.mark.parametrize(
    ("old", "new", "where", "message"),
    [
        (
            "        - policy-enable-mig-2g-worker02\n",
            "        - policy-enable-mig-4g-worker02\n",
            f"{OPTIMIZATION}:23:",
            "no Policy default/policy-enable-mig-4g-worker02 in placements/",
        ),
        (
            "    - mwrs-app02\n",
            "    - mwrs-app03\n",
            f"{OPTIMIZATION}:26:",
            "no ManifestWorkReplicaSet default/mwrs-app03",
        ),
        (
            "    - name: worker02\n",
            "    - name: worker09\n",
            f"{OPTIMIZATION}:19:",
            "cluster 'worker09' is not in the inventory",
        ),
        (
            "addOnPlacementScore: example-performance-score",
            "addOnPlacementScore: example-speed-score",
            f"{OPTIMIZATION}:11:",
            "no scorer publishes an AddOnPlacementScore named 'example-speed-score'",
        ),
    ],
)
def test_an_unusable_optimization_is_a_located_error(
    fleet: Path, old: str, new: str, where: str, message: str
) -> None:
    path = fleet / OPTIMIZATION
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    code, err = optimize(fleet)
    assert code == 1
    assert any(line.startswith(where) and message in line for line in err.splitlines()), err
    assert not (fleet / PLAN).exists()


def test_a_missing_score_names_the_app_cluster_and_device(fleet: Path, tmp_path: Path) -> None:
    snapshot = (fleet / "snapshots/addonplacementscores.yaml").read_text()
    (tmp_path / "scores.yaml").write_text(
        snapshot.replace("        - {name: app02;2g.24gb, value: 45}\n", "", 1)
    )
    code, _, err = cli(fleet, "optimize", "--scores", str(tmp_path / "scores.yaml"), "--at", AT)
    assert code == 1 and "no score for (app, cluster, device) (app02, worker02, 2g.24gb)" in err


def test_optimize_needs_scores(fleet: Path) -> None:
    code, _, err = cli(fleet, "optimize")
    assert code == 2 and "--scores PATH or --hub-kubeconfig PATH" in err


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('    resource-supply-amount: "2"\n', "", "needs the label resource-supply-amount"),
        (
            '    resource-supply-amount: "2"\n',
            '    resource-supply-amount: "two"\n',
            "'two' is not a quantity",
        ),
    ],
)
def test_supply_labels_missing_or_not_numbers_are_located(
    fleet: Path, old: str, new: str, message: str
) -> None:
    path = fleet / "placements/gpu-apps/policies.yaml"
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    code, err = optimize(fleet)
    assert code == 1
    assert any(
        line.startswith("placements/gpu-apps/policies.yaml:") and message in line
        for line in err.splitlines()
    ), err


def plan_documents(root: Path) -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((root / PLAN).read_text()))


def test_with_required_compliance_the_workload_placements_need_the_claim_and_fit_the_crd(
    fleet: Path,
) -> None:
    from tests.fleet_repo import OCM_CRDS
    from tests.test_rendered_objects import ocm_validators

    if not OCM_CRDS.is_dir():
        pytest.skip(f"the upstream OCM CRDs are not here ({OCM_CRDS})")
    path = fleet / OPTIMIZATION
    path.write_text(path.read_text().replace("requireCompliance: false", "requireCompliance: true"))
    assert optimize(fleet)[0] == 0
    validator = ocm_validators()["cluster.open-cluster-management.io/v1beta1", "Placement"]
    claims = {}
    for document in plan_documents(fleet):
        if document["kind"] == "PlacementBinding":
            PlacementBinding.model_validate(document)
            continue
        assert sorted(e.message for e in validator.iter_errors(document)) == []
        Placement.model_validate(document)
        (predicate,) = document["spec"]["predicates"]
        claims[document["metadata"]["name"]] = predicate["requiredClusterSelector"].get(
            "claimSelector"
        )
    compliant = {
        "matchExpressions": [
            {"key": "policy-watcher-claim", "operator": "In", "values": ["compliant"]}
        ]
    }
    # the workloads wait for a compliant cluster; the configurations' Placements do not
    assert claims == {
        "gpu-apps-worker01": None,
        "gpu-apps-worker02": None,
        "placement-app01": compliant,
        "placement-app02": compliant,
    }


def test_the_plan_does_not_depend_on_the_order_of_the_lists(fleet: Path) -> None:
    assert optimize(fleet)[0] == 0
    first = (fleet / PLAN).read_bytes()
    path = fleet / OPTIMIZATION
    text = path.read_text()
    shuffled = text.replace(
        "    - mwrs-app01\n    - mwrs-app02\n", "    - mwrs-app02\n    - mwrs-app01\n"
    ).replace(
        "        - policy-disable-mig-worker02\n"
        "        - policy-enable-mig-3g-worker02\n"
        "        - policy-enable-mig-2g-worker02\n",
        "        - policy-enable-mig-2g-worker02\n"
        "        - policy-enable-mig-3g-worker02\n"
        "        - policy-disable-mig-worker02\n",
    )
    assert shuffled != text
    path.write_text(shuffled)
    code, err = optimize(fleet)
    assert code == 0 and f"{PLAN} unchanged" in err
    assert (fleet / PLAN).read_bytes() == first


def test_a_policy_shared_by_both_clusters_gets_a_pair_of_objects_per_cluster(fleet: Path) -> None:
    policies = fleet / "placements/gpu-apps/policies.yaml"
    text = policies.read_text()
    # one 3g Policy for every cluster instead of one per cluster
    policies.write_text(
        text.replace(
            "name: policy-enable-mig-3g-worker01", "name: policy-enable-mig-3g", 1
        ).replace("name: policy-enable-mig-3g-worker02", "name: policy-enable-mig-3g-spare", 1)
    )
    path = fleet / OPTIMIZATION
    path.write_text(
        path.read_text().replace("policy-enable-mig-3g-worker0", "policy-enable-mig-3g#")
    )
    path.write_text(path.read_text().replace("policy-enable-mig-3g#1", "policy-enable-mig-3g"))
    path.write_text(path.read_text().replace("policy-enable-mig-3g#2", "policy-enable-mig-3g"))
    code, err = optimize(fleet)
    assert code == 0, err
    bindings = {
        d["metadata"]["name"]: d["subjects"][0]["name"]
        for d in plan_documents(fleet)
        if d["kind"] == "PlacementBinding"
    }
    assert bindings == {
        "gpu-apps-worker01": "policy-enable-mig-3g",
        "gpu-apps-worker02": "policy-enable-mig-3g",
    }
    code, _, err = cli(fleet, "validate")
    assert code == 0, err


@pytest.mark.parametrize(
    ("edit", "where", "message"),
    [
        pytest.param(
            (
                "placements/gpu-apps/workloads.yaml",
                "- name: placement-app02",
                "- name: placement-app01",
            ),
            f"{OPTIMIZATION}:26:",
            "the plan writes Placement default/placement-app01 for mwrs-app02 into "
            f"{PLAN}, but {PLAN} (for mwrs-app01) already has it",
            id="two-workloads-one-placement",
        ),
        pytest.param(
            ("placements/gpu-inference.yaml", "name: gpu-inference", "name: placement-app02"),
            f"{OPTIMIZATION}:26:",
            "but placements/gpu-inference.yaml already has it",
            id="a-placement-written-by-hand",
        ),
        pytest.param(
            (OPTIMIZATION, "    - mwrs-app02\n", "    - mwrs-app01\n"),
            f"{OPTIMIZATION}:26:",
            "'mwrs-app01' is listed twice (first at index 0)",
            id="a-workload-twice",
        ),
        pytest.param(
            (OPTIMIZATION, "    - name: worker02\n", "    - name: worker01\n"),
            f"{OPTIMIZATION}:19:",
            "'worker01' is listed twice (first at index 0)",
            id="a-cluster-twice",
        ),
        pytest.param(
            (
                OPTIMIZATION,
                "        - policy-enable-mig-2g-worker01\n",
                "        - policy-enable-mig-3g-worker01\n",
            ),
            f"{OPTIMIZATION}:18:",
            "'policy-enable-mig-3g-worker01' is listed twice (first at index 1)",
            id="a-policy-twice",
        ),
    ],
)
def test_a_plan_that_would_collide_or_repeat_is_a_located_error(
    fleet: Path, edit: tuple[str, str, str], where: str, message: str
) -> None:
    relative, old, new = edit
    path = fleet / relative
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    code, err = optimize(fleet)
    assert code == 1, err
    assert any(line.startswith(where) and message in line for line in err.splitlines()), err
    assert "Traceback" not in err
    assert not (fleet / PLAN).exists()


def test_one_failing_optimization_leaves_every_plan_unwritten(fleet: Path) -> None:
    # a second optimization of the same clusters for power, whose workloads ask for more
    # than any layout supplies
    second = (fleet / OPTIMIZATION).read_text().replace("name: gpu-apps", "name: gpu-batch")
    second = second.replace("mwrs-app0", "mwrs-batch0")
    (fleet / "placements/gpu-apps/batch.yaml").write_text(second)
    workloads = (fleet / "placements/gpu-apps/workloads.yaml").read_text()
    batch = workloads.replace("mwrs-app0", "mwrs-batch0").replace(
        "placement-app0", "placement-batch0"
    )
    (fleet / "placements/gpu-apps/batch-workloads.yaml").write_text(
        batch.replace('resource-request-amount: "1"', 'resource-request-amount: "4"')
    )
    code, err = optimize(fleet)
    assert code == 1, err
    assert "placements/gpu-apps/batch.yaml:" in err and "no plan fits" in err
    assert not (fleet / "placements/optimized").exists() or not any(
        (fleet / "placements/optimized").iterdir()
    )


def test_missing_scores_say_which_cluster_has_none_or_stale_ones(fleet: Path) -> None:
    snapshot = fleet / "snapshots/addonplacementscores.yaml"
    documents = list(yaml.safe_load_all(snapshot.read_text()))
    kept = []
    for document in documents:
        for item in document.get("items", [document]):
            name, cluster = item["metadata"]["name"], item["metadata"]["namespace"]
            if name == "example-performance-score" and cluster == "worker02":
                continue  # worker02 publishes none
            if name == "example-performance-score" and cluster == "worker01":
                item.setdefault("status", {})["validUntil"] = "2026-11-22T09:00:00Z"
            kept.append(item)
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": kept}))
    code, err = optimize(fleet)
    assert code == 1, err
    assert (
        "(no AddOnPlacementScore example-performance-score on worker02; the scores of "
        "worker01 expired before 2026-11-22T10:00:00Z (validUntil))"
    ) in err
