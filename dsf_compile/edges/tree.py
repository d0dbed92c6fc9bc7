"""``rendered/`` opened without following links: every access relative to an open directory.

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
import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

from dsf_compile.errors import InputError
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

RENDERED = "rendered"
MAX_READ_BYTES = 64 << 20
OPEN_DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: should a FIFO be swapped in after the lstat, opening it does not hang.
OPEN_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def where(key: str, label: str = RENDERED) -> str:
    """``rendered/KEY`` as messages name it (``rendered`` itself for the empty key)."""
    if not label:  # the repository's own folder
        return key
    return f"{label}/{key}" if key else label


def refuse(key: str, message: str, label: str = RENDERED) -> InputError:
    """The error that stops a render at ``rendered/KEY``."""
    return InputError([Problem(where(key, label), 0, 0, "", message)])


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


def check_kind(
    key: str, mode: int, want: Callable[[int], bool], what: str, label: str = RENDERED
) -> None:
    """Refuse ``rendered/KEY`` unless its ``mode`` is ``what`` (never a link)."""
    again = "render again" if label == RENDERED else "run the command again"
    if stat.S_ISLNK(mode):
        raise refuse(
            key,
            f"is a symbolic link; dsf-compile never follows links in {label}/: "
            f"remove it and {again}",
            label,
        )
    if not want(mode):
        raise refuse(key, f"is {_kind(mode)}, not {what}; remove it and {again}", label)


@frozen
class Found:
    """A regular file found at a rendered or owned path: its bytes, or why they are not read."""

    data: bytes | None
    reason: str = ""
    info: os.stat_result | None = None  # lstat before the read


class Tree:
    """``rendered/`` opened without following links; every access relative to an open directory.

    Why descriptors and not paths: a path is resolved again at every use, so a check
    (``lstat``) followed by a use (``open``, ``unlink``) can be redirected by a link
    created in between. Here each folder is opened once with ``O_NOFOLLOW`` (after an
    ``lstat`` for a clear message) and checked to be the folder that was ``lstat``-ed;
    files are then opened, created (``O_EXCL|O_NOFOLLOW``), renamed and removed by name
    inside that descriptor, so no path component is ever resolved through a link.
    """

    def __init__(self, label: str = RENDERED) -> None:
        self.label = label  # how messages name the folder
        self.fds: dict[str, int] = {}
        self.made: list[str] = []

    @classmethod
    def open(cls, folder: Path, *, create: bool, label: str = RENDERED) -> Tree:
        """``folder`` opened without following a link at its last component (``label``
        is how messages name it); the tree does not exist when it is absent and not
        ``create``."""
        tree = cls(label)
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
        check_kind(key, before.st_mode, stat.S_ISDIR, "a directory", self.label)
        try:
            fd = os.open(name, OPEN_DIRECTORY, dir_fd=parent)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                raise refuse(key, "changed while dsf-compile was reading it", self.label) from err
            raise
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            os.close(fd)
            raise refuse(key, "changed while dsf-compile was reading it", self.label)
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

    def remove_folder(self, key: str) -> bool:
        """Remove the folder ``rendered/KEY`` if it is empty (never the tree itself, never
        through a link); whether it is gone."""
        parent_key, _, name = key.rpartition("/")
        parent = self.fds.get(parent_key)
        if not key or parent is None:
            return False
        try:
            os.rmdir(name, dir_fd=parent)  # fails on a non-empty folder, and on a link
        except OSError:
            return False
        fd = self.fds.pop(key, None)
        if fd is not None:  # a later create must make the folder again, not use this one
            os.close(fd)
        return True

    def locate(self, relative: str, *, create: bool = False) -> tuple[int | None, str]:
        """The descriptor of the folder holding ``relative``, and the file's name in it."""
        parent_key, _, name = relative.rpartition("/")
        return self.folder(parent_key, create=create), name

    def read(self, relative: str) -> Found | None:
        """The regular file at ``relative``, ``None`` if there is none; refuses anything else."""
        parent, name = self.locate(relative)
        if parent is None:
            return None
        try:
            before = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        check_kind(relative, before.st_mode, stat.S_ISREG, "a regular file", self.label)
        changed = "changed while dsf-compile was reading it"
        try:
            fd = os.open(name, OPEN_FILE, dir_fd=parent)
        except OSError as err:
            if err.errno in (errno.ELOOP, errno.ENOENT):
                raise refuse(relative, changed, self.label) from err
            return Found(None, f"cannot be read: {err.strerror}")
        try:
            after = os.fstat(fd)
            if not stat.S_ISREG(after.st_mode) or (after.st_dev, after.st_ino) != (
                before.st_dev,
                before.st_ino,
            ):
                raise refuse(relative, changed, self.label)
            if after.st_size > MAX_READ_BYTES:
                return Found(None, f"is larger than {MAX_READ_BYTES >> 20} MiB")
            # one read when the size holds (a render reads every file: per-file calls
            # are its cost); more only for a file growing under the read
            data = os.read(fd, after.st_size + 1)
            rest = _read_rest(fd, data) if len(data) > after.st_size else data
            if rest is None:
                return Found(None, f"is larger than {MAX_READ_BYTES >> 20} MiB")
            return Found(rest, info=before)
        except OSError as err:
            return Found(None, f"cannot be read: {err.strerror}")
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


def remove_quietly(name: str, folder: int) -> None:
    """Unlink ``name`` in ``folder`` if it is still there."""
    # Already gone (renamed into place), or rolling back after a worse error.
    with contextlib.suppress(OSError):
        os.unlink(name, dir_fd=folder)
