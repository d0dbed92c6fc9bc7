"""``dsf-compile optimize`` on the example fleet: the plan, its determinism, its errors."""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

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
