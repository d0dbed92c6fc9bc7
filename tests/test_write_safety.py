"""write: ``rendered/`` is hostile input, updates are all-or-nothing, renders are serialised.

Each test plants what a pull request can commit (links, FIFOs, folders where files
belong) in a temporary repository, with files outside it that must stay untouched and
unprinted.
"""

from __future__ import annotations

import fcntl
import io
import os
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.edges import journal
from dsf_compile.errors import RenderError
from dsf_compile.render.changes_text import changes_markdown, changes_text
from dsf_compile.render.record import RECORD
from dsf_compile.render.write import compare_tree, write_tree
from tests.file_faults import fail_at
from tests.fleet_repo import copy_fleet

SECRET = "SECRET-MARKER-7f3a"


def _run(root: Path, *command: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *command], out, err)
    return code, out.getvalue(), err.getvalue()


def _tree(folder: Path) -> dict[str, str | bytes]:
    """Every entry under ``folder`` without following links or opening special files."""
    found: dict[str, str | bytes] = {}
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = Path(parent, name)
            relative = path.relative_to(folder).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                found[relative] = "-> " + os.readlink(path)
            elif stat.S_ISREG(mode):
                found[relative] = path.read_bytes()
            else:
                found[relative] = "dir" if stat.S_ISDIR(mode) else "special"
    return found


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder beside the repository with a secret file in it."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "id_rsa").write_text(f"{SECRET}\n")
    return folder


def _first_error(err: str) -> str:
    return err.splitlines()[0]


# ------------------------------------------------------------------ links


def _refused(command: list[str]) -> int:
    """The exit code of a refusal: ``render`` 1; ``render --check`` and ``diff`` could not
    compare, 2."""
    return 1 if command == ["render"] else 2


def test_a_linked_folder_named_in_the_record_is_refused(fleet: Path, outside: Path) -> None:
    rendered = fleet / "rendered"
    (rendered / "x").symlink_to(outside)
    with (rendered / RECORD).open("a") as record:
        record.write("x/id_rsa\n")
    before = _tree(rendered)
    code, out, err = _run(fleet, "render")
    assert code == 1
    assert _first_error(err).startswith("rendered/x:0:0: error: is a symbolic link")
    assert (outside / "id_rsa").read_text() == f"{SECRET}\n"
    assert _tree(rendered) == before
    for command in (["render", "--check"], ["diff"], ["diff", "--format", "markdown"]):
        code, out, err = _run(fleet, *command)
        assert code == _refused(command) and SECRET not in out + err
        assert "rendered/x:0:0: error: is a symbolic link" in err


def test_a_linked_cluster_folder_receives_nothing(fleet: Path, outside: Path) -> None:
    rendered = fleet / "rendered"
    target = outside / "worker01"
    (rendered / "clusters/worker01").rename(target)
    (rendered / "clusters/worker01").symlink_to(target)
    for file in target.iterdir():  # stale, so that render would rewrite them
        file.write_text("stale\n")
    before = _tree(outside)
    code, _, err = _run(fleet, "render")
    assert code == 1
    assert _first_error(err).startswith("rendered/clusters/worker01:0:0: error: is a symbolic")
    assert _tree(outside) == before


def test_rendered_itself_as_a_link_is_refused(fleet: Path, outside: Path) -> None:
    (fleet / "rendered").rename(outside / "rendered")
    (fleet / "rendered").symlink_to(outside / "rendered")
    (outside / "rendered/kustomization.yaml").write_text("stale\n")
    before = _tree(outside)
    for command in (["render"], ["render", "--check"], ["diff"]):
        code, out, err = _run(fleet, *command)
        assert code == _refused(command)
        assert _first_error(err).startswith("rendered:0:0: error: is a symbolic link")
        assert "stale" not in out
    assert _tree(outside) == before


