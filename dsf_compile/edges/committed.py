"""A file as committed: its bytes at ``HEAD``, for a diff against the committed state.

``git cat-file`` reads an object and nothing else: no checkout, no index, no filter,
textconv or hook of the repository runs. Its size is asked first and bounded; the call
has a timeout; lazy fetches of a partial clone are off (no network). Outside a Git
repository, or for a file not in ``HEAD``, the answer is None (the file is new).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from dsf_compile.errors import DsfError

_TIMEOUT_SECONDS = 10


def committed_bytes(root: Path, relative: str, *, max_bytes: int) -> bytes | None:
    """The bytes of ``relative`` (below ``root``) at ``HEAD``; None when it is not committed."""
    git = shutil.which("git")
    if git is None:
        return None
    spec = f"HEAD:./{relative}"
    size = _git(git, root, ["cat-file", "-s", spec])
    if size is None:
        return None
    if int(size) > max_bytes:
        raise DsfError(f"{relative}: the committed file is larger than {max_bytes} bytes")
    return _git(git, root, ["cat-file", "blob", spec])


def _git(git: str, root: Path, arguments: list[str]) -> bytes | None:
    environment = {
        **os.environ,
        "GIT_NO_LAZY_FETCH": "1",
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
    }
    try:
        done = subprocess.run(  # a fixed program and arguments, no shell
            [git, "-C", str(root), *arguments],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=_TIMEOUT_SECONDS,
            env=environment,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None
