"""Recognising an unchanged tree without rendering it: the no-op ``render`` and ``--check``.

After a render (or a check that found nothing to change) the compiler records, in a local
cache that is never committed (``.dsf-cache/render.json``, git-ignored):

- a digest of every input byte: ``scorers/``, ``clusters/``, ``placements/``, ``dsf.yaml``,
  ``dsf.lock.json`` (paths and contents, in sorted order);
- a digest of the compiler itself (the size and mtime of its sources, the Python version,
  and where and when the libraries that shape the output — PyYAML, pydantic — are installed);
- a digest of every file ``rendered/`` owns (``.dsf-files``);
- what the render said (file and cluster counts, warnings).

The next ``render``/``--check`` hashes the inputs again and compares. The rendered files
— tens of MB for a thousand clusters — are compared by content the first time: the check
reads and hashes every owned file. When they match, it also records what ``lstat`` says of
each (device, inode, size, mtime, ctime) and a **stamp**: the ctime of a file it creates in
``.dsf-cache/`` before it looks at any of them, the file system's own clock. From then on, a file whose
``lstat`` is unchanged and whose ctime is earlier than the stamp is not read again: a change
made after the stamp was taken sets the file's ctime to the stamp or later (the kernel sets
ctime on every write, rename, ``chmod`` or ``utime``, and nothing sets it back), so an edit
in the same clock tick as the previous one, or one that restores the mtime, is still seen.
The folders on the way are recorded the same way (a file planted in one moves its ctime),
and a tree is vouched for only after a search of all of them for debris. A file changed in
the stamp's tick or later, a new inode, a file on another file system than the cache:
everything is read and hashed again, as the first time. Any difference, a
missing or unreadable cache, a link or a special file anywhere: the full path runs.

A render records the same thing, so the first check after it reads nothing (it would read
and hash every file: a quarter of a full render's time). The render holds the files'
bytes in memory and holds ``rendered/``'s lock, and it keeps the same order: stamp, then
``lstat``, then read and compare (``settle.py``, ``settle``). Two stamps, each the ctime of
a new file in ``.dsf-cache/``, since the files are compared in two moments:

- a file the render leaves alone was read and compared with the rendered bytes after the
  **first** stamp, taken before anything was looked at, ``lstat`` before the read. It is
  vouched for only if its ctime is earlier than that stamp: any change after its
  ``lstat`` sets a ctime at or past the stamp, so the ``lstat`` recorded no longer matches;
- a file the render writes (at a first render, all of them) and the record are read back
  after the renames, under a **second** stamp that is strictly later than the clock was
  when the last rename finished (the render waits for the clock's next tick, at most
  50 ms; a file system too coarse for that settles nothing). Its ``lstat`` is taken before
  the read-back and the bytes read must equal those the render meant to write. An edit
  between the rename and the ``lstat`` is therefore caught by the read-back itself (the
  bytes differ: nothing is recorded); an edit after the ``lstat`` has a ctime at or past
  the second stamp. No window is left in which an edit passes unread, and no reliance on
  the edit being slow or on the user's intent.

The cache's stamp is the second one: it is later than the first, and a file left alone has
a ctime earlier than the first. The read-back costs reading what was written (a few
milliseconds per thousand clusters, from the page cache; no hashing beyond what the render
already did from memory). A read-only ``rendered/``, or a tree on several file systems,
settles nothing and the first check reads every file, as before.

This module imports only the standard library: the fast path must not pay for pydantic,
PyYAML or the models.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsf_compile.edges.files import (
    JOURNAL,
    FileTooLargeError,
    NotRegularFileError,
    find_debris,
    read_regular_file,
)
from dsf_compile.render.fastpath_cache import CACHE, CacheProbe
from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.render.changes import Settled

INPUT_FOLDERS = ("scorers", "clusters", "placements")
INPUT_FILES = ("dsf.yaml", "dsf.lock.json")
RENDERED = "rendered"
RECORD = ".dsf-files"
_VERSION = 3
_MAX_FILE_BYTES = 64 * 1024 * 1024
# What encodes the output besides the compiler: a new version may change its bytes.
_OUTPUT_LIBRARIES = ("yaml", "_yaml", "pydantic", "pydantic_core")


class _Unusable(Exception):
    """Something the fast path cannot vouch for: take the full path."""


@dataclass(frozen=True)
class Remembered:
    """What the last full render said, replayed when nothing changed."""

    files: int
    clusters: int
    warnings: tuple[Problem, ...]


def _digest_file(path: str | Path, sha: Any) -> None:
    # never through a link, never opening a FIFO or device (the tree is untrusted): lstat
    # first, and the no-follow, non-blocking open checks again against a swap in between
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise _Unusable(str(path))
    try:
        sha.update(read_regular_file(path, max_bytes=_MAX_FILE_BYTES))
    except (NotRegularFileError, FileTooLargeError) as err:
        raise _Unusable(str(path)) from err


def inputs_digest(root: Path) -> str | None:
    """The digest of every input byte and of the compiler's sources; None when unusable."""
    try:
        return _inputs_digest(root)
    except (_Unusable, OSError):
        return None


