"""After a render: what the first no-op check would record, taken without reading it all.

``write.py`` calls :func:`settle` once the update is in place; ``fastpath``'s documentation
says why what it records is safe to trust. Settling is best effort: it never fails a
render that has succeeded, it only records less.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from pathlib import Path

from dsf_compile.edges.files import create_new
from dsf_compile.edges.tree import MAX_READ_BYTES, OPEN_DIRECTORY, OPEN_FILE, Tree, remove_quietly
from dsf_compile.errors import InputError
from dsf_compile.render.changes import Settled
from dsf_compile.render.record import RECORD

_CACHE_FOLDER = ".dsf-cache"
_TICK_WAIT_SECONDS = 0.05


class Clock:
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


def next_tick(clock: Clock) -> os.stat_result | None:
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


def settle(
    tree: Tree,
    clock: Clock,
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
    stamp = next_tick(clock)
    if stamp is None:
        return None
    for relative in [*(p for p in files if p not in stats), RECORD]:
        found = read_back(tree, relative)
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


def read_back(tree: Tree, relative: str) -> tuple[os.stat_result, bytes] | None:
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
