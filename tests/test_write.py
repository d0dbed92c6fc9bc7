"""write: minimal, atomic, and only the compiler's own files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dsf_compile.errors import RenderError
from dsf_compile.render.changes_text import changes_markdown, changes_text
from dsf_compile.render.record import RECORD
from dsf_compile.render.write import compare_tree, write_tree


def snapshot_tree(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_first_write_then_nothing_to_do(tmp_path: Path) -> None:
    files = {"a/one.yaml": "one: 1\n", "two.yaml": "two: 2\n"}
    changes = write_tree(tmp_path, files)
    assert sorted(changes.added) == ["a/one.yaml", "two.yaml"]
    assert (tmp_path / "a/one.yaml").read_text() == "one: 1\n"
    assert (tmp_path / RECORD).read_text().splitlines()[1:] == ["a/one.yaml", "two.yaml"]
    before = snapshot_tree(tmp_path)
    assert write_tree(tmp_path, files).empty
    assert snapshot_tree(tmp_path) == before  # same bytes and same mtimes: nothing rewritten


def test_only_changed_files_are_rewritten(tmp_path: Path) -> None:
    write_tree(tmp_path, {"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"})
    os.utime(tmp_path / "a.yaml", ns=(1, 1))
    changes = write_tree(tmp_path, {"a.yaml": "a: 1\n", "b.yaml": "b: 2\n"})
    assert list(changes.changed) == ["b.yaml"]
    assert (tmp_path / "a.yaml").stat().st_mtime_ns == 1
    assert (tmp_path / "b.yaml").read_text() == "b: 2\n"


def test_removed_files_are_deleted_but_foreign_files_are_never_touched(tmp_path: Path) -> None:
    write_tree(tmp_path, {"clusters/old/work.yaml": "x\n", "keep.yaml": "k\n"})
    (tmp_path / "clusters/old/notes.txt").write_text("mine")
    (tmp_path / "README.md").write_text("mine too")
    changes = write_tree(tmp_path, {"keep.yaml": "k\n"})
    assert list(changes.removed) == ["clusters/old/work.yaml"]
    assert not (tmp_path / "clusters/old/work.yaml").exists()
    assert (tmp_path / "clusters/old/notes.txt").read_text() == "mine"
    assert (tmp_path / "README.md").read_text() == "mine too"


def test_emptied_folders_are_pruned(tmp_path: Path) -> None:
    write_tree(tmp_path, {"clusters/gone/work.yaml": "x\n", "keep.yaml": "k\n"})
    write_tree(tmp_path, {"keep.yaml": "k\n"})
    assert not (tmp_path / "clusters").exists()


def test_a_foreign_file_in_the_way_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("someone else's\n")
    with pytest.raises(RenderError, match="was not written by dsf-compile"):
        write_tree(tmp_path, {"a.yaml": "ours\n"})
    assert (tmp_path / "a.yaml").read_text() == "someone else's\n"


def test_a_failure_while_staging_leaves_the_previous_tree_intact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path, {"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "c.yaml": "c: 1\n"})
    before = snapshot_tree(tmp_path)
    real_fdopen = os.fdopen
    calls = {"n": 0}

    def failing_fdopen(fd: int, mode: str = "r") -> object:
        calls["n"] += 1
        if calls["n"] == 2:
            os.close(fd)
            raise OSError(28, "No space left on device")
        return real_fdopen(fd, mode)

    monkeypatch.setattr(os, "fdopen", failing_fdopen)
    with pytest.raises(RenderError, match="previous tree is intact"):
        write_tree(tmp_path, {"a.yaml": "a: 2\n", "b.yaml": "b: 2\n", "d.yaml": "d: 2\n"})
    assert snapshot_tree(tmp_path) == before
    assert not list(tmp_path.rglob("*.dsf-tmp"))


def test_compare_and_format(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            "x.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\ndata: 1\n",
            "gone.yaml": "g\n",
        },
    )
    changes = compare_tree(
        tmp_path,
        {
            "x.yaml": "kind: ConfigMap\nmetadata:\n  name: x\n  namespace: ns\ndata: 2\n",
            "new.yaml": "n\n",
        },
    )
    assert (list(changes.added), list(changes.changed), list(changes.removed)) == (
        ["new.yaml"],
        ["x.yaml"],
        ["gone.yaml"],
    )
    text = changes_text(changes)
    assert "changed: rendered/x.yaml  ConfigMap ns/x\n" in text
    assert "-data: 1\n+data: 2\n" in text
    markdown = changes_markdown(changes)
    assert "| changed | `rendered/x.yaml` | ConfigMap ns/x |" in markdown
    assert "```diff" in markdown
