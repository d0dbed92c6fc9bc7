"""Names derived from user names: collisions and limits are located ``validate`` errors.

Whole commands in a subprocess, as a user runs them: ``validate``, ``optimize`` and
``render`` exit 1 with the located error, before writing anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fleet_repo import copy_fleet, run_command
from tests.placement.placement_repo import digest

OPTIMIZATION = "placements/gpu-apps/optimization.yaml"
PLAN = "placements/optimized/default-gpu-apps.yaml"
AT = "2026-11-22T10:00:00Z"


def command(root: Path, *argv: str) -> tuple[int, str]:
    result = run_command(root, *argv)
    return result.returncode, result.stderr


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    return copy_fleet(tmp_path / "fleet")


def _copy_of_gpu_apps(root: Path, namespace: str, name: str) -> None:
    """The gpu-apps optimization, its Policies and workloads again, as ``namespace/name``."""
    for source in sorted((root / "placements/gpu-apps").glob("*.yaml")):
        text = source.read_text(encoding="utf-8").replace(
            "namespace: default\n", f"namespace: {namespace}\n"
        )
        text = text.replace("name: gpu-apps\n", f"name: {name}\n")
        (root / f"placements/gpu-apps/copy-{source.name}").write_text(text, encoding="utf-8")
    binding = (
        "---\napiVersion: cluster.open-cluster-management.io/v1beta2\n"
        f"kind: ManagedClusterSetBinding\nmetadata:\n  name: global\n  namespace: {namespace}\n"
        "spec:\n  clusterSet: global\n"
    )
    with (root / "placements/bindings.yaml").open("a", encoding="utf-8") as out:
        out.write(binding)


def _problem_line(err: str, where: str, *parts: str) -> str:
    # the problem at ``where`` that says ``parts`` (a name may break more than one limit)
    lines = [line for line in err.splitlines() if line.startswith(where)]
    assert lines, err
    saying = [line for line in lines if all(part in line for part in parts)]
    assert saying, lines
    return saying[0]


def test_two_optimizations_writing_one_plan_file_are_refused_before_anything_is_written(
    fleet: Path,
) -> None:
    # default/gpu-apps and default-gpu/apps: both plans are placements/optimized/default-gpu-apps.yaml
    _copy_of_gpu_apps(fleet, "default-gpu", "apps")
    before = digest(fleet)
    scores = str(fleet / "snapshots")
    for argv in (("validate",), ("optimize", "--scores", scores, "--at", AT), ("render",)):
        code, err = command(fleet, *argv)
        assert code == 1, err
        _problem_line(
            err,
            f"{OPTIMIZATION}:6:3: error: metadata.name: ",
            "the plan of PlacementOptimization default/gpu-apps would be written to "
            f"{PLAN}, like the plan of PlacementOptimization default-gpu/apps "
            "(placements/gpu-apps/copy-optimization.yaml:6)",
        )
        assert digest(fleet) == before


def test_generated_names_of_two_optimizations_that_collide_name_both(fleet: Path) -> None:
    # gpu-apps + cluster worker01 and gpu + cluster apps-worker01 would both be gpu-apps-worker01
    text = (fleet / OPTIMIZATION).read_text(encoding="utf-8")
    second = text.replace("name: gpu-apps\n", "name: gpu\n").replace(
        "- name: worker01\n", "- name: apps-worker01\n"
    )
    (fleet / "placements/gpu-apps/second.yaml").write_text(second, encoding="utf-8")
    inventory = fleet / "clusters/inventory.yaml"
    inventory.write_text(
        inventory.read_text(encoding="utf-8")
        + "---\napiVersion: cluster.open-cluster-management.io/v1\nkind: ManagedCluster\n"
        "metadata:\n  name: apps-worker01\n",
        encoding="utf-8",
    )
    code, err = command(fleet, "optimize", "--scores", str(fleet / "snapshots"), "--at", AT)
    assert code == 1, err
    assert "Placement default/gpu-apps-worker01" in err and "already has it" in err
    assert "placements/optimized/default-gpu.yaml" in err and PLAN in err


LONG_POLICY = ".".join(["p" * 63, "q" * 63, "r" * 63, "s" * 61])  # 253 characters


@pytest.mark.parametrize(
    ("relative", "old", "new", "where", "message"),
    [
        pytest.param(
            "placements/gpu-apps/policies.yaml",
            "name: policy-disable-mig-worker01\n",
            f"name: {LONG_POLICY}\n",
            "placements/gpu-apps/policies.yaml:",
            "a file name of 265 bytes, and its temporary copy adds up to 22 where file systems allow 255; at most 221 characters here",
            id="policy-name-too-long-for-its-file",
        ),
        pytest.param(
            "placements/gpu-inference.yaml",
            "name: gpu-inference\n",
            f"name: {'g' * 64}\n",
            "placements/gpu-inference.yaml:6:",
            "is 64 characters: OCM labels the Placement's PlacementDecisions",
            id="placement-name-over-a-label-value",
        ),
        pytest.param(
            OPTIMIZATION,
            "name: gpu-apps\n",
            f"name: {'o' * 56}\n",
            f"{OPTIMIZATION}:14:",
            "the plan would write a Placement and PlacementBinding",
            id="generated-placement-name-over-a-label-value",
        ),
        pytest.param(
            "placements/gpu-apps/workloads.yaml",
            "- name: placement-app01",
            "- name: Placement_App01",
            "placements/gpu-apps/workloads.yaml:",
            "spec.placementRefs[0].name: must be a DNS-1123 subdomain",
            id="placement-ref-not-dns",
        ),
    ],
)
def test_a_derived_name_over_its_limit_is_a_located_error_of_validate(
    fleet: Path, relative: str, old: str, new: str, where: str, message: str
) -> None:
    path = fleet / relative
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new, 1), encoding="utf-8")
    before = digest(fleet)
    for argv in (("validate",), ("render",), ("render", "--check")):
        code, err = command(fleet, *argv)
        # render --check could not compare invalid inputs: 2
        assert code == (2 if "--check" in argv else 1), err
        assert "File name too long" not in err
        _problem_line(err, where, message)
    assert digest(fleet) == before
