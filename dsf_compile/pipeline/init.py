"""``init``: a fleet repository of its own, written whole or not at all (``fleet-repo.md``).

The scaffold is written into a staging folder inside the target, its lockfile made
offline (the example scorer recorded Active, marked as never checked), rendered and its
schemas written by the same pipeline as ``render`` and ``schemas``, and only then moved
into place: a refusal or a failure leaves the target as it was (or absent, as it was).
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from dsf_compile.errors import UsageError
from dsf_compile.scaffold.files import TOP_LEVEL, Action, scaffold_files

#: What a scaffolded scorer's lock entry says until the first ``sync``: Active (a Placement
#: may rank by it: an Inactive scorer's score is an error there), marked as never checked.
NOT_SYNCED = (
    "recorded by dsf-compile init, never checked: run 'dsf-compile sync' where the scorer "
    "is reachable"
)
#: Entries of an empty repository's ``.git`` looked at, at the most, to tell it is empty.
MAX_GIT_ENTRIES = 10_000


def init_fleet(target: Path, action: Action) -> list[str]:
    """Write the fleet into ``target``; return the top-level entries written."""
    refuse_unless_empty(target)
    created = not target.exists()
    try:
        target.mkdir()
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise UsageError(f"{target}: its parent folder does not exist") from None
    staging = Path(tempfile.mkdtemp(prefix=".dsf-init-", dir=target))
    moved = False
    try:
        _write_fleet(staging, action)
        for name in TOP_LEVEL:
            os.replace(staging / name, target / name)
        moved = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if created and not moved:
            shutil.rmtree(target, ignore_errors=True)
    return list(TOP_LEVEL)


def refuse_unless_empty(target: Path) -> None:
    """UsageError unless ``target`` is absent, empty, or holds only an empty repository's
    ``.git`` (``git init``, nothing committed)."""
    try:
        mode = os.lstat(target).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        raise UsageError(f"{target}: not a folder; nothing was written")
    held = sorted(entry.name for entry in os.scandir(target))
    if held == [] or (held == [".git"] and _empty_repository(target / ".git")):
        return
    shown = ", ".join(held[:5]) + (" …" if len(held) > 5 else "")
    raise UsageError(
        f"{target} is not empty ({shown}): init writes only into an empty folder or a "
        "repository with nothing committed; nothing was written"
    )


def _empty_repository(git: Path) -> bool:
    """Whether ``git`` is a repository's folder with no branch or tag yet."""
    if git.is_symlink() or not git.is_dir():
        return False
    packed = git / "packed-refs"
    if packed.is_file() and any(
        not line.startswith(("#", "^")) and line.strip()
        for line in packed.read_text(encoding="utf-8", errors="replace").splitlines()[:100]
    ):
        return False
    for seen, (_, _, files) in enumerate(os.walk(git / "refs")):
        if files or seen > MAX_GIT_ENTRIES:
            return False
    return True


def _write_fleet(root: Path, action: Action) -> None:
    """The scaffold, its lockfile, ``schemas/`` and ``rendered/`` in ``root``."""
    from dsf_compile.edges.files import atomic_write
    from dsf_compile.inputs.agent_image import default_image
    from dsf_compile.pipeline.inputs import validate_fleet
    from dsf_compile.pipeline.render import render_fleet
    from dsf_compile.pipeline.schemas import write_schemas
    from dsf_compile.sync.lock import Lockfile, make_entry, write_lockfile

    image = default_image(f"https://github.com/{action.repository}")
    for relative, text in scaffold_files(action, image).items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, text.encode())
    inputs = validate_fleet(root)
    entries = {
        s.model.metadata.name: make_entry(s.model.spec, healthy=True, reason=NOT_SYNCED)
        for s in inputs.scorers
    }
    write_lockfile(root, Lockfile(scorers=entries))
    write_schemas(root / "schemas", check=False)
    render_fleet(root)
