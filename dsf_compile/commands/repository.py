"""Which repository a command works on when ``--root`` is not given.

The nearest folder, from the current one upward, that holds ``dsf.yaml`` or both
``scorers/`` and ``clusters/`` (``overview.md``): a command run from ``scorers/`` or
``rendered/clusters/x/`` works on the whole fleet, as ``git`` does from a subfolder.

It stops where git stops: a folder owned by another user than the one running, or whose
``dsf.yaml`` (``scorers/``, ``clusters/``) is, is not taken as the repository (git's
``safe.directory`` rule, which checks the work tree and its ``.git``). Otherwise what
anyone can plant above the current folder (``/tmp/dsf.yaml``) would choose the URLs
``sync`` fetches and where ``render`` writes; ``--root`` names such a folder on purpose.
"""

from __future__ import annotations

import os
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
    """The repository ``start`` is in; :class:`UsageError` (exit 2) outside any, or when
    the nearest one is owned by another user."""
    folder = start.absolute()
    for _ in range(MAX_LEVELS):
        if is_repository(folder):
            _check_owner(folder)
            return folder
        if folder.parent == folder:
            break
        folder = folder.parent
    raise UsageError(
        f"not in a dsf repository: no dsf.yaml, nor scorers/ and clusters/, in {start.absolute()} "
        "or any folder above it (run it inside one, or give --root DIR)"
    )


def _check_owner(folder: Path) -> None:
    """Git's rule: the folder and what makes it a repository are owned by the user
    running (or, as root under ``sudo``, by the user who ran ``sudo``)."""
    users = _running_users()
    for path in (folder, *(folder / name for name in _MARKERS)):
        try:
            owner = os.lstat(path).st_uid
        except OSError:
            continue  # absent: not what made it a repository
        if owner not in users:
            what = "is" if path == folder else f"has {path.name} which is"
            raise UsageError(
                f"{folder} looks like a dsf repository but {what} owned by another user "
                f"(uid {owner}, not {os.geteuid()}): not taken without --root, as git "
                f"refuses such a folder (safe.directory); give --root {folder} if you trust it"
            )


#: What makes a folder a repository (:func:`is_repository`).
_MARKERS = ("dsf.yaml", "scorers", "clusters")


def _running_users() -> set[int]:
    users = {os.geteuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if os.geteuid() == 0 and sudo.isdigit() and len(sudo) <= 10:
        users.add(int(sudo))
    return users