def test_the_record_as_a_link_is_refused(fleet: Path, outside: Path) -> None:
    record = fleet / "rendered" / RECORD
    (outside / "record").write_bytes(record.read_bytes())
    record.unlink()
    record.symlink_to(outside / "record")
    code, _, err = _run(fleet, "render")
    assert code == 1
    assert _first_error(err).startswith("rendered/.dsf-files:0:0: error: is a symbolic link")
    assert record.is_symlink()


def test_a_link_at_a_staging_name_is_never_written_through(fleet: Path, outside: Path) -> None:
    rendered = fleet / "rendered"
    current = (rendered / "kustomization.yaml").read_bytes()
    (rendered / "kustomization.yaml").write_text("stale\n")
    for name in (".kustomization.yaml.dsf-tmp", ".kustomization.yaml.tmp"):
        (rendered / name).symlink_to(outside / "id_rsa")
    code, _, err = _run(fleet, "render")
    assert code == 0, err
    assert (rendered / "kustomization.yaml").read_bytes() == current
    assert (outside / "id_rsa").read_text() == f"{SECRET}\n"
    assert (rendered / ".kustomization.yaml.dsf-tmp").is_symlink()  # not ours: left alone


# ------------------------------------------------------------- check and diff


@pytest.mark.parametrize("command", [["render", "--check"], ["diff", "--format", "markdown"]])
def test_check_never_prints_a_file_outside_the_root(
    fleet: Path, outside: Path, command: list[str]
) -> None:
    file = fleet / "rendered/hub/kustomization.yaml"
    file.unlink()
    file.symlink_to(outside / "id_rsa")
    code, out, err = _run(fleet, *command)
    assert code == _refused(command)
    assert SECRET not in out + err
    assert "rendered/hub/kustomization.yaml:0:0: error: is a symbolic link" in err


@pytest.mark.timeout(30)  # opening the FIFO for reading would hang
@pytest.mark.parametrize(
    ("make", "kind"),
    [(os.mkfifo, "a FIFO"), (os.mkdir, "a directory")],
    ids=["fifo", "directory"],
)
def test_a_special_file_where_a_file_belongs_is_an_error(
    fleet: Path, make: Callable[[Path], None], kind: str
) -> None:
    file = fleet / "rendered/hub/kustomization.yaml"
    file.unlink()
    make(file)
    for command in (["render"], ["render", "--check"], ["diff"]):
        code, out, err = _run(fleet, *command)
        assert code == _refused(command)
        assert f"rendered/hub/kustomization.yaml:0:0: error: is {kind}, not a regular" in err
        assert "\x00" not in out


