"""Sharding past one Application (docs/gitops.md): a generated fleet over a small byte budget.

Every figure comes from whole ``dsf-compile`` commands and ``kubectl kustomize`` on the
written tree: every object in exactly one Application, every shard building, the
bootstrap objects naming every shard, and one cluster more or less rewriting one shard.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from bench.render_bench import generate_fleet
from dsf_compile.render.shards import shard_count, shard_folder, shard_of
from tests.rendered_checks import cluster_bytes, identity, kustomize, rendered_files

CLUSTERS = 60
SCORERS = 4
OCM_CLUSTER_KINDS = {"ManifestWork", "ManagedClusterAddOn", "AddOnDeploymentConfig"}


def dsf(root: Path, *args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    """``dsf-compile --root ROOT ARGS`` as a user runs it."""
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), *args],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == expect, done.stderr[-3000:]
    return done


def add_cluster(root: Path, name: str) -> None:
    document = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {"gpu": "true", "region": "eu-west"}},
    }
    (root / "clusters" / f"{name}.yaml").write_text(yaml.safe_dump(document), encoding="utf-8")


@pytest.fixture(scope="module")
def budget(tmp_path_factory: pytest.TempPathFactory) -> int:
    """A budget that puts the generated fleet at 6 budgets' worth: 8 shards, mid-range."""
    root = tmp_path_factory.mktemp("unsharded")
    generate_fleet(root, CLUSTERS, SCORERS)
    dsf(root, "render")
    return cluster_bytes(root) // 6


@pytest.fixture
def fleet(tmp_path: Path, budget: int) -> Path:
    generate_fleet(tmp_path, CLUSTERS, SCORERS)
    # the count the budget asks for, pinned: the budget alone never chooses it
    settings = f"render:\n  shardBytes: {budget}\n  shards: 8\n"
    (tmp_path / "dsf.yaml").write_text(settings, encoding="utf-8")
    dsf(tmp_path, "render")
    return tmp_path


def shard_folders(root: Path) -> list[str]:
    return sorted(f"shards/{p.name}" for p in (root / "rendered" / "shards").iterdir())


def test_shard_count_is_the_smallest_power_of_two_under_the_budget() -> None:
    assert [shard_count(n, 100) for n in (0, 100, 101, 200, 201, 400, 401)] == [1, 1, 2, 2, 4, 4, 8]
    assert shard_folder(3, 8) == "shards/03" and shard_folder(120, 128) == "shards/120"
    # pinned: a cluster's shard must not move between versions or machines
    assert [shard_of(f"cluster-{i:04d}", 8) for i in range(6)] == [
        shard_of(f"cluster-{i:04d}", 16) % 8 for i in range(6)
    ]
    assert shard_of("worker01", 1_000_003) == shard_of("worker01", 1_000_003)


def test_every_object_is_in_exactly_one_application(fleet: Path, budget: int) -> None:
    files = rendered_files(fleet)
    folders = shard_folders(fleet)
    assert folders == [shard_folder(i, 8) for i in range(8)]
    assert not (fleet / "rendered" / "clusters").exists()
    expected: Counter[tuple[str, str, str, str]] = Counter()
    for path, data in files.items():
        if path.endswith("kustomization.yaml") or path.startswith("bootstrap/"):
            continue
        expected[identity(yaml.safe_load(data))] += 1
    root_objects = kustomize(fleet / "rendered")
    assert not {o["kind"] for o in root_objects} & OCM_CLUSTER_KINDS
    seen = Counter(identity(o) for o in root_objects)
    outputs = []
    for folder in folders:
        objects = kustomize(fleet / "rendered" / folder)
        outputs.append(len(yaml.safe_dump_all(objects)))
        for obj in objects:
            assert obj["kind"] in OCM_CLUSTER_KINDS
            cluster = obj["metadata"]["namespace"]
            # whole clusters, each in the shard its name hashes to
            assert shard_folder(shard_of(cluster, 8), 8) == folder
            seen[identity(obj)] += 1
    assert seen == expected
    assert max(seen.values()) == 1
    # the average shard is within the budget (the count is chosen so)
    per_cluster = sum(
        len(d)
        for p, d in files.items()
        if p.startswith("shards/") and not p.endswith("/kustomization.yaml")
    )
    assert per_cluster / len(folders) <= budget
    assert all(size > 0 for size in outputs)


