"""Rendered files → ``rendered/``: minimal, atomic, and only ever the compiler's own files.

The compiler records the files it owns in ``rendered/.dsf-files``. A render

1. locks ``rendered/`` (a second render waits for the first),
2. compares every rendered file with the tree (files with the same bytes are left alone),
3. checks that every change is possible and stages every new or changed file, and the
   new record, as a new temporary file beside its target,
4. only when all are staged, renames them into place and deletes the owned files that
   are no longer rendered, keeping each previous file under a temporary name until the
   last step succeeded; on any failure it puts them all back,
5. then settles the tree for the no-op fast path (``fastpath``'s documentation says why
   this is safe): what each file's ``lstat`` was when its bytes were last seen equal to
   the render's, and a stamp that every later change to a file will reach.

So from the outside an update happens completely or not at all. Files the compiler did
not write are never touched.

Here: the lock, the comparison, and the settling. ``rendered/`` is hostile input, opened
without following links (``tree.py``); the record is ``record.py``, the update's
staging and undo ``tree_update.py``; the changes are reported by ``changes_text.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
import time
from pathlib import Path

from dsf_compile.errors import InputError, RenderError
from dsf_compile.files import create_new
from dsf_compile.render.changes import Changes, Settled
from dsf_compile.render.record import RECORD, read_owned
from dsf_compile.render.tree import (
    MAX_READ_BYTES,
    OPEN_DIRECTORY,
    OPEN_FILE,
    RENDERED,
    Tree,
    remove_quietly,
)
from dsf_compile.render.tree_update import Update

_CACHE_FOLDER = ".dsf-cache"
LOCK_WAIT_SECONDS = 60.0
"""How long a render waits for another one writing the same ``rendered/``."""
#: The tree under the name the settling tests reach it by (``tests/test_fastpath.py``).
_Tree = Tree


def _lock(tree: Tree, operation: int) -> None:
    """Lock ``rendered/`` itself (``flock`` on its directory descriptor).

    Locking the directory rather than a lock file adds no file to the tree (nothing for
    ``render --check`` or a GitOps tool to see), follows no link (the descriptor was
    opened with ``O_NOFOLLOW``), and is released by the kernel when the process ends.
    """
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(tree.fds[""], operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise RenderError(
                    f"another dsf-compile is writing {RENDERED}/; gave up waiting after "
                    f"{LOCK_WAIT_SECONDS:g} s"
                ) from None
            time.sleep(0.05)


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
                _lock(tree, fcntl.LOCK_SH)
            return _compare(tree, files)[0]
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
    clock = _Clock(folder)
    try:
        _lock(tree, fcntl.LOCK_EX)
        first = clock.stamp()  # before any file is looked at
        changes, existing, same = _compare(tree, files)
        foreign = sorted(p for p in changes.changed if p not in changes.owned)
        if foreign:
            raise RenderError(
                f"{RENDERED}/{foreign[0]} exists but was not written by dsf-compile; "
                "move it away and render again"
            )
        if not changes.empty or changes.record_stale:
            Update(tree, existing).run(changes, files)
        if first is not None:
            changes.settled = _settle(tree, clock, files, same, first)
        return changes
    except OSError as err:
        raise RenderError(f"cannot update {RENDERED}/: {err}") from err
    finally:
        tree.close()
        clock.close()


# ---------------------------------------------------------------- settling

_TICK_WAIT_SECONDS = 0.05


class _Clock:
    """The file system's clock: the ctime of a new file in ``.dsf-cache/`` beside
    ``rendered/`` (the local, git-ignored cache; each file removed at once, never a file
    in ``rendered/``). Without a usable cache folder it gives no stamp: nothing is settled.
    """

    def __init__(self, folder: Path) -> None:
        self.fd: int | None = None
        try:
            parent = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(_CACHE_FOLDER, 0o777, dir_fd=parent)
                self.fd = os.open(_CACHE_FOLDER, OPEN_DIRECTORY, dir_fd=parent)  # never a link
            finally:
                os.close(parent)
        except OSError:
            pass

    def stamp(self) -> os.stat_result | None:
        if self.fd is None:
            return None
        try:
            fd, name = create_new(".stamp.", ".tmp", dir_fd=self.fd)
        except OSError:
            return None
        try:
            return os.fstat(fd)
        finally:
            os.close(fd)
            remove_quietly(name, self.fd)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _next_tick(clock: _Clock) -> os.stat_result | None:
    """A stamp later than every change made before this call (bounded wait for the clock's
    next tick: a file system with coarse timestamps gives None)."""
    now = clock.stamp()
    deadline = time.monotonic() + _TICK_WAIT_SECONDS
    while now is not None and time.monotonic() < deadline:
        later = clock.stamp()
        if later is None or later.st_ctime_ns > now.st_ctime_ns:
            return later
        time.sleep(0.0005)
    return None


def _settle(
    tree: Tree,
    clock: _Clock,
    files: dict[str, str],
    same: dict[str, os.stat_result],
    first: os.stat_result,
) -> Settled | None:
    """What the first no-op check after this render would record, without reading it all.

    A file left alone was read and found equal after ``first`` was taken, lstat before the
    read: if its ctime is earlier than ``first``, any later change moves it past what was
    recorded. Every other file (written, or changed while it was compared) and the record
    are read again after a stamp later than every rename, stat before the read, exactly
    as :func:`dsf_compile.render.fastpath.unchanged` does; equal bytes settle them.
    None when anything differs or is not on the stamp's file system.
    """
    stats = {
        relative: info
        for relative, info in same.items()
        if info.st_ctime_ns < first.st_ctime_ns and info.st_dev == first.st_dev
    }
    texts = {relative: files[relative] for relative in stats}
    stamp = _next_tick(clock)
    if stamp is None:
        return None
    for relative in [*(p for p in files if p not in stats), RECORD]:
        found = _read_back(tree, relative)
        if found is None or found[0].st_dev != stamp.st_dev:
            return None
        info, data = found
        text = files.get(relative)
        if text is None:  # the record: what it holds is what a check would hash
            try:
                text = data.decode("ascii")
            except UnicodeDecodeError:
                return None
        elif data != text.encode("utf-8"):
            return None
        stats[relative], texts[relative] = info, text
    return Settled(stamp.st_ctime_ns, stats, texts)


def _read_back(tree: Tree, relative: str) -> tuple[os.stat_result, bytes] | None:
    """A regular file's ``fstat`` (taken before the read) and bytes, in one read; None for
    anything else (a link is refused by the open, a FIFO does not block it, a file whose
    size changes under the read is not settled)."""
    try:  # best effort: settling never fails a render that has succeeded
        folder, name = tree.locate(relative)
        if folder is None:
            return None
        fd = os.open(name, OPEN_FILE, dir_fd=folder)
    except (OSError, InputError):
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_READ_BYTES:
            return None
        data = os.read(fd, info.st_size + 1)
        return (info, data) if len(data) == info.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)
