"""Writing files safely: through a new temporary file and a rename."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

# A new file is created the way any program creates one: mode 0666 minus the umask (0644
# under the usual 022). ``tempfile.mkstemp`` would make it 0600, which then sticks to the
# committed lockfile, schemas and ownership record.
NEW_FILE_MODE = 0o666
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC

# The names dsf gives its own temporary files, beside the file they stand for: a staged
# new file ``.NAME.<hex>.dsf-tmp``, a previous one kept until an update succeeded
# ``.NAME.<hex>.dsf-old``, and the journal of an update of several files. The next run
# removes any of them a killed one left (:mod:`dsf_compile.edges.journal`).
STAGED_SUFFIX = ".dsf-tmp"
BACKUP_SUFFIX = ".dsf-old"
JOURNAL = ".dsf-journal"
TEMP_TOKEN_HEX = 12
TEMP_NAME_EXTRA = 2 + TEMP_TOKEN_HEX + max(len(STAGED_SUFFIX), len(BACKUP_SUFFIX))
"""Characters a temporary name adds to its file's name (``.`` + ``.<hex>`` + suffix): a
file dsf writes must have a name at most ``NAME_MAX`` (255) minus this long."""


def create_new(prefix: str, suffix: str, *, dir_fd: int) -> tuple[int, str]:
    """Create a file that did not exist, named ``PREFIX<random>SUFFIX`` in ``dir_fd``.

    ``O_EXCL`` (with ``O_NOFOLLOW``) means a file or link planted at that name is never
    opened: the name is simply taken, and another is tried. Returns the open descriptor
    (write-only) and the name.
    """
    for _ in range(100):
        name = f"{prefix}{os.urandom(TEMP_TOKEN_HEX // 2).hex()}{suffix}"
        try:
            return os.open(name, _CREATE, NEW_FILE_MODE, dir_fd=dir_fd), name
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot find a free temporary name {prefix}*{suffix}")


def atomic_write(file: Path, data: bytes) -> None:
    """Write ``data`` to ``file`` through a new temporary file beside it and a rename.

    The rename replaces ``file`` itself, never what it might link to.
    """
    folder = os.open(file.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        fd, tmp = create_new(f".{file.name}.", ".tmp", dir_fd=folder)
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, file.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp, dir_fd=folder)
            raise
    finally:
        os.close(folder)


# ------------------------------------------------------- reading without surprises


class NotRegularFileError(OSError):
    """The path is a link, a folder, a FIFO, a socket or a device; ``strerror`` says which."""


class FileTooLargeError(OSError):
    """The file is larger than the caller accepts."""


def read_regular_file(file: str | Path, *, max_bytes: int) -> bytes:
    """The bytes of ``file`` if it is a regular file of at most ``max_bytes``.

    The last component is not followed if it is a symbolic link, and opening never blocks
    (a FIFO in its place would wait forever for a writer): the file is opened with
    ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before a byte is read. Raises
    :class:`NotRegularFileError`, :class:`FileTooLargeError`, or the ``OSError`` of the
    system (``FileNotFoundError``, ``PermissionError`` ...).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(file, flags)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotRegularFileError(
                errno.ELOOP, "is a symbolic link; a regular file is expected", str(file)
            ) from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = _KINDS.get(stat.S_IFMT(info.st_mode), "not a regular file")
            raise NotRegularFileError(
                errno.EINVAL, f"is {kind}; a regular file is expected", str(file)
            )
        if info.st_size > max_bytes:
            raise FileTooLargeError(errno.EFBIG, f"is larger than {max_bytes} bytes", str(file))
        chunks = []
        size = 0
        while chunk := os.read(fd, 1024 * 1024):
            size += len(chunk)
            if size > max_bytes:  # it grew while we read
                raise FileTooLargeError(errno.EFBIG, f"is larger than {max_bytes} bytes", str(file))
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
}
