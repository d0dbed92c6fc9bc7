"""Which repository a command works on when ``--root`` is not given.

The nearest folder, from the current one upward, that holds ``dsf.yaml`` or both
``scorers/`` and ``clusters/`` (``overview.md``): a command run from ``scorers/`` or
``rendered/clusters/x/`` works on the whole fleet, as ``git`` does from a subfolder.
"""

from __future__ import annotations

from pathlib import Path

from dsf_compile.errors import UsageError

#: Folders climbed at most: far more than any real path, and a bound all the same.
MAX_LEVELS = 256


def is_repository(folder: Path) -> bool:
    """Whether ``folder`` holds ``dsf.yaml``, or both ``scorers/`` and ``clusters/``."""
    return (folder / "dsf.yaml").is_file() or (
        (folder / "scorers").is_dir() and (folder / "clusters").is_dir()
    )


def find_repository(start: Path) -> Path:
    """The repository ``start`` is in; :class:`UsageError` (exit 2) outside any."""
    folder = start.absolute()
    for _ in range(MAX_LEVELS):
        if is_repository(folder):
            return folder
        if folder.parent == folder:
            break
        folder = folder.parent
    raise UsageError(
        f"not in a dsf repository: no dsf.yaml, nor scorers/ and clusters/, in {start.absolute()} "
        "or any folder above it (run it inside one, or give --root DIR)"
    )
