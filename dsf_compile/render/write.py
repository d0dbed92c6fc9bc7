"""Rendered files → ``rendered/``: minimal, atomic, and only ever the compiler's own files.

The compiler records the files it owns in ``rendered/.dsf-files``. A render

1. locks ``rendered/`` (a second render waits for the first) and finishes or undoes
   what a killed render left (``dsf_compile.edges.journal``),
2. compares every rendered file with the tree (files with the same bytes are left alone),
3. checks that every change is possible and stages every new or changed file, and the
   new record, as a new temporary file beside its target,
4. only when all are staged, renames them into place and deletes the owned files that
   are no longer rendered, keeping each previous file under a temporary name until the
   last step succeeded; on any failure it puts them all back,
5. then settles the tree for the no-op fast path (``fastpath``'s documentation says why
   this is safe): what each file's ``lstat`` was when its bytes were last seen equal to
   the render's, and a stamp that every later change to a file will reach.

So from the outside an update happens completely or not at all, also when the process is
killed: the journal (``dsf_compile.edges.journal``) lets the next run finish or undo it. Files the compiler did
not write are never touched.

Here: the comparison; the lock and the journal are ``dsf_compile.edges.journal``'s; the settling is ``settle.py``. ``rendered/`` is hostile input, opened
without following links (:mod:`dsf_compile.edges.tree`); the record is ``record.py``, the update's
staging and undo ``tree_update.py``; the changes are reported by ``changes_text.py``.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from dsf_compile.edges.journal import inspect, lock, recover
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.tree import RENDERED, Tree
from dsf_compile.errors import RenderError
from dsf_compile.render.changes import Changes
from dsf_compile.render.record import read_owned
from dsf_compile.render.settle import Clock, settle
from dsf_compile.render.tree_update import update_tree

#: What a journal in ``rendered/`` may name: any file of it (the record among them).
RENDER_SCOPE = Ownership.folder("render", RENDERED)

# ---------------------------------------------------------------- comparing


def _compare(
    tree: Tree, files: dict[str, str]
) -> tuple[Changes, set[str], dict[str, os.stat_result]]:
    """The changes, the paths where a file exists now, and the lstat of the owned files
    found with the rendered bytes."""
    owned, present = read_owned(tree) if tree.exists else (set(), False)
    changes = Changes(owned=owned)
    existing: set[str] = set()
    same: dict[str, os.stat_result] = {}
    found_info: dict[str, os.stat_result] = {}

    def current(relative: str) -> str | None:
        found = tree.read(relative) if tree.exists else None
        if found is None:
            return None
        existing.add(relative)
        if found.info is not None:
            found_info[relative] = found.info
        if found.data is None:
            changes.hidden[relative] = found.reason
            return ""
        if relative not in owned:
            changes.hidden[relative] = "it was not written by dsf-compile"
            return found.data.decode("utf-8", "replace")  # compared, never shown
        try:
            return found.data.decode("utf-8")
        except UnicodeDecodeError:
            changes.hidden[relative] = "it is not UTF-8 text"
            return ""

    for relative, text in files.items():
        old = current(relative)
        if old is None:
            changes.added[relative] = text
        elif old != text or (relative in changes.hidden and relative in owned):
            changes.changed[relative] = (old, text)
        else:
            changes.hidden.pop(relative, None)  # same bytes: nothing to show or hide
            if relative in owned:
                same[relative] = found_info[relative]
    for relative in sorted(owned - set(files)):
        old = current(relative)
        if old is not None:
            changes.removed[relative] = old
    changes.record_stale = not present or owned != set(files)
    return changes, existing, same


def compare_tree(folder: Path, files: dict[str, str]) -> Changes:
    """Compare rendered ``files`` with ``folder`` without writing anything."""
    try:
        tree = Tree.open(folder, create=False)
        try:
            if tree.exists:
                lock(tree, fcntl.LOCK_SH, RenderError)
            changes = _compare(tree, files)[0]
            changes.debris = inspect(tree)
            return changes
        finally:
            tree.close()
    except OSError as err:
        raise RenderError(f"cannot read {RENDERED}/: {err}") from err


# ---------------------------------------------------------------- writing


def write_tree(folder: Path, files: dict[str, str]) -> Changes:
    """Bring ``folder`` to exactly ``files`` (for the files the compiler owns), all or nothing."""
    try:
        tree = Tree.open(folder, create=True)
    except OSError as err:
        raise RenderError(f"cannot open {RENDERED}/: {err}") from err
    clock = Clock(folder)
    try:
        lock(tree, fcntl.LOCK_EX, RenderError)
        # what a killed render left, before anything is compared
        recovery = recover(tree, RENDER_SCOPE)
        first = clock.stamp()  # before any file is looked at
        changes, existing, same = _compare(tree, files)
        foreign = sorted(p for p in changes.changed if p not in changes.owned)
        if foreign:
            raise RenderError(
                f"{RENDERED}/{foreign[0]} exists but was not written by dsf-compile; "
                "move it away and render again"
            )
        changes.recovery = recovery
        if not changes.empty or changes.record_stale:
            update_tree(tree, existing, changes, files)
        if first is not None:
            changes.settled = settle(tree, clock, files, same, first)
        return changes
    except OSError as err:
        raise RenderError(f"cannot update {RENDERED}/: {err}") from err
    finally:
        tree.close()
        clock.close()