def test_the_bootstrap_objects_point_at_every_shard_after_the_crds(fleet: Path) -> None:
    rendered = fleet / "rendered"
    folders = shard_folders(fleet)
    argocd = kustomize(rendered / "bootstrap" / "argocd")
    assert [o["kind"] for o in argocd] == ["ApplicationSet"]
    spec = argocd[0]["spec"]
    elements = spec["generators"][0]["list"]["elements"]
    assert [e["path"] for e in elements] == ["rendered"] + [f"rendered/{f}" for f in folders]
    assert [e["stage"] for e in elements] == ["hub"] + ["clusters"] * len(folders)
    steps = spec["strategy"]["rollingSync"]["steps"]
    assert [s["matchExpressions"][0]["values"] for s in steps] == [["hub"], ["clusters"]]
    assert spec["template"]["spec"]["source"]["path"] == "{{.path}}"
    flux = {
        o["metadata"]["name"]: o
        for o in kustomize(rendered / "bootstrap" / "flux")
        if o["kind"] == "Kustomization"
    }
    shards = {n: o for n, o in flux.items() if "-shard-" in n}
    assert sorted(o["spec"]["path"] for o in shards.values()) == [
        f"./rendered/{f}" for f in folders
    ]
    for obj in shards.values():
        assert obj["spec"]["dependsOn"] == [
            {"name": "dynamic-scoring-framework-crds"},
            {"name": "dynamic-scoring-framework"},
        ]
    # the hub's layer is what it was: the CRDs, then fleet/ (which holds no shard)
    assert flux["dynamic-scoring-framework"]["spec"]["path"] == "./rendered/fleet"
    fleet_kinds = {o["kind"] for o in kustomize(rendered / "fleet")}
    assert not fleet_kinds & OCM_CLUSTER_KINDS


def _changed(before: dict[str, bytes], after: dict[str, bytes]) -> set[str]:
    return {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}


def test_one_cluster_more_or_less_rewrites_one_shard(fleet: Path) -> None:
    before = rendered_files(fleet)
    add_cluster(fleet, "cluster-9000")
    dsf(fleet, "render")
    after = rendered_files(fleet)
    shard = shard_folder(shard_of("cluster-9000", 8), 8)
    changed = _changed(before, after)
    assert changed == {
        f"{shard}/kustomization.yaml",
        f"{shard}/cluster-9000/kustomization.yaml",
        f"{shard}/cluster-9000/manifestwork.yaml",
        f"{shard}/cluster-9000/managedclusteraddon.yaml",
    }
    # and removing one (the generated inventory is one file: drop its first cluster)
    inventory = fleet / "clusters" / "inventory.yaml"
    documents = list(yaml.safe_load_all(inventory.read_text(encoding="utf-8")))
    gone = documents.pop(0)["metadata"]["name"]
    inventory.write_text(yaml.safe_dump_all(documents, sort_keys=False), encoding="utf-8")
    dsf(fleet, "render")
    shard = shard_folder(shard_of(gone, 8), 8)
    assert {
        p.split("/", 2)[0] + "/" + p.split("/", 2)[1]
        for p in _changed(after, rendered_files(fleet))
    } == {shard}


def test_check_and_diff_name_the_shard_a_change_lands_in(fleet: Path) -> None:
    add_cluster(fleet, "cluster-9000")
    shard = shard_folder(shard_of("cluster-9000", 8), 8)
    check = dsf(fleet, "render", "--check", expect=1)
    assert check.stdout.splitlines()[0] == f"shards changed: {shard} (4 files)"
    markdown = dsf(fleet, "diff", "--format", "markdown", expect=1)
    assert f"Shards changed: {shard} (4 files)." in markdown.stdout