def _inputs_digest(root: Path) -> str:
    sha = hashlib.sha256()
    for name in INPUT_FILES:
        path = root / name
        sha.update(b"\0file\0" + name.encode())
        if os.path.lexists(path):
            _digest_file(path, sha)
    for folder in INPUT_FOLDERS:
        base = root / folder
        if not os.path.lexists(base):
            continue
        if base.is_symlink() or not base.is_dir():
            raise _Unusable(folder)
        for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
            dirnames.sort()
            for name in sorted(filenames):
                path = Path(dirpath) / name
                sha.update(
                    b"\0file\0" + str(path.relative_to(root)).encode("utf-8", "surrogateescape")
                )
                _digest_file(path, sha)
            for name in dirnames:
                if (Path(dirpath) / name).is_symlink():
                    raise _Unusable(name)
    package = Path(__file__).resolve().parent.parent
    for source in sorted(package.rglob("*.py")):
        info = source.stat()
        sha.update(
            f"\0src\0{source.relative_to(package)}\0{info.st_size}\0{info.st_mtime_ns}".encode()
        )
    sha.update(f"\0python\0{sys.version}".encode())
    for name in _OUTPUT_LIBRARIES:
        sha.update(f"\0lib\0{name}\0{_installed(name)}".encode())
    return sha.hexdigest()


