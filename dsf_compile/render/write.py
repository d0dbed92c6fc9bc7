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

``rendered/`` comes from a pull request, so it is hostile input: a committed symbolic
link (``rendered/x -> ~/.ssh``), a FIFO or a directory may stand where a rendered file
or folder should be. The compiler never reads, writes or deletes through a link, never
opens anything but a regular file, and never prints the bytes of a file it did not
write. Every access goes through a descriptor of an already opened directory
(``openat``-style ``dir_fd`` calls) opened with ``O_NOFOLLOW``, so a link swapped in
between a check and a use is refused by the kernel instead of followed.
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import fcntl
import os
import re
import secrets
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from dsf_compile.errors import InputError, RenderError
from dsf_compile.files import create_new
from dsf_compile.render.shards import files_by_shard
from dsf_contract.escaping import code_fence, markdown, terminal
from dsf_contract.problem import Problem

RENDERED = "rendered"
RECORD = ".dsf-files"
_RECORD_HEADER = "# Files written by dsf-compile; it deletes only these. Do not edit.\n"
_STAGED = ".dsf-tmp"
_CACHE_FOLDER = ".dsf-cache"
_BACKUP = ".dsf-old"
LOCK_WAIT_SECONDS = 60.0
"""How long a render waits for another one writing the same ``rendered/``."""
MAX_READ_BYTES = 64 << 20

# A path the compiler writes: plain names, none hidden (so never ``.``, ``..``, the record
# or a staged file), ``/`` between them. Anything else in the record was not written by it.
_OWNED_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*\Z")
_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: should a FIFO be swapped in after the lstat, opening it does not hang.
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(frozen=True)
class Settled:
    """The tree right after a render, as a check would have found it (see :func:`_settle`).

    ``stats``: every file ``rendered/`` owns and its record, with what ``lstat`` said of it
    when its bytes were last found equal to ``texts`` (its text); ``stamp``: a ctime that
    every change to one of them after that ``lstat`` reaches or passes.
    """

    stamp: int
    stats: dict[str, os.stat_result]
    texts: dict[str, str]


@dataclass
class Changes:
    """What a render would do to the tree, file by file.

    ``hidden`` names the files whose current bytes must not be shown, and why (not
    UTF-8, unreadable, or not written by the compiler); their "old" text is empty.
    ``leftovers`` are temporary files an otherwise complete update could not remove.
    """

    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    record_stale: bool = False
    owned: set[str] = field(default_factory=set)
    hidden: dict[str, str] = field(default_factory=dict)
    leftovers: list[str] = field(default_factory=list)
    settled: Settled | None = None

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed"


# ---------------------------------------------------------------- the tree


def _where(key: str) -> str:
    return f"{RENDERED}/{key}" if key else RENDERED


def _refuse(key: str, message: str) -> InputError:
    return InputError([Problem(_where(key), 0, 0, "", message)])


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISREG(mode):
        return "a regular file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _check_kind(key: str, mode: int, want: Callable[[int], bool], what: str) -> None:
    if stat.S_ISLNK(mode):
        raise _refuse(
            key,
            f"is a symbolic link; dsf-compile never follows links in {RENDERED}/: "
            "remove it and render again",
        )
    if not want(mode):
        raise _refuse(key, f"is {_kind(mode)}, not {what}; remove it and render again")


@dataclass(frozen=True)
class _Found:
    """A regular file found at a rendered or owned path: its bytes, or why they are not read."""

    data: bytes | None
    reason: str = ""
    info: os.stat_result | None = None  # lstat before the read


