"""The no-op fast path of ``render`` and ``--check`` never hides a difference."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsf_compile.commands.cli import run
from dsf_compile.edges.tree import Tree
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render import fastpath, settle
from dsf_compile.render.fastpath_cache import CACHE
from dsf_compile.render.manifests import render_manifests
from tests.fleet_repo import REPO_ROOT, copy_fleet, run_command


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def rendered_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_fleet(tmp_path_factory.mktemp("fastpath") / "fleet")
    assert cli(root, "render")[0] == 0
    assert (root / CACHE).is_file()
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


# what the cache holds when the edit comes: the lstat of other inodes (a copy), the lstat a
# check recorded, what a full render settled (all files written) and what a render settled
# leaving every file alone
STATES = ["copied", "vouched", "rendered", "re-rendered"]
EDITS = [
    "flip-input-byte",
    "flip-rendered-byte",
    "add-input",
    "drop-rendered",
    "add-owned-line",
    "plant-debris",
]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    edit=st.sampled_from(EDITS),
    pick=st.integers(0, 10_000),
    same_mtime=st.booleans(),
    state=st.sampled_from(STATES),
)
def test_every_edit_is_seen(
    rendered_fleet: Path, tmp_path: Path, edit: str, pick: int, same_mtime: bool, state: str
) -> None:
    root = prepared(rendered_fleet, tmp_path / f"edit-{pick}", state)
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
    elif edit == "plant-debris":
        plant_debris(root, pick)
    else:
        with (root / "rendered/.dsf-files").open("a") as record:
            record.write(f"clusters/ghost-{pick}.yaml\n")
    assert_full_path_decides(root)


def prepared(rendered_fleet: Path, root: Path, state: str) -> Path:
    """A copy of the rendered fleet whose cache is in ``state`` (see :data:`STATES`)."""
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(rendered_fleet, root, copy_function=shutil.copy2)
    if state == "vouched":  # the cache vouches for every file's lstat: no file is read
        vouch_for(root)
    elif state in ("rendered", "re-rendered"):  # the edit comes right after the render
        (root / CACHE).unlink()
        if state == "rendered":  # every file written, none left alone
            shutil.rmtree(root / "rendered")
        assert cli(root, "render")[0] == 0
        assert "stat" in json.loads((root / CACHE).read_text())
    if state in ("copied", "vouched"):
        assert fastpath.unchanged(root) is not None
    return root


def plant_debris(root: Path, pick: int) -> None:
    """A temporary file of dsf's name in one of rendered/'s folders, however deep."""
    folders = sorted(p for p in (root / "rendered").rglob("*") if p.is_dir())
    folder = [root / "rendered", *folders][pick % (len(folders) + 1)]
    (folder / ".manifestwork.yaml.0123456789ab.dsf-tmp").write_text("half\n")


def assert_full_path_decides(root: Path) -> None:
    """The fast path steps aside, and the full path decides as it does with no cache."""
    assert fastpath.unchanged(root) is None
    with_cache = cli(root, "render", "--check")
    (root / CACHE).unlink()
    assert cli(root, "render", "--check") == with_cache


@pytest.mark.parametrize("state", STATES)
def test_debris_planted_deep_in_rendered_is_seen(
    rendered_fleet: Path, tmp_path: Path, state: str
) -> None:
    root = prepared(rendered_fleet, tmp_path / "fleet", state)
    plant_debris(root, pick=5)  # a cluster's folder, below the level the fast path lists
    assert_full_path_decides(root)
    assert cli(root, "render", "--check")[0] == 2


def vouch_for(root: Path) -> None:
    """Bring ``root``'s cache to vouch for the rendered files' lstat (asserted)."""
    past_the_tick(root)  # the files were last changed in an earlier tick
    assert fastpath.unchanged(root) is not None  # reads every file, records their lstat
    assert_unchanged_reading_no_file(root)


def past_the_tick(root: Path) -> None:
    """Wait until the file system's clock has ticked past every change made under
    ``root`` so far (the render's own wait: a condition, not a duration)."""
    clock = settle.Clock(root / "rendered")  # its clock folder beside rendered/
    try:
        assert settle.next_tick(clock) is not None, "a file system with coarse timestamps"
    finally:
        clock.close()


def assert_unchanged_reading_no_file(root: Path) -> None:
    real = fastpath._rendered_digest
    fastpath._rendered_digest = _must_not_read
    try:
        assert fastpath.unchanged(root) is not None
    finally:
        fastpath._rendered_digest = real


def _must_not_read(*_: object, **__: object) -> str:
    raise AssertionError("a rendered file was read although the cache vouches for it")


def test_the_first_check_after_a_render_reads_no_file(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    run_command(root, "render")  # a whole command, as a user runs it: every file written
    assert set(json.loads((root / CACHE).read_text())["stat"]) == {"digest", "stamp"}
    assert not list((root / ".dsf-cache").glob(".*.tmp"))  # the probe became the cache
    assert not list((root / ".dsf-cache").glob(".stamp.*"))  # the stamps are removed
    assert_unchanged_reading_no_file(root)
    assert run_command(root, "render", "--check").stdout == ""


def test_a_file_changed_after_the_first_stamp_is_read_again(tmp_path: Path) -> None:
    # a file left alone is vouched for by the lstat taken when it was compared only if it
    # had not changed since the first stamp: else a second change in that same clock tick,
    # restoring size and mtime, would leave the same lstat
    root = copy_fleet(tmp_path / "fleet")
    assert cli(root, "render")[0] == 0
    files = render_manifests(plan_fleet(root))
    tree = Tree.open(root / "rendered", create=False)
    clock = settle.Clock(root / "rendered")
    try:
        first = clock.stamp()
        assert first is not None
        same = {p: os.lstat(root / "rendered" / p) for p in files}
        settled = settle.settle(tree, clock, files, same, first)
        assert settled is not None and set(settled.stats) == {*files, ".dsf-files"}
        target = sorted(p for p in files if p.startswith("clusters/"))[0]
        data = bytearray((root / "rendered" / target).read_bytes())
        data[-2] = ord("x") if data[-2] != ord("x") else ord("y")
        (root / "rendered" / target).write_bytes(bytes(data))
        same[target] = os.lstat(root / "rendered" / target)  # as if compared in that tick
        assert settle.settle(tree, clock, files, same, first) is None
    finally:
        tree.close()
        clock.close()


@pytest.mark.parametrize("leave_alone", [False, True], ids=["written", "left-alone"])
def test_an_edit_while_the_render_settles_is_never_vouched_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leave_alone: bool
) -> None:
    # the narrowest window: an edit (same size, mtime restored) after the renames, before
    # the render looks at the files again; then one between its lstat and its read
    for when in ("before-lstat", "after-lstat"):
        root = copy_fleet(tmp_path / f"{when}-{leave_alone}", with_rendered=leave_alone)
        past_the_tick(root)  # the copied files were written in an earlier tick
        edited = [False]

        def edit(root: Path = root, edited: list[bool] = edited) -> None:
            if edited[0]:
                return
            edited[0] = True
            target = sorted((root / "rendered/clusters").rglob("*.yaml"))[0]
            info = target.stat()
            data = bytearray(target.read_bytes())
            data[-2] = ord("x") if data[-2] != ord("x") else ord("y")
            target.write_bytes(bytes(data))
            os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))

        monkeypatch.setattr(settle, "next_tick", editing_after(settle.next_tick, edit, when))
        if when == "after-lstat":
            # after the compare's read (a file left alone) or the read-back (one written)
            monkeypatch.setattr(Tree, "read", reading_after(Tree.read, edit))
            monkeypatch.setattr(settle, "read_back", reading_after(settle.read_back, edit))
        assert cli(root, "render")[0] == 0
        monkeypatch.undo()
        assert edited[0]
        assert fastpath.unchanged(root) is None, when
        code, out, _ = cli(root, "render", "--check")
        assert code == 1 and "changed: rendered/clusters/" in out


