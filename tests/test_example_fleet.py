"""The repository's own example fleet: its lockfile comes from a real sync, its rendered/ is current."""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from dsf_compile.commands.cli import run
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.manifests import render_manifests
from samples.fleet import running_fleet
from tests.fleet_repo import EXAMPLE_FLEET, copy_fleet


def test_committed_rendered_tree_is_current() -> None:
    """What CI's 'render --check' does: rendered/ in Git equals a fresh render."""
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(EXAMPLE_FLEET), "render", "--check"], out, err)
    assert code == 0, out.getvalue()[:4000]


def test_rendered_files_snapshot(snapshot: SnapshotAssertion) -> None:
    """Review a change of this snapshot like code: it is what lands on the hub."""
    files = render_manifests(plan_fleet(EXAMPLE_FLEET))
    assert files == snapshot


def test_a_real_sync_against_the_samples_reproduces_the_committed_lockfile(tmp_path: Path) -> None:
    repo = copy_fleet(tmp_path / "fleet", with_rendered=False)
    (repo / "dsf.lock.json").unlink()
    with running_fleet({}) as mapping:
        resolve = [f"--resolve={address}:{target}" for address, target in sorted(mapping.items())]
        out, err = io.StringIO(), io.StringIO()
        code = run(["--root", str(repo), "sync", "--strict", *resolve], out, err)
    assert code == 0, err.getvalue()
    assert "5 Active, 0 Inactive; dsf.lock.json updated" in err.getvalue()
    assert (repo / "dsf.lock.json").read_text() == (EXAMPLE_FLEET / "dsf.lock.json").read_text()


def test_sync_of_one_scorer_keeps_the_others(tmp_path: Path) -> None:
    repo = copy_fleet(tmp_path / "fleet", with_rendered=False)
    before = (repo / "dsf.lock.json").read_text()
    with running_fleet({}) as mapping:
        resolve = [f"--resolve={address}:{target}" for address, target in sorted(mapping.items())]
        code = run(
            ["--root", str(repo), "sync", "sample-scorer", *resolve], io.StringIO(), io.StringIO()
        )
    assert code == 0
    assert (repo / "dsf.lock.json").read_text() == before


def test_scorers_that_are_down_become_inactive_and_strict_fails(tmp_path: Path) -> None:
    """No sample is running: sync refuses to write; with --allow-mass-failure every scorer is Inactive."""
    repo = copy_fleet(tmp_path / "fleet", with_rendered=False)
    settings = (repo / "dsf.yaml").read_text() + "sync:\n  timeoutSeconds: 2\n  retries: 0\n"
    (repo / "dsf.yaml").write_text(settings)
    hosts = (
        "sample-scorer.dynamic-scoring.svc",
        "static-scorer.dynamic-scoring.svc",
        "simple-prediction-scorer.dynamic-scoring.svc",
        "llm-forecast.scoring.example.net",
    )
    resolve = [f"--resolve={host}:8000:127.0.0.1:9" for host in hosts]  # port 9 (discard): refused
    # Every scorer Active in the lockfile refused: this machine cannot reach them, so the
    # lockfile stays as it is (a scheduled sync must not propose removing the fleet) ...
    before = (repo / "dsf.lock.json").read_bytes()
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(repo), "sync", *resolve], out, err)
    assert code == 1
    assert "does not seem to reach the scorers" in err.getvalue()
    assert (repo / "dsf.lock.json").read_bytes() == before
    # ... unless told otherwise, once
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--root", str(repo), "sync", "--strict", "--allow-mass-failure", *resolve], out, err
    )
    assert code == 1
    text = err.getvalue()
    assert "0 Active, 5 Inactive" in text
    assert "scorers/sample-scorer.yaml:10:3: warning: spec.configURL: Inactive: " in text
    # render leaves Inactive scorers out, with a warning, and still succeeds
    shutil.copytree(EXAMPLE_FLEET / "rendered", repo / "rendered")
    out, err = io.StringIO(), io.StringIO()
    assert run(["--root", str(repo), "render"], out, err) == 0
    assert "warning: metadata.name: scorer is Inactive" in err.getvalue()
    assert (repo / "rendered/clusters/worker01/manifestwork.yaml").read_text().count('"name"') == 0


@pytest.mark.parametrize("name", ["sample-scorer", "nonexistent"])
def test_sync_names_must_exist(tmp_path: Path, name: str) -> None:
    repo = copy_fleet(tmp_path / "fleet", with_rendered=False)
    with running_fleet({}) as mapping:
        resolve = [f"--resolve={address}:{target}" for address, target in sorted(mapping.items())]
        code = run(["--root", str(repo), "sync", name, *resolve], io.StringIO(), io.StringIO())
    assert code == (0 if name == "sample-scorer" else 2)
