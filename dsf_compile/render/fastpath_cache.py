"""The fast path's cache file, ``.dsf-cache/render.json``, and the probe that writes it.

The probe is a new file in ``.dsf-cache/``: its ctime is the **stamp** the fast path
compares ctimes with (:mod:`dsf_compile.render.fastpath` says why that is safe), and
what the fast path records is written into it before it takes the cache's place, so the
cache is never seen half written. Standard library only, like the fast path.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

CACHE = ".dsf-cache/render.json"


class CacheProbe:
    """A new file in ``.dsf-cache/``: its ctime is the stamp, then it becomes the cache."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path: Path | None = None
        self.stamp = 0
        self.device = -1

    def __enter__(self) -> CacheProbe:
        folder = self.root / ".dsf-cache"
        try:
            if folder.is_symlink():
                return self  # no stamp, and nothing is recorded
            folder.mkdir(exist_ok=True)
            path = folder / f".render.json.{os.urandom(6).hex()}.tmp"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        except OSError:
            return self
        self.path = path
        try:
            info = os.fstat(fd)
        finally:
            os.close(fd)
        self.stamp, self.device = info.st_ctime_ns, info.st_dev
        return self

    def commit(self, cache: dict[str, Any]) -> None:
        """Write ``cache`` into the probe and put it in the cache's place."""
        if self.path is None:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(cache, out, sort_keys=True)
        os.replace(self.path, self.root / CACHE)
        self.path = None

    def __exit__(self, *_: object) -> None:
        if self.path is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
