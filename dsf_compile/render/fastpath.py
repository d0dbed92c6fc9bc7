"""Recognising an unchanged tree without rendering it: the no-op ``render`` and ``--check``.

After a render (or a check that found nothing to change) the compiler records, in a local
cache that is never committed (``.dsf-cache/render.json``, git-ignored):

- a digest of every input byte: ``scorers/``, ``clusters/``, ``placements/``, ``dsf.yaml``,
  ``dsf.lock.json`` (paths and contents, in sorted order);
- a digest of the compiler itself (the size and mtime of its sources, the Python version,
  and where and when the libraries that shape the output — PyYAML, pydantic — are installed);
- a digest of every file ``rendered/`` owns (``.dsf-files``);
- what the render said (file and cluster counts, warnings).

The next ``render``/``--check`` hashes the same bytes again and compares. Hashing reads
every input and rendered file — tens of MB for a thousand clusters, a fraction of what
loading, resolving and encoding them costs — and, unlike comparing sizes and mtimes, it
cannot be fooled by an edit in the same clock tick or a restored mtime. Any difference, a
missing or unreadable cache, a link or a special file anywhere: the full path runs.

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
from typing import Any

from dsf_compile.errors import Problem
from dsf_compile.files import FileTooLargeError, NotRegularFileError, read_regular_file

CACHE = ".dsf-cache/render.json"
INPUT_FOLDERS = ("scorers", "clusters", "placements")
INPUT_FILES = ("dsf.yaml", "dsf.lock.json")
RENDERED = "rendered"
RECORD = ".dsf-files"
_VERSION = 2
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
    folder = root / RENDERED
    record = folder / RECORD
    if folder.is_symlink() or not folder.is_dir() or record.is_symlink() or not record.is_file():
        raise _Unusable(RENDERED)
    lines = record.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def _rendered_digest(root: Path, written: Mapping[str, str] | None = None) -> str:
    """The digest of every file ``rendered/`` owns, read without following a link.

    ``written`` holds texts a render has just written: hashed from memory instead of read
    back. That can only make the cache stale, never wrong: :func:`unchanged` reads the disk.

    Plain strings rather than :class:`~pathlib.Path`, and each folder checked once: at
    10,000 clusters this runs over 30,000 files, and path objects cost more than hashing.
    """
    if root.is_symlink():
        raise _Unusable(str(root))
    sha = hashlib.sha256()
    base = os.path.join(root, RENDERED)
    checked: set[str] = set()
    for relative in [*_owned(root), RECORD]:
        parts = relative.split("/")
        if relative.startswith("/") or any(part in ("", ".", "..") for part in parts):
            raise _Unusable(relative)  # a record line that would leave rendered/
        folder = relative.rpartition("/")[0]
        while folder and folder not in checked:
            if not stat.S_ISDIR(os.lstat(os.path.join(base, folder)).st_mode):
                raise _Unusable(folder)  # a link (or anything else) where a folder was
            checked.add(folder)
            folder = folder.rpartition("/")[0]
        sha.update(b"\0file\0" + relative.encode("utf-8", "surrogateescape"))
        text = written.get(relative) if written else None
        if text is None:
            _digest_file(os.path.join(base, relative), sha)
        else:
            sha.update(text.encode("utf-8"))
    return sha.hexdigest()


def unchanged(root: Path) -> Remembered | None:
    """What the last render said, when nothing it depends on has changed; else None."""
    try:
        cache_path = root / CACHE
        if cache_path.is_symlink() or not cache_path.is_file():
            return None
        cache = json.loads(cache_path.read_text(encoding="utf-8"))
        if cache.get("version") != _VERSION or cache.get("inputs") != _inputs_digest(root):
            return None
        if cache["rendered"] != _rendered_digest(root):
            return None
        warnings = tuple(Problem(*fields) for fields in cache["warnings"])
        return Remembered(int(cache["files"]), int(cache["clusters"]), warnings)
    except (_Unusable, OSError, ValueError, KeyError, TypeError, UnicodeDecodeError):
        return None


def remember(
    root: Path, inputs: str, said: Remembered, written: Mapping[str, str] | None = None
) -> None:
    """Record the tree just rendered (or checked clean); best effort, never fails a render.

    ``written``: the files the render just wrote, path in ``rendered/`` → text (at 10,000
    clusters, reading 0.7 GB back costs a second).
    """
    try:
        cache = {
            "version": _VERSION,
            "inputs": inputs,
            "rendered": _rendered_digest(root, written),
            "files": said.files,
            "clusters": said.clusters,
            "warnings": [
                [w.path, w.line, w.column, w.field, w.message, w.severity] for w in said.warnings
            ],
        }
        folder = root / ".dsf-cache"
        if folder.is_symlink():
            return
        folder.mkdir(exist_ok=True)
        temporary = folder / f".render.json.{os.getpid()}.tmp"
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(cache, out, sort_keys=True)
        os.replace(temporary, root / CACHE)
    except (_Unusable, OSError):
        return