class _Tree:
    """``rendered/`` opened without following links; every access relative to an open directory.

    Why descriptors and not paths: a path is resolved again at every use, so a check
    (``lstat``) followed by a use (``open``, ``unlink``) can be redirected by a link
    created in between. Here each folder is opened once with ``O_NOFOLLOW`` (after an
    ``lstat`` for a clear message) and checked to be the folder that was ``lstat``-ed;
    files are then opened, created (``O_EXCL|O_NOFOLLOW``), renamed and removed by name
    inside that descriptor, so no path component is ever resolved through a link.
    """

    def __init__(self) -> None:
        self.fds: dict[str, int] = {}
        self.made: list[str] = []

    @classmethod
    def open(cls, folder: Path, *, create: bool) -> _Tree:
        tree = cls()
        parent = os.open(folder.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fd = tree._open_folder(parent, folder.name, "", create)
        finally:
            os.close(parent)
        if fd is not None:
            tree.fds[""] = fd
            tree.made.clear()  # rendered/ itself is never removed: another render may hold it
        return tree

    @property
    def exists(self) -> bool:
        return "" in self.fds

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds.clear()

    def _open_folder(self, parent: int, name: str, key: str, create: bool) -> int | None:
        try:
            before = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            if not create:
                return None
            try:
                os.mkdir(name, 0o777, dir_fd=parent)
                self.made.append(key)
            except FileExistsError:
                pass
            before = os.stat(name, dir_fd=parent, follow_symlinks=False)
        _check_kind(key, before.st_mode, stat.S_ISDIR, "a directory")
        try:
            fd = os.open(name, _DIRECTORY, dir_fd=parent)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                raise _refuse(key, "changed while dsf-compile was reading it") from err
            raise
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            os.close(fd)
            raise _refuse(key, "changed while dsf-compile was reading it")
        return fd

    def folder(self, key: str, *, create: bool = False) -> int | None:
        """The descriptor of ``rendered/KEY`` (``None`` if it does not exist and not ``create``)."""
        if key in self.fds:
            return self.fds[key]
        parent_key, _, name = key.rpartition("/")
        parent = self.folder(parent_key, create=create)
        if parent is None:
            return None
        fd = self._open_folder(parent, name, key, create)
        if fd is not None:
            self.fds[key] = fd
        return fd

    def locate(self, relative: str, *, create: bool = False) -> tuple[int | None, str]:
        """The descriptor of the folder holding ``relative``, and the file's name in it."""
        parent_key, _, name = relative.rpartition("/")
        return self.folder(parent_key, create=create), name

    def read(self, relative: str) -> _Found | None:
        """The regular file at ``relative``, ``None`` if there is none; refuses anything else."""
        parent, name = self.locate(relative)
        if parent is None:
            return None
        try:
            before = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        _check_kind(relative, before.st_mode, stat.S_ISREG, "a regular file")
        try:
            fd = os.open(name, _FILE, dir_fd=parent)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOENT):
                raise _refuse(relative, "changed while dsf-compile was reading it") from err
            return _Found(None, f"cannot be read: {err.strerror}")
        try:
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
                before.st_dev,
                before.st_ino,
            ):
                raise _refuse(relative, "changed while dsf-compile was reading it")
            if after.st_size > MAX_READ_BYTES:
                return _Found(None, f"is larger than {MAX_READ_BYTES >> 20} MiB")
            # one read when the size holds (a render reads every file: per-file calls
            # are its cost); more only for a file growing under the read
            data = os.read(fd, after.st_size + 1)
            rest = _read_rest(fd, data) if len(data) > after.st_size else data
            if rest is None:
                return _Found(None, f"is larger than {MAX_READ_BYTES >> 20} MiB")
            return _Found(rest, info=before)
        except OSError as err:
            return _Found(None, f"cannot be read: {err.strerror}")
        finally:
            os.close(fd)


def _read_rest(fd: int, start: bytes) -> bytes | None:
    """The rest of a file growing under the read, after ``start``; None past the size cap."""
    chunks, total = [start], len(start)
    while chunk := os.read(fd, 1 << 20):
        total += len(chunk)
        if total > MAX_READ_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _lock(tree: _Tree, operation: int) -> None:
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


# ---------------------------------------------------------------- the record


def _read_record(tree: _Tree) -> tuple[set[str], bool]:
    """The paths the record lists, and whether it exists; refuses lines it could not have written."""
    found = tree.read(RECORD)
    if found is None:
        return set(), False
    if found.data is None:
        raise _refuse(RECORD, f"{found.reason}; restore it from Git")
    owned: set[str] = set()
    problems = []
    for number, line in enumerate(found.data.split(b"\n"), 1):
        if not line or line.startswith(b"#"):
            continue
        text = line.decode("ascii", "backslashreplace")
        if _OWNED_PATH.match(text):
            owned.add(text)
        else:
            shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:80])
            shown = f"'{shown}'" if len(text) <= 80 else f"'{shown}...'"
            problems.append(
                Problem(
                    f"{RENDERED}/{RECORD}",
                    number,
                    1,
                    "",
                    f"{shown} is not a file dsf-compile writes; restore the record from Git",
                )
            )
    if problems:
        raise InputError(problems)
    return owned, True


def read_record(folder: Path) -> set[str]:
    """The files the compiler owns in ``folder`` (``rendered/``), from its record."""
    tree = _Tree.open(folder, create=False)
    try:
        return _read_record(tree)[0] if tree.exists else set()
    finally:
        tree.close()


# ---------------------------------------------------------------- comparing


def _compare(
    tree: _Tree, files: dict[str, str]
) -> tuple[Changes, set[str], dict[str, os.stat_result]]:
    """The changes, the paths where a file exists now, and the lstat of the owned files
    found with the rendered bytes."""
    owned, present = _read_record(tree) if tree.exists else (set(), False)
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
        tree = _Tree.open(folder, create=False)
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
        tree = _Tree.open(folder, create=True)
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
            _Update(tree, existing).run(changes, files)
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
                self.fd = os.open(_CACHE_FOLDER, _DIRECTORY, dir_fd=parent)  # never a link
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
            _remove_quietly(name, self.fd)

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
    tree: _Tree,
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