def editing_after(real: Any, edit: Any, when: str) -> Any:
    def wrapped(clock: Any) -> Any:
        if when == "before-lstat":
            edit()  # after every rename, before the stamp: its ctime is earlier than the stamp
        return real(clock)

    return wrapped


def reading_after(real: Any, edit: Any) -> Any:
    def wrapped(tree: Any, relative: str) -> Any:
        found = real(tree, relative)
        if found is not None and relative.startswith("clusters/"):
            edit()  # after this file's lstat and read, before the cache is written
        return found

    return wrapped


def test_a_file_changed_after_the_stamp_is_read_again(rendered_fleet: Path, tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(rendered_fleet, root, copy_function=shutil.copy2)
    vouch_for(root)
    target = next(p for p in sorted((root / "rendered/clusters").rglob("*.yaml")))
    info = target.stat()
    target.write_bytes(target.read_bytes())  # the same bytes: a new ctime, no difference
    os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert fastpath.unchanged(root) is not None  # read again, found equal, vouched again
    vouch_for(root)


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


def imported_by(root: Path, *argv: str) -> tuple[set[str], str]:
    """The modules a whole ``dsf-compile`` command imports (it must succeed), and its stderr."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dsf_compile", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    return {line.split("|")[-1].strip() for line in lines if "|" in line}, result.stderr


@pytest.mark.parametrize(
    "argv", [["render"], ["render", "--check"], ["diff"]], ids=["render", "check", "diff"]
)
def test_the_fast_path_loads_no_model_and_no_yaml(rendered_fleet: Path, argv: list[str]) -> None:
    # what makes a no-op cheap as a whole command: nothing of the full path is imported
    imported, said = imported_by(rendered_fleet, *argv)
    assert "up to date" in said or "0 added, 0 changed, 0 removed" in said
    heavy = {
        "pydantic",
        "yaml",
        "jsonschema",
        "dsf_compile.pipeline.inputs",
        "dsf_compile.inputs.load",
    }
    assert not imported & heavy


def test_a_fleet_without_placements_renders_without_the_scheduler(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    shutil.rmtree(root / "placements")
    imported, _ = imported_by(root, "render")
    assert "dsf_compile.render.manifests" in imported  # the full path ran
    placement = {
        "dsf_compile.inputs.placements",
        "dsf_compile.inputs.optimization",
        "dsf_compile.placement.scheduler",
        "dsf_compile.placement.checks",
    }
    assert not imported & placement


def test_validate_loads_the_cel_interpreter_without_its_interactive_shell(tmp_path: Path) -> None:
    # common-expression-language's package imports its shell (typer, prompt_toolkit,
    # rich: 0.2 s) before the interpreter; the placement checks load the interpreter alone
    root = copy_fleet(tmp_path / "fleet")
    imported, _ = imported_by(root, "validate")
    assert "dsf_compile.placement.checks" in imported  # the fleet's Placements were checked
    assert not imported & {"cel", "cel.cli", "typer", "prompt_toolkit", "rich"}


def test_the_digest_of_what_was_written_equals_the_digest_of_the_disk(
    rendered_fleet: Path,
) -> None:
    files = render_manifests(plan_fleet(rendered_fleet))
    from_disk = fastpath._rendered_digest(rendered_fleet)
    assert fastpath._rendered_digest(rendered_fleet, files) == from_disk
    assert fastpath._rendered_digest(rendered_fleet, {**files, "crds/x.yaml": "?"}) == from_disk
    some = sorted(files)[len(files) // 2]
    assert fastpath._rendered_digest(rendered_fleet, {some: files[some] + "#"}) != from_disk
