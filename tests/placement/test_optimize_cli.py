"""``dsf-compile optimize`` on the example fleet: the plan, its determinism, its errors."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.commands.cli import run
from dsf_compile.inputs.placements import Placement, PlacementBinding
from tests.fleet_repo import EXAMPLE_FLEET, copy_fleet
from tests.placement.placement_repo import AT, PLAN

pytest.importorskip("scipy.optimize")

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
    assert (EXAMPLE_FLEET / PLAN).read_bytes() == first
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
    from tests.rendered_checks import ocm_validators

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
    # a second optimization of the same clusters, whose workloads' app has no score
    second = (fleet / OPTIMIZATION).read_text().replace("name: gpu-apps", "name: gpu-batch")
    second = second.replace("mwrs-app0", "mwrs-batch0")
    (fleet / "placements/gpu-apps/batch.yaml").write_text(second)
    workloads = (fleet / "placements/gpu-apps/workloads.yaml").read_text()
    batch = workloads.replace("mwrs-app0", "mwrs-batch0").replace(
        "placement-app0", "placement-batch0"
    )
    (fleet / "placements/gpu-apps/batch-workloads.yaml").write_text(
        batch.replace("    app: app01\n", "    app: batch01\n")
    )
    code, err = optimize(fleet)
    assert code == 1, err
    assert "placements/gpu-apps/batch.yaml:" in err and "no score for" in err
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


# ------------------------------------------------- partial plans, quantities, bounds

WORKLOADS = "placements/gpu-apps/workloads.yaml"
POLICIES = "placements/gpu-apps/policies.yaml"


def edit(root: Path, relative: str, *replacements: tuple[str, str]) -> None:
    path = root / relative
    text = path.read_text()
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    path.write_text(text)


def only_worker01(root: Path) -> None:
    path = root / OPTIMIZATION
    text = path.read_text()
    start = text.index("    - name: worker02\n")
    end = text.index("  targetWorkloads:")
    path.write_text(text[:start] + text[end:])


def test_a_workload_that_does_not_fit_is_left_out_and_named(fleet: Path) -> None:
    # mwrs-app02 asks for 4 slices; no layout supplies more than 3
    path = fleet / WORKLOADS
    text = path.read_text()
    second = text.index("name: mwrs-app02")
    path.write_text(
        text[:second]
        + text[second:].replace('resource-request-amount: "1"', 'resource-request-amount: "4"', 1)
    )
    code, err = optimize(fleet)
    assert code == 0, err
    assert err.splitlines() == [
        f"{OPTIMIZATION}:26:7: warning: spec.targetWorkloads[1]: mwrs-app02 is left out of the "
        "plan: 1 of 2 workloads fit together, and this one is not among them",
        f"dsf-compile: {PLAN} written (objective 85; left out: mwrs-app02)",
    ]
    text = (fleet / PLAN).read_text()
    assert "# Left out (they do not fit with the others): mwrs-app02.\n" in text
    assert "placement-app01" in text and "placement-app02" not in text
    # the plan is an input like any other: validate and render take it
    assert cli(fleet, "validate")[0] == 0


def test_nano_quantities_do_not_over_commit(fleet: Path) -> None:
    # issue 17 row 12: requests of 1n each on layouts of 1n (3g) and 2n (2g) used to
    # land both on the 3g layout (float rounding dropped the 1n coefficients)
    only_worker01(fleet)
    edit(fleet, POLICIES, ('amount: "2"', 'amount: "1n"'), ('amount: "3"', 'amount: "2n"'))
    edit(fleet, WORKLOADS, ('amount: "1"', 'amount: "1n"'))
    code, err = optimize(fleet)
    assert code == 0, err
    # both fit only on the 2g layout: app01 40 + app02 50
    assert f"{PLAN} written (objective 90)" in err, err
    assert "policy-enable-mig-2g-worker01" in (fleet / PLAN).read_text()


@pytest.mark.parametrize(
    ("supply", "demand"), [("2Pi", "1Pi"), ("2e18", "1e18"), ("2Gi", "1024Mi"), ("2Ei", "1Ei")]
)
def test_large_and_binary_quantities_fit_exactly(fleet: Path, supply: str, demand: str) -> None:
    # issue 17 row 12: in Pi or e18 a fitting plan was refused ("no plan fits")
    only_worker01(fleet)
    edit(fleet, POLICIES, ('amount: "3"', f'amount: "{supply}"'))
    edit(fleet, WORKLOADS, ('amount: "1"', f'amount: "{demand}"'))
    code, err = optimize(fleet)
    assert code == 0, err
    assert "left out" not in err
    assert f"{PLAN} written (objective 90)" in err, err


def test_an_absurd_quantity_label_is_a_located_error(fleet: Path) -> None:
    edit(fleet, WORKLOADS, ('amount: "1"', 'amount: "1e400"'))
    code, err = optimize(fleet)
    assert code == 1, err
    assert (
        f"{WORKLOADS}:11:5: error: metadata.labels.resource-request-amount: '1e400' is out of range"
        in err
    )
    assert "Traceback" not in err
    assert not (fleet / PLAN).exists()


def big_fleet(root: Path, side: int) -> None:
    """``side`` clusters, each offered the same ``side`` Policies, for ``side`` workloads."""
    names = [f"n{i:03d}" for i in range(side)]
    (root / "clusters/big.yaml").write_text(
        "".join(
            f"---\napiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
            f"metadata:\n  name: {n}\n  labels:\n    name: {n}\n"
            for n in names
        )
    )
    policy = (root / POLICIES).read_text().split("---\n")[1]
    workload = (root / WORKLOADS).read_text().split("---\n")[1]
    (root / "placements/big").mkdir()
    (root / "placements/big/policies.yaml").write_text(
        "---\n".join(policy.replace("policy-enable-mig-3g-worker01", f"big-p{n}") for n in names)
    )
    (root / "placements/big/workloads.yaml").write_text(
        "---\n".join(
            workload.replace("mwrs-app02", f"big-w{n}").replace("placement-app02", f"big-pl{n}")
            for n in names
        )
    )
    clusters = "".join(
        f"    - name: {n}\n      availablePolicies: [{', '.join(f'big-p{m}' for m in names)}]\n"
        for n in names
    )
    (root / "placements/big/optimization.yaml").write_text(
        "apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1\n"
        "kind: PlacementOptimization\nmetadata: {name: big, namespace: default}\nspec:\n"
        "  objective: Maximize\n  preference:\n"
        "    addOnPlacementScore: example-performance-score\n"
        '    scoreDimensionFormat: "${app};${device}"\n'
        f"  clusters:\n{clusters}"
        f"  targetWorkloads: [{', '.join(f'big-w{n}' for n in names)}]\n"
    )


def test_a_model_past_the_size_bound_is_a_located_error(fleet: Path) -> None:
    # issue 17 row 8: 64 workloads × 64 clusters × 64 Policies = 262,144 z variables
    big_fleet(fleet, 64)
    assert cli(fleet, "validate")[0] == 0
    code, err = optimize(fleet)
    assert code == 1, err
    assert err.splitlines()[0] == (
        "placements/big/optimization.yaml:138:3: error: spec.targetWorkloads: the model is too "
        "large: 64 workloads × 4,096 (cluster, Policy) pairs = 262,144 z variables, 12,144 "
        "over the bound of 250,000"
    )
    assert not any((fleet / "placements/optimized").iterdir())


def test_past_the_time_limit_nothing_is_written(fleet: Path) -> None:
    # a limit too short for anything: the deadline has passed before the first solve
    code, _, err = cli(
        fleet, "optimize", "--scores", str(fleet / "snapshots"), "--at", AT, "--time-limit", "1e-9"
    )
    assert code == 1, err
    assert err.splitlines()[0] == (
        f"{OPTIMIZATION}:8:1: error: spec: the solver reached the time limit of 1e-09 s "
        "(--time-limit) before it proved an optimal plan; give it more time or split the "
        "optimization"
    )
    assert not (fleet / PLAN).exists()


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon", "1e9"])
def test_a_bad_time_limit_is_refused(fleet: Path, value: str) -> None:
    code, _, err = cli(fleet, "optimize", "--scores", "snapshots", f"--time-limit={value}")
    assert code == 2, err
    assert "--time-limit" in err and "Traceback" not in err


def test_many_left_out_are_summed_up_after_twenty(fleet: Path) -> None:
    workload = (fleet / WORKLOADS).read_text().split("---\n")[1]
    names = [f"mwrs-huge{i:02d}" for i in range(25)]
    (fleet / "placements/gpu-apps/huge.yaml").write_text(
        "---\n".join(
            workload.replace("mwrs-app02", name)
            .replace("placement-app02", f"placement-{name}")
            .replace('resource-request-amount: "1"', 'resource-request-amount: "4"')
            for name in names
        )
    )
    edit(
        fleet,
        OPTIMIZATION,
        ("    - mwrs-app02\n", "".join(f"    - {n}\n" for n in ["mwrs-app02", *names])),
    )
    code, err = optimize(fleet)
    assert code == 0, err
    lines = err.splitlines()
    assert sum("is left out of the plan: 2 of 27 workloads" in line for line in lines) == 20
    assert (
        f"{OPTIMIZATION}:24:3: warning: spec.targetWorkloads: and 5 more workloads are left out"
        in err
    )
    assert lines[-1].endswith(", mwrs-huge19 and 5 more)")
    assert "mwrs-huge24" in (fleet / PLAN).read_text()


def test_a_snapshot_without_at_is_judged_at_its_own_moment(fleet: Path) -> None:
    """Without --at, the snapshot's newest write is the moment: the committed plan, not
    one solved on scores that expired since (issue: decisions never without evidence)."""
    committed = (EXAMPLE_FLEET / PLAN).read_bytes()
    code, _, err = cli(fleet, "optimize", "--scores", str(fleet / "snapshots"))
    assert code == 0, err
    assert "judged at 2026-11-23T23:58:30Z, the newest write in --scores" in err
    assert f"{PLAN} written (objective 145)" in err
    assert (fleet / PLAN).read_bytes() == committed