def test_a_file_that_is_not_utf8_is_reported_not_shown(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
    (tmp_path / "a.yaml").write_bytes(b"\xff\xfe binary\n")
    changes = compare_tree(tmp_path, {"a.yaml": "a: 1\n"})
    assert list(changes.changed) == ["a.yaml"]
    assert list(changes.removed) == ["b.yaml"]
    for printer in (changes_text, changes_markdown):
        text = printer(changes)
        assert "\x00" not in text and "binary" not in text and "unreadable" not in text
        assert "the current file is not shown: it is not UTF-8 text" in text
    assert write_tree(tmp_path, {"a.yaml": "a: 1\n"}).changed
    assert (tmp_path / "a.yaml").read_text() == "a: 1\n"


def test_a_foreign_file_is_compared_but_never_shown(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(f"{SECRET}\n")
    changes = compare_tree(tmp_path, {"a.yaml": "a: 1\n"})
    text = changes_text(changes) + changes_markdown(changes)
    assert SECRET not in text
    assert "not written by dsf-compile" in text


# ------------------------------------------------------------------ modes


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("umask_022")
def test_written_files_are_0644_under_umask_022(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    code, _, err = _run(root, "render")
    assert code == 0, err
    code, _, err = _run(root, "schemas")
    assert code == 0, err
    from dsf_compile.sync.lock import read_lockfile, write_lockfile

    lock, problems = read_lockfile(root)
    assert not problems
    (root / "dsf.lock.json").unlink()
    write_lockfile(root, lock)
    files = [
        root / "dsf.lock.json",
        root / "rendered" / RECORD,
        root / "rendered/kustomization.yaml",
        *(root / "schemas").iterdir(),
    ]
    assert {f.name: oct(stat.S_IMODE(f.stat().st_mode)) for f in files} == {
        f.name: "0o644" for f in files
    }


def test_rendered_as_a_regular_file_is_named(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    (root / "rendered").write_text("not a folder\n")
    code, _, err = _run(root, "render")
    assert code == 1
    assert _first_error(err) == (
        "rendered:0:0: error: is a regular file, not a directory; remove it and render again"
    )


# ----------------------------------------------------- locking and all-or-nothing


def test_concurrent_renders_all_succeed_and_leave_one_renders_tree(tmp_path: Path) -> None:
    reference = copy_fleet(tmp_path / "reference", with_rendered=False)
    assert _run(reference, "render")[0] == 0
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    start = threading.Barrier(4)
    results: list[tuple[int, str, str]] = []

    def render() -> None:
        start.wait()
        results.append(_run(root, "render"))

    threads = [threading.Thread(target=render) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [code for code, _, _ in results] == [0, 0, 0, 0], [err for _, _, err in results]
    assert _tree(root / "rendered") == _tree(reference / "rendered")
    assert _run(root, "render", "--check")[0] == 0


def test_a_render_waits_for_the_lock_and_then_fails_cleanly(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rendered = fleet / "rendered"
    (rendered / "kustomization.yaml").write_text("stale\n")
    before = _tree(rendered)
    monkeypatch.setattr(journal, "LOCK_WAIT_SECONDS", 0.2)
    holder = os.open(rendered, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)
        code, _, err = _run(fleet, "render")
    finally:
        os.close(holder)
    assert code == 2
    assert "another dsf-compile is writing rendered/; gave up waiting after 0.2 s" in err
    assert _tree(rendered) == before
    assert _run(fleet, "render")[0] == 0
    assert _tree(rendered).keys() == before.keys()  # no lock file, nothing extra


OLD = {"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "c.yaml": "c: 1\n", "d/x.yaml": "x: 1\n"}
NEW = {"a.yaml": "a: 2\n", "b.yaml": "b: 1\n", "e/new.yaml": "e: 2\n"}


def test_a_failure_at_any_step_leaves_the_previous_tree_or_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = tmp_path / "expected"
    write_tree(expected, NEW)
    n = 0
    while True:
        n += 1
        folder = tmp_path / f"run{n}"
        write_tree(folder, OLD)
        before = _tree(folder)
        with monkeypatch.context() as patch:
            calls = fail_at(patch, n)
            try:
                changes = write_tree(folder, NEW)
            except RenderError as error:
                assert "Input/output error (injected)" in str(error)
                assert "restored" in str(error) or "intact" in str(error)
                assert _tree(folder) == before, f"failure at operation {n}"
                continue
        # The update went through; only a previous file it could not drop may be left,
        # with the journal that has the next render remove it.
        left = {p for p, v in _tree(folder).items() if v != "dir"} - set(_tree(expected))
        assert {p.rpartition("/")[2] for p in left} == {
            p.rpartition("/")[2] for p in changes.leftovers
        } | ({".dsf-journal"} if left else set())
        assert all(p.endswith((".dsf-old", ".dsf-journal")) for p in left)
        if calls["n"] < n:  # no operation failed: every step has been tried
            assert not left
            break
        if left:  # the next render finishes the update and removes them
            assert write_tree(folder, NEW).recovery.action == "finished"
            assert _tree(folder) == _tree(expected)
    assert n > 8


def test_a_folder_that_cannot_be_written_stops_the_update_before_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path, OLD)
    before = _tree(tmp_path)
    monkeypatch.setattr(os, "access", lambda *args, **kwargs: False)
    with pytest.raises(
        RenderError,
        match=r"rendered is not writable, so rendered/c.yaml cannot be deleted; nothing",
    ):
        write_tree(tmp_path, NEW)
    assert _tree(tmp_path) == before