def _read_back(tree: _Tree, relative: str) -> tuple[os.stat_result, bytes] | None:
    """A regular file's ``fstat`` (taken before the read) and bytes, in one read; None for
    anything else (a link is refused by the open, a FIFO does not block it, a file whose
    size changes under the read is not settled)."""
    try:  # best effort: settling never fails a render that has succeeded
        folder, name = tree.locate(relative)
        if folder is None:
            return None
        fd = os.open(name, _FILE, dir_fd=folder)
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


class _Update:
    """One all-or-nothing update of the tree: check, stage, rename with undo, clean up."""

    def __init__(self, tree: _Tree, existing: set[str]) -> None:
        self.tree = tree
        self.existing = existing
        self.staged: list[tuple[str, int, str, str]] = []  # relative, folder, name, staged name
        self.undo: list[Callable[[], None]] = []
        self.backups: list[tuple[str, int, str]] = []  # relative, folder, backup name

    def run(self, changes: Changes, files: dict[str, str]) -> None:
        writes = [*changes.added.items(), *((p, new) for p, (_, new) in changes.changed.items())]
        if changes.record_stale:
            writes.append((RECORD, _RECORD_HEADER + "".join(f"{p}\n" for p in sorted(files))))
        self._check_removals(list(changes.removed))
        self._stage(writes)
        try:
            for relative, folder, name, staged in self.staged:
                self._replace(relative, folder, name, staged)
            for relative in changes.removed:
                self._remove(relative)
        except OSError as err:
            trouble = self._roll_back()
            state = (
                "the previous tree is restored"
                if not trouble
                else f"the previous tree could not be fully restored ({trouble})"
            )
            raise RenderError(f"cannot update {RENDERED}/: {err}; {state}") from err
        changes.leftovers = self._clean_up(list(changes.removed))

    def _check_removals(self, removed: list[str]) -> None:
        """Before anything changes: every file to delete is a regular file in a writable folder."""
        for relative in removed:
            folder, name = self.tree.locate(relative)
            assert folder is not None  # it was read a moment ago
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            _check_kind(relative, mode, stat.S_ISREG, "a regular file")
            if not os.access(".", os.W_OK, dir_fd=folder):
                parent = relative.rpartition("/")[0]
                raise RenderError(
                    f"cannot update {RENDERED}/: {_where(parent)} is not writable, so "
                    f"{RENDERED}/{relative} cannot be deleted; nothing was changed"
                )

    def _stage(self, writes: list[tuple[str, str]]) -> None:
        """Write every file beside its target as a new ``.NAME.<random>.dsf-tmp``."""
        try:
            for relative, text in writes:
                folder, name = self.tree.locate(relative, create=True)
                assert folder is not None
                fd, staged = create_new(f".{name}.", _STAGED, dir_fd=folder)
                self.staged.append((relative, folder, name, staged))
                with os.fdopen(fd, "wb") as out:
                    out.write(text.encode("utf-8"))
        except OSError as err:
            self._roll_back()
            raise RenderError(
                f"cannot write {RENDERED}/: {err}; the previous tree is intact"
            ) from err

    def _backup_name(self, name: str) -> str:
        return f".{name}.{secrets.token_hex(6)}{_BACKUP}"

    def _replace(self, relative: str, folder: int, name: str, staged: str) -> None:
        if relative in self.existing or relative == RECORD:
            backup = self._backup_name(name)
            try:  # a second name for the previous file, to put it back on failure
                os.link(name, backup, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                backup = ""  # the record may not exist yet
            if backup:
                self.backups.append((relative, folder, backup))
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            if backup:
                self.undo.append(
                    lambda: os.replace(backup, name, src_dir_fd=folder, dst_dir_fd=folder)
                )
            else:
                self.undo.append(lambda: os.unlink(name, dir_fd=folder))
        else:
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            self.undo.append(lambda: os.unlink(name, dir_fd=folder))

    def _remove(self, relative: str) -> None:
        # Renamed away, not unlinked: renaming moves the name (never a link's target) and
        # can be undone until the whole update succeeded.
        folder, name = self.tree.locate(relative)
        assert folder is not None
        backup = self._backup_name(name)
        os.rename(name, backup, src_dir_fd=folder, dst_dir_fd=folder)
        self.backups.append((relative, folder, backup))
        self.undo.append(lambda: os.rename(backup, name, src_dir_fd=folder, dst_dir_fd=folder))

    def _roll_back(self) -> str:
        """Undo every rename, remove staged files and new folders; say what could not be undone."""
        trouble = []
        for step in reversed(self.undo):
            try:
                step()
            except OSError as err:
                trouble.append(str(err))
        for _, folder, _, staged in self.staged:
            _remove_quietly(staged, folder)
        for _, folder, backup in self.backups:
            _remove_quietly(backup, folder)  # left only when its rename never happened
        for key in reversed(self.tree.made):
            parent_key, _, name = key.rpartition("/")
            parent = self.tree.fds.get(parent_key)
            if parent is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=parent)
        return "; ".join(trouble)

    def _clean_up(self, removed: list[str]) -> list[str]:
        """After success: drop the previous files and prune folders the removals emptied."""
        leftovers = []
        for relative, folder, backup in self.backups:
            try:
                os.unlink(backup, dir_fd=folder)
            except OSError:
                leftovers.append(f"{_where(relative.rpartition('/')[0])}/{backup}")
        for relative in removed:
            key = relative.rpartition("/")[0]
            while key:
                parent_key, _, name = key.rpartition("/")
                parent = self.tree.fds.get(parent_key)
                try:
                    assert parent is not None
                    os.rmdir(name, dir_fd=parent)  # fails on a non-empty folder, and on a link
                except OSError:
                    break
                key = parent_key
        return leftovers


