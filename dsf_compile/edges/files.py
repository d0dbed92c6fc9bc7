"""Writing files safely: through a new temporary file and a rename."""

from __future__ import annotations

import contextlib
import errno
import os
import re
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
#: A temporary name: group 1 is the name of the file it stands for.
TEMPORARY = re.compile(
    rf"\.(.+)\.[0-9a-f]{{{TEMP_TOKEN_HEX}}}(?:{re.escape(STAGED_SUFFIX)}|{re.escape(BACKUP_SUFFIX)})\Z",
    re.DOTALL,
)


def is_temporary(name: str) -> bool:
    """Whether ``name`` is one dsf gives a staged file or a backup (``.NAME.<hex>.dsf-tmp``)."""
    return TEMPORARY.match(name) is not None


#: Entries :func:`find_debris` looks at, at most: far more than a repository of 10,000
#: rendered clusters holds.
MAX_DEBRIS_SCAN = 2_000_000
#: Folders never looked into: Git's own, and the compiler's local cache (never committed).
_NOT_SCANNED = frozenset({".git", ".dsf-cache"})


def find_debris(root: Path, *, shallow: frozenset[str] = frozenset()) -> tuple[list[str], bool]:
    """Every journal and temporary file of dsf's in the repository ``root`` (paths relative
    to it, sorted), whatever their kind, and whether the search stopped at
    :data:`MAX_DEBRIS_SCAN` entries. Never through a link; ``.git/`` and ``.dsf-cache/``
    are not looked into, and the folders in ``shallow`` (paths from ``root``) only at
    their own level. Standard library only (the
    no-op render's fast path calls it).
    """
    found: list[str] = []
    pending = [""]
    seen = 0
    while pending:
        key = pending.pop()
        prefix = f"{key}/" if key else ""
        try:
            with os.scandir(root / key) as listing:
                entries = list(listing)
        except OSError:
            continue  # gone, or not readable: nothing of ours can be told there
        seen += len(entries)
        if seen > MAX_DEBRIS_SCAN:
            return sorted(found), True
        for entry in entries:
            name = entry.name
            if name.endswith(_DEBRIS_ENDINGS) and (name == JOURNAL or is_temporary(name)):
                found.append(prefix + name)
            elif (
                entry.is_dir(follow_symlinks=False)
                and name not in _NOT_SCANNED
                and key not in shallow
            ):
                pending.append(prefix + name)
    return sorted(found), False


#: How every name :func:`find_debris` looks for ends (a cheap test before the pattern).
_DEBRIS_ENDINGS = (JOURNAL, STAGED_SUFFIX, BACKUP_SUFFIX)


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


def read_regular_file(file: str | Path, *, max_bytes: int, follow_links: bool = False) -> bytes:
    """The bytes of ``file`` if it is a regular file of at most ``max_bytes``.

    The last component is not followed if it is a symbolic link (unless ``follow_links``:
    for files outside the repository, such as a kubeconfig), and opening never blocks
    (a FIFO in its place would wait forever for a writer): the file is opened with
    ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before a byte is read. Raises
    :class:`NotRegularFileError`, :class:`FileTooLargeError`, or the ``OSError`` of the
    system (``FileNotFoundError``, ``PermissionError`` ...).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_links:
        flags |= os.O_NOFOLLOW
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