def test_the_no_op_fast_path_sees_a_change_inside_a_shard(fleet: Path) -> None:
    assert "0 added, 0 changed, 0 removed" in dsf(fleet, "render").stderr
    dsf(fleet, "render", "--check")  # reads every file once, then vouches for their lstat
    dsf(fleet, "render", "--check")
    target = next((fleet / "rendered" / "shards").glob("*/*/manifestwork.yaml"))
    target.write_text(target.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    shard = "shards/" + target.parent.parent.name
    check = dsf(fleet, "render", "--check", expect=1)
    assert check.stdout.splitlines()[0] == f"shards changed: {shard} (1 file)"
    assert "1 changed" in dsf(fleet, "render").stderr
    dsf(fleet, "render", "--check")


def test_at_the_budget_or_by_default_the_fleet_is_not_sharded(tmp_path: Path) -> None:
    generate_fleet(tmp_path, CLUSTERS, SCORERS)
    dsf(tmp_path, "render")
    unsharded = rendered_files(tmp_path)
    assert not any(p.startswith("shards/") for p in unsharded)
    (tmp_path / "dsf.yaml").write_text(
        f"render:\n  shardBytes: {cluster_bytes(tmp_path)}\n", encoding="utf-8"
    )
    dsf(tmp_path, "render")
    assert rendered_files(tmp_path) == unsharded
    # one byte fewer asks for two shards: refused while clusters are rendered unsharded
    (tmp_path / "dsf.yaml").write_text(
        f"render:\n  shardBytes: {cluster_bytes(tmp_path) - 1}\n", encoding="utf-8"
    )
    refused = dsf(tmp_path, "render", expect=1)
    assert "1 → 2 shards: 60 clusters move" in refused.stderr
    assert rendered_files(tmp_path) == unsharded
    # pinned, the layout moves (loudly), and back to the same bytes when unpinned
    (tmp_path / "dsf.yaml").write_text(
        f"render:\n  shardBytes: {cluster_bytes(tmp_path) - 1}\n  shards: 2\n", encoding="utf-8"
    )
    moved = dsf(tmp_path, "render")
    assert "dsf.yaml:3:3: warning: render.shards: the number of shards changes" in moved.stderr
    assert shard_folders(tmp_path) == ["shards/00", "shards/01"]
    (tmp_path / "dsf.yaml").write_text("render:\n  shards: 1\n", encoding="utf-8")
    dsf(tmp_path, "render")
    (tmp_path / "dsf.yaml").unlink()
    dsf(tmp_path, "render")
    assert rendered_files(tmp_path) == unsharded
    assert not (tmp_path / "rendered" / "shards").exists()


def _objects_by_application(rendered: Path) -> dict[tuple[str, str, str, str], str]:
    """Every object Argo CD or Flux applies from ``rendered/``, and which path applies it."""
    paths = [rendered]
    if (rendered / "shards").is_dir():
        paths += sorted(p for p in (rendered / "shards").iterdir() if p.is_dir())
    owner: dict[tuple[str, str, str, str], str] = {}
    for path in paths:
        for obj in kustomize(path):
            assert identity(obj) not in owner, identity(obj)
            owner[identity(obj)] = str(path.relative_to(rendered))
    return owner


def _grow(root: Path, clusters: int) -> None:
    for index in range(clusters):
        add_cluster(root, f"grown-{index:03d}")


def test_a_growing_fleet_never_moves_clusters_out_of_an_applied_shard(tmp_path: Path) -> None:
    """Issue 25 row 4: crossing the budget must not prune the clusters applied already."""
    generate_fleet(tmp_path, CLUSTERS, SCORERS)
    (tmp_path / "dsf.yaml").write_text("render:\n  shardBytes: 10000000\n", encoding="utf-8")
    dsf(tmp_path, "render")
    budget = cluster_bytes(tmp_path) * 3 // 2  # 60 clusters fit, 91 do not
    (tmp_path / "dsf.yaml").write_text(f"render:\n  shardBytes: {budget}\n", encoding="utf-8")
    dsf(tmp_path, "render")
    rendered = tmp_path / "rendered"
    applied = _objects_by_application(rendered)
    before = rendered_files(tmp_path)
    _grow(tmp_path, 31)
    for command in (["render"], ["render", "--check"], ["diff"], ["diff", "--format", "markdown"]):
        # render refuses (1); render --check and diff could not compare (2)
        refused = dsf(tmp_path, *command, expect=1 if command == ["render"] else 2)
        assert "error: render.shards:" in refused.stderr
        assert "1 → 2 shards: 60 clusters move" in refused.stderr
        assert "render.shards: 1" in refused.stderr and "render.shards: 2" in refused.stderr
        assert "Traceback" not in refused.stderr
    assert rendered_files(tmp_path) == before  # nothing was written
    # keeping the layout: the new clusters join clusters/, nobody leaves the Application
    settings = f"render:\n  shardBytes: {budget}\n  shards: 1\n"
    (tmp_path / "dsf.yaml").write_text(settings, encoding="utf-8")
    kept = dsf(tmp_path, "render")
    assert "warning: render.shards: the 1 shard pinned here average" in kept.stderr
    assert "plan a move to render.shards: 2" in kept.stderr
    grown = _objects_by_application(rendered)
    assert {key: grown[key] for key in applied} == applied
    # moving on purpose: loud in render --check, diff and render, and every object once
    (tmp_path / "dsf.yaml").write_text(settings.replace("shards: 1", "shards: 2"), encoding="utf-8")
    check = dsf(tmp_path, "render", "--check", expect=1)
    assert check.stdout.startswith("shard count changes: 1 → 2 shards: 91 clusters move")
    markdown = dsf(tmp_path, "diff", "--format", "markdown", expect=1)
    assert "**The number of shards changes**, 1 → 2 shards" in markdown.stdout
    assert "91 clusters move" in markdown.stdout
    moved = dsf(tmp_path, "render")
    assert "warning: render.shards: the number of shards changes, 1 → 2" in moved.stderr
    sharded = _objects_by_application(rendered)
    assert sharded.keys() == grown.keys()
    assert {o["kind"] for o in kustomize(rendered / "bootstrap" / "argocd")} == {"ApplicationSet"}
    # the warning was news of that render only
    assert "render.shards" not in dsf(tmp_path, "render").stderr
    # pinned at 2, twice the fleet stays in two shards; unpinned, 2 → 4 is refused
    for index in range(100):
        add_cluster(tmp_path, f"more-{index:03d}")
    dsf(tmp_path, "render")
    assert shard_folders(tmp_path) == ["shards/00", "shards/01"]
    (tmp_path / "dsf.yaml").write_text(f"render:\n  shardBytes: {budget}\n", encoding="utf-8")
    refused = dsf(tmp_path, "render", expect=1)
    assert "2 → 4 shards" in refused.stderr


def test_a_pinned_count_is_a_power_of_two_within_bounds(tmp_path: Path) -> None:
    generate_fleet(tmp_path, 6, SCORERS)
    for value, message in (("3", "must be a power of two"), ("2048", "must be <= 1024")):
        (tmp_path / "dsf.yaml").write_text(f"render:\n  shards: {value}\n", encoding="utf-8")
        done = dsf(tmp_path, "validate", expect=1)
        assert done.stderr.startswith("dsf.yaml:2:3: error: render.shards:"), done.stderr
        assert message in done.stderr
    # a budget that would make millions of folders is refused, located, before any write
    (tmp_path / "dsf.yaml").write_text("render:\n  shardBytes: 1\n", encoding="utf-8")
    done = dsf(tmp_path, "render", expect=1)
    assert done.stderr.startswith("dsf.yaml:2:3: error: render.shardBytes:"), done.stderr
    assert not (tmp_path / "rendered").exists()


def test_a_bad_budget_is_a_located_error(tmp_path: Path) -> None:
    generate_fleet(tmp_path, 6, 1)
    (tmp_path / "dsf.yaml").write_text("render:\n  shardBytes: 0\n", encoding="utf-8")
    done = dsf(tmp_path, "validate", expect=1)
    assert done.stderr.startswith("dsf.yaml:2:3: error: render.shardBytes: must be > 0\n")
    assert "Traceback" not in done.stderr


def test_the_longest_addon_name_validate_accepts_fits_every_name_it_derives(tmp_path: Path) -> None:
    """Issue 25 row 9: what validate accepts, Argo CD, Flux and OCM can apply."""
    generate_fleet(tmp_path, 6, SCORERS)
    addon = "a" * 54
    (tmp_path / "dsf.yaml").write_text(
        f"addonName: {addon}\nrender:\n  shards: 2\n", encoding="utf-8"
    )
    dsf(tmp_path, "validate")
    dsf(tmp_path, "render")
    rendered = tmp_path / "rendered"
    names = [
        o["metadata"]["name"]
        for tool in ("argocd", "flux")
        for o in kustomize(rendered / "bootstrap" / tool)
    ]
    elements = kustomize(rendered / "bootstrap" / "argocd")[0]["spec"]["generators"][0]
    names += [e["name"] for e in elements["list"]["elements"]]
    assert f"{addon}-shard-01" in names and f"{addon}-crds" in names
    assert max(len(n) for n in names) == 63
    # one character more is refused, at the field, before anything is written
    (tmp_path / "dsf.yaml").write_text(
        f"addonName: {addon}a\nrender:\n  shards: 2\n", encoding="utf-8"
    )
    done = dsf(tmp_path, "validate", expect=1)
    assert done.stderr.startswith("dsf.yaml:1:1: error: addonName: a shard's Argo CD Application")


def test_a_budget_alone_never_moves_clusters_even_without_a_tree(tmp_path: Path) -> None:
    """Issue 35 row 19: ``rm -rf rendered && render`` after a budget change moved clusters
    between shards, and ``render --check`` then passed: the count comes from dsf.yaml only."""
    generate_fleet(tmp_path, CLUSTERS, SCORERS)
    dsf(tmp_path, "render")
    budget = cluster_bytes(tmp_path) // 3  # the budget asks for 4 shards
    (tmp_path / "dsf.yaml").write_text(f"render:\n  shardBytes: {budget}\n", encoding="utf-8")
    for command in (["render"], ["render", "--check"], ["diff"]):
        shutil.rmtree(tmp_path / "rendered", ignore_errors=True)
        # render refuses (1); the comparing commands could not compare (2)
        refused = dsf(tmp_path, *command, expect=1 if command == ["render"] else 2)
        assert refused.stderr.startswith("dsf.yaml:1:1: error: render.shards: "), refused.stderr
        assert "asks for 4 shards" in refused.stderr
        assert "render.shards: 4" in refused.stderr
        assert not (tmp_path / "rendered").exists()
    # pinned, it renders; a budget change with the pin kept moves nothing
    pinned = f"render:\n  shardBytes: {budget}\n  shards: 4\n"
    (tmp_path / "dsf.yaml").write_text(pinned, encoding="utf-8")
    dsf(tmp_path, "render")
    before = rendered_files(tmp_path)
    (tmp_path / "dsf.yaml").write_text(pinned.replace(str(budget), str(budget // 4)))
    shutil.rmtree(tmp_path / "rendered")
    dsf(tmp_path, "render")
    assert rendered_files(tmp_path) == before
    # unpinned again over the budget: refused with the tree there too, naming both ways
    (tmp_path / "dsf.yaml").write_text(f"render:\n  shardBytes: {budget // 4}\n")
    refused = dsf(tmp_path, "render", "--check", expect=2)
    assert "render.shards: 4" in refused.stderr and "render.shards: 16" in refused.stderr
    assert rendered_files(tmp_path) == before