def _remove_quietly(name: str, folder: int) -> None:
    # Already gone (renamed into place), or rolling back after a worse error.
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)


# ------------------------------------------------------------------- reporting


def _unified(relative: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{RENDERED}/{relative}",
        tofile=f"b/{RENDERED}/{relative}",
    )
    # the old side is a file of the pull request: what a terminal would act on is shown escaped
    return "".join(terminal(line.removesuffix("\n")) + "\n" for line in lines)


def _describe(text: str) -> str:
    kind = name = namespace = ""
    for line in text.splitlines():
        if line.startswith("kind: "):
            kind = line[6:]
        elif line.startswith("  name: ") and not name:
            name = line[8:]
        elif line.startswith("  namespace: ") and not namespace:
            namespace = line[13:]
    if not kind:
        return ""
    return terminal(f"{kind} {namespace + '/' if namespace else ''}{name}")


def _hidden(changes: Changes, relative: str) -> str:
    return f"  (the current file is not shown: {changes.hidden[relative]})\n"


def format_changes(changes: Changes, style: str) -> str:
    """The changes as text (``render --check``, ``diff``) or as a Markdown PR comment.

    The current bytes of a file listed in ``changes.hidden`` are never printed.
    """
    if style == "markdown":
        return _format_markdown(changes)
    out = []
    shards = _shards_changed(changes)
    if shards:
        out.append(f"shards changed: {shards}\n")
    for relative, text in changes.added.items():
        out.append(f"added:   {RENDERED}/{relative}  {_describe(text)}\n")
        out.append(_unified(relative, "", text))
    for relative, (old, new) in changes.changed.items():
        out.append(f"changed: {RENDERED}/{relative}  {_describe(new)}\n")
        if relative in changes.hidden:
            out.append(_hidden(changes, relative))
        else:
            out.append(_unified(relative, old, new))
    for relative, text in changes.removed.items():
        out.append(f"removed: {RENDERED}/{relative}  {_describe(text)}\n")
        if relative in changes.hidden:
            out.append(_hidden(changes, relative))
        else:
            out.append(_unified(relative, text, ""))
    return "".join(out)


def _shards_changed(changes: Changes) -> str:
    """``shards/03 (2 files), shards/05 (1 file)``: where a sharded fleet's change lands."""
    counts = files_by_shard([*changes.added, *changes.changed, *changes.removed])
    return ", ".join(
        f"{shard} ({count} file{'' if count == 1 else 's'})" for shard, count in counts.items()
    )


def _format_markdown(changes: Changes) -> str:
    if changes.empty:
        return "### dsf-compile diff\n\nNo change to `rendered/`.\n"
    shards = _shards_changed(changes)
    where = f" Shards changed: {shards}." if shards else ""
    out = [
        f"### dsf-compile diff\n\n{changes.summary()}.{where}\n\n"
        "| change | file | object |\n| --- | --- | --- |\n"
    ]
    rows = [
        *(("added", p, t) for p, t in changes.added.items()),
        *(("changed", p, n) for p, (_, n) in changes.changed.items()),
        *(("removed", p, t) for p, t in changes.removed.items()),
    ]
    for change, relative, text in rows:
        out.append(f"| {change} | `{RENDERED}/{relative}` | {markdown(_describe(text))} |\n")
    for relative, (old, new) in changes.changed.items():
        if relative in changes.hidden:
            out.append(f"\n`{RENDERED}/{relative}`:{_hidden(changes, relative)}")
            continue
        out.append(f"\n<details><summary><code>{RENDERED}/{relative}</code></summary>\n\n")
        out.append(code_fence(_unified(relative, old, new), "diff"))
        out.append("\n</details>\n")
    return "".join(out)