def _installed(name: str) -> str:
    """Where a library is installed and when, without importing it (an upgrade changes it)."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        return "absent"
    info, folder = os.stat(spec.origin), os.stat(os.path.dirname(spec.origin))
    return f"{spec.origin}\0{info.st_size}\0{info.st_mtime_ns}\0{folder.st_mtime_ns}"


def _owned(root: Path) -> list[str]:
    """The files ``rendered/`` owns and its record, checked to stay inside ``rendered/``.

    Each folder on the way is checked once to be a folder, not a link. Plain strings
    rather than :class:`~pathlib.Path`: at 10,000 clusters this runs over 30,000 files,
    and path objects cost more than hashing them.
    """
    if root.is_symlink():
        raise _Unusable(str(root))
    folder = root / RENDERED
    record = folder / RECORD
    if folder.is_symlink() or not folder.is_dir() or record.is_symlink() or not record.is_file():
        raise _Unusable(RENDERED)
    lines = record.read_text(encoding="utf-8").splitlines()
    owned = [line for line in lines if line and not line.startswith("#")]
    base = os.path.join(root, RENDERED)
    checked: set[str] = set()
    for relative in owned:
        parts = relative.split("/")
        if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise _Unusable(relative)  # a record line that would leave rendered/
        parent = relative.rpartition("/")[0]
        while parent and parent not in checked:
            if not stat.S_ISDIR(os.lstat(os.path.join(base, parent)).st_mode):
                raise _Unusable(parent)  # a link (or anything else) where a folder was
            checked.add(parent)
            parent = parent.rpartition("/")[0]
    return [*owned, RECORD]


def _rendered_digest(
    root: Path,
    written: Mapping[str, str] | None = None,
    owned: list[str] | None = None,
    *,
    checked: bool = False,
) -> str:
    """The digest of every file ``rendered/`` owns, read without following a link.

    ``written`` holds texts a render has just written: hashed from memory instead of read
    back. That can only make the cache stale, never wrong: :func:`unchanged` reads the disk.
    ``checked``: :func:`_stats` has just found every one of ``owned`` a regular file.
    """
    sha = hashlib.sha256()
    base = os.path.join(root, RENDERED) + os.sep
    for relative in _owned(root) if owned is None else owned:
        sha.update(b"\0file\0" + relative.encode("utf-8", "surrogateescape"))
        text = written.get(relative) if written else None
        if text is not None:
            sha.update(text.encode("utf-8"))
        elif checked:
            sha.update(_read_checked(base + relative))
        else:
            _digest_file(base + relative, sha)
    return sha.hexdigest()


_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _read_checked(path: str) -> bytes:
    """A file :func:`_stats` has just found regular, in one read when it is (the first
    no-op reads every rendered file: per-file calls are its cost).

    Opened without following a link and without blocking, as :func:`_digest_file` does;
    anything but a regular file within the size cap, or one whose size changes under the
    read, is unusable.
    """
    fd = os.open(path, _READ_FLAGS)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_FILE_BYTES:
            raise _Unusable(path)
        data = os.read(fd, info.st_size + 1)
        if len(data) != info.st_size:  # changing while we look: take the full path
            raise _Unusable(path)
        return data
    finally:
        os.close(fd)


@dataclass(frozen=True)
class _Stats:
    """What ``lstat`` says of every owned file, digested; the newest ctime; the devices."""

    digest: str
    newest: int
    devices: frozenset[int]


def _stats(root: Path, owned: list[str]) -> _Stats:
    """``lstat`` of every owned file and folder: a file planted in a folder moves its ctime."""
    sha = hashlib.sha256()
    base = os.path.join(root, RENDERED) + os.sep
    newest = 0
    devices = set()
    for relative, kind in [*((path, stat.S_ISREG) for path in owned), *_folders(owned)]:
        info = os.lstat(base + relative)
        if not kind(info.st_mode):
            raise _Unusable(relative)
        _digest_lstat(sha, relative, info)
        newest = max(newest, info.st_ctime_ns)
        devices.add(info.st_dev)
    return _Stats(sha.hexdigest(), newest, frozenset(devices))


def _folders(owned: list[str]) -> list[tuple[str, Any]]:
    """Every folder holding an owned file (``rendered/`` itself is ``""``), sorted."""
    folders = {""}
    for relative in owned:
        parent = relative.rpartition("/")[0]
        while parent and parent not in folders:
            folders.add(parent)
            parent = parent.rpartition("/")[0]
    return [(folder, stat.S_ISDIR) for folder in sorted(folders)]


def _debris_free(root: Path) -> bool:
    """No journal or temporary file anywhere, searched before a tree is vouched for."""
    found, truncated = find_debris(root)
    return not found and not truncated


def _digest_lstat(sha: Any, relative: str, info: os.stat_result) -> None:
    sha.update(
        f"\0{relative}\0{info.st_dev}\0{info.st_ino}\0{info.st_size}"
        f"\0{info.st_mtime_ns}\0{info.st_ctime_ns}".encode("utf-8", "surrogateescape")
    )


def _settled_stat(root: Path, settled: Settled) -> tuple[str, dict[str, Any]] | None:
    """The rendered digest and the vouched ``lstat`` a render settled (see the module's
    documentation), when they still cover exactly the files ``rendered/`` owns."""
    owned = _owned(root)
    if set(owned) != settled.stats.keys():
        return None
    sha = hashlib.sha256()
    for relative in owned:
        _digest_lstat(sha, relative, settled.stats[relative])
    base = os.path.join(root, RENDERED) + os.sep
    for folder, _ in _folders(owned):  # after the stamp: a later change moves the ctime
        info = os.lstat(base + folder)
        if not stat.S_ISDIR(info.st_mode) or info.st_ctime_ns >= settled.stamp:
            return None
        _digest_lstat(sha, folder, info)
    if not _debris_free(root):
        return None
    rendered = _rendered_digest(root, settled.texts, owned)
    return rendered, {"digest": sha.hexdigest(), "stamp": settled.stamp}


_RENDERED_ONLY = frozenset({RENDERED})


def unchanged(root: Path) -> Remembered | None:
    """What the last render said, when nothing it depends on has changed; else None.

    Reads every owned file unless the cache vouches for their ``lstat`` (see the module's
    documentation); after reading them all unchanged, records their ``lstat`` for the next
    time (best effort).
    """
    try:
        cache_path = root / CACHE
        if cache_path.is_symlink() or not cache_path.is_file():
            return None
        if os.path.lexists(root / RENDERED / JOURNAL):  # a killed render: recover it
            return None
        # a journal or a temporary file: the full path reports it. rendered/ is looked at
        # on its own level only (its journal); deeper, the folders' lstat vouched for
        # covers them (a tree is vouched for only after a search of every folder)
        if any(find_debris(root, shallow=_RENDERED_ONLY)):
            return None
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        if cache.get("version") != _VERSION or cache.get("inputs") != _inputs_digest(root):
            return None
        owned = _owned(root)
        warnings = tuple(Problem(*fields) for fields in cache["warnings"])
        said = Remembered(int(cache["files"]), int(cache["clusters"]), warnings)
        vouched = cache.get("stat")
        if vouched is not None:
            stats = _stats(root, owned)
            if stats.digest == vouched["digest"] and stats.newest < int(vouched["stamp"]):
                return said
        with CacheProbe(root) as probe:  # the stamp is taken before any file is looked at
            # lstat before reading: a change after the lstat has a ctime past the stamp,
            # so the recorded lstat can only be too old to vouch, never wrong
            stats = _stats(root, owned)
            if _rendered_digest(root, owned=owned, checked=True) != cache["rendered"]:
                return None
            if not _debris_free(root):
                return None  # the full path reports it
            if stats.devices == {probe.device}:
                probe.commit({**cache, "stat": {"digest": stats.digest, "stamp": probe.stamp}})
        return said
    except (_Unusable, OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def remember(
    root: Path,
    inputs: str,
    said: Remembered,
    written: Mapping[str, str] | None = None,
    settled: Settled | None = None,
) -> None:
    """Record the tree just rendered (or checked clean); best effort, never fails a render.

    ``written``: the files the render just wrote, path in ``rendered/`` → text (at 10,000
    clusters, reading 0.7 GB back costs a second). ``settled``: what the render vouched
    for; without it no ``lstat`` is recorded (what was hashed from memory may differ from
    the disk), so the first check reads the files.
    """
    try:
        vouched = _settled_stat(root, settled) if settled is not None else None
        cache: dict[str, Any] = {
            "version": _VERSION,
            "inputs": inputs,
            "rendered": vouched[0] if vouched else _rendered_digest(root, written),
            "files": said.files,
            "clusters": said.clusters,
            "warnings": [
                [w.path, w.line, w.column, w.field, w.message, w.severity] for w in said.warnings
            ],
        }
        if vouched:
            cache["stat"] = vouched[1]
        with CacheProbe(root) as probe:
            probe.commit(cache)
    except (_Unusable, OSError):
        return
