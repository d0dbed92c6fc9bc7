"""The no-op fast path of ``render`` and ``--check`` never hides a difference."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsf_compile.cli import run
from dsf_compile.pipeline import plan_fleet
from dsf_compile.render import fastpath
from dsf_compile.render.manifests import render_manifests
from tests.fleet_repo import REPO_ROOT, copy_fleet


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def rendered_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_fleet(tmp_path_factory.mktemp("fastpath") / "fleet")
    assert cli(root, "render")[0] == 0
    assert (root / fastpath.CACHE).is_file()
    return root


def test_an_unchanged_tree_takes_the_fast_path_and_says_the_same(rendered_fleet: Path) -> None:
    said = fastpath.unchanged(rendered_fleet)
    assert said is not None
    code, out, err = cli(rendered_fleet, "render")
    assert code == 0 and out == ""
    assert err.endswith(
        f"rendered {said.files} file(s) for 3 cluster(s): 0 added, 0 changed, 0 removed\n"
    )
    assert cli(rendered_fleet, "render", "--check")[:2] == (0, "")
    code, out, _ = cli(rendered_fleet, "diff", "--format", "markdown")
    assert code == 0 and "No change to `rendered/`." in out


EDITS = ["flip-input-byte", "flip-rendered-byte", "add-input", "drop-rendered", "add-owned-line"]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edit=st.sampled_from(EDITS), pick=st.integers(0, 10_000), same_mtime=st.booleans())
def test_every_edit_is_seen(
    rendered_fleet: Path, tmp_path: Path, edit: str, pick: int, same_mtime: bool
) -> None:
    root = tmp_path / f"edit-{pick}"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(rendered_fleet, root, copy_function=shutil.copy2)
    assert fastpath.unchanged(root) is not None
    if edit in ("flip-input-byte", "flip-rendered-byte"):
        folder = root / ("scorers" if edit == "flip-input-byte" else "rendered")
        files = sorted(p for p in folder.rglob("*") if p.is_file())
        target = files[pick % len(files)]
        info = target.stat()
        data = bytearray(target.read_bytes())
        index = pick % len(data)
        data[index] = ord("x") if data[index] != ord("x") else ord("y")  # same size
        target.write_bytes(bytes(data))
        if same_mtime:  # an edit that keeps size and mtime
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    elif edit == "add-input":
        (root / "placements" / f"extra-{pick}.yaml").write_text("# nothing yet\n")
    elif edit == "drop-rendered":
        files = sorted(p for p in (root / "rendered/clusters").rglob("*.yaml"))
        files[pick % len(files)].unlink()
    else:
        with (root / "rendered/.dsf-files").open("a") as record:
            record.write(f"clusters/ghost-{pick}.yaml\n")
    assert fastpath.unchanged(root) is None
    # and the full path decides exactly as it does without any cache
    with_cache = cli(root, "render", "--check")
    (root / fastpath.CACHE).unlink()
    assert cli(root, "render", "--check") == with_cache


def test_a_record_line_leaving_rendered_is_never_read(rendered_fleet: Path, tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(rendered_fleet, root, copy_function=shutil.copy2)
    (tmp_path / "outside.yaml").write_text("not the compiler's\n")
    with (root / "rendered/.dsf-files").open("a") as record:
        record.write("../../outside.yaml\n")
    digest = fastpath.inputs_digest(root)
    assert digest is not None
    fastpath.remember(root, digest, fastpath.Remembered(1, 1, ()))
    assert fastpath.unchanged(root) is None


def test_a_linked_cluster_folder_is_not_vouched_for(rendered_fleet: Path, tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(rendered_fleet, root, copy_function=shutil.copy2)
    folder = next(p for p in sorted((root / "rendered/clusters").iterdir()) if p.is_dir())
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy, copy_function=shutil.copy2)  # same bytes, same mtimes
    shutil.rmtree(folder)
    folder.symlink_to(copy, target_is_directory=True)
    assert fastpath.unchanged(root) is None


def test_the_libraries_that_encode_the_output_are_part_of_the_digest(
    rendered_fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = fastpath.inputs_digest(rendered_fleet)
    real = fastpath._installed
    monkeypatch.setattr(
        fastpath, "_installed", lambda name: real(name) + ("+new" if name == "yaml" else "")
    )
    assert fastpath.inputs_digest(rendered_fleet) != before


@pytest.mark.parametrize(
    "argv", [["render"], ["render", "--check"], ["diff"]], ids=["render", "check", "diff"]
)
def test_the_fast_path_loads_no_model_and_no_yaml(rendered_fleet: Path, argv: list[str]) -> None:
    # what makes a no-op cheap as a whole command: nothing of the full path is imported
    result = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "dsf_compile",
            "--root",
            str(rendered_fleet),
            *argv,
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert "up to date" in result.stderr or "0 added, 0 changed, 0 removed" in result.stderr
    imported = {line.split("|")[-1].strip() for line in result.stderr.splitlines() if "|" in line}
    heavy = {"pydantic", "yaml", "jsonschema", "dsf_compile.pipeline", "dsf_compile.inputs.load"}
    assert not imported & heavy


def test_the_digest_of_what_was_written_equals_the_digest_of_the_disk(
    rendered_fleet: Path,
) -> None:
    files = render_manifests(plan_fleet(rendered_fleet))
    from_disk = fastpath._rendered_digest(rendered_fleet)
    assert fastpath._rendered_digest(rendered_fleet, files) == from_disk
    assert fastpath._rendered_digest(rendered_fleet, {**files, "crds/x.yaml": "?"}) == from_disk
    some = sorted(files)[len(files) // 2]
    assert fastpath._rendered_digest(rendered_fleet, {some: files[some] + "#"}) != from_disk
