"""The journal of an update, its lock and the recovery after a kill: the previous files or the new ones.

Every command that writes files of the repository — ``render`` (``rendered/``),
``optimize`` (``placements/optimized/``), ``schemas`` (``schemas/``), ``sync`` (the
lockfile), ``sync --clusters`` (``clusters/discovered.yaml``) — goes through
:class:`~dsf_compile.edges.replacement.Replacement`, in a folder opened without following
links (:class:`Tree`); this module holds the journal it writes, the lock it takes and
:func:`recover`, what the next run does:

1. the folder is locked (``flock`` on its descriptor, released by the kernel when the
   process ends: a lock held is a command running, never one that died);
2. whatever a killed command left there is recovered first (:func:`recover`);
3. for more than one file, the journal ``.dsf-journal`` is written, saying "staging";
4. every new file is staged as ``.NAME.<hex>.dsf-tmp`` beside its target, and flushed;
5. the journal is replaced (a rename, then ``fsync``) by the whole plan: every rename and
   every removal, with the names of the previous files' backups. This is the commit point;
6. the staged files are renamed into place and the removed files renamed away
   (``.NAME.<hex>.dsf-old``), every previous file kept until the last step succeeded: on
   an error every rename is undone;
7. the backups are deleted, then the journal.

A kill before 5 has replaced nothing: the next run *undoes* the update (it removes what was
staged). A kill after 5 has every new file staged and the plan on disk: the next run
*finishes* it (the renames and removals still to do). Either way it then removes every
temporary file of dsf's there, then the journal, and says so in one line. One file needs no
journal: its rename is all-or-nothing by itself; its temporary name is still swept.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import stat
import time
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dsf_compile.edges.files import (
    JOURNAL,
    STAGED_SUFFIX,
    TEMP_TOKEN_HEX,
    TEMPORARY,
    create_new,
)
from dsf_compile.edges.journal_scope import JournalState, Ownership
from dsf_compile.edges.leftovers import WHY_RECOVERED, Debris, Recovery, RecoveryAction
from dsf_compile.edges.tree import Tree, remove_quietly, where
from dsf_compile.errors import DsfError, ForeignJournalError, InputError
from dsf_contract.records import frozen

LOCK_WAIT_SECONDS = 60.0
"""How long a command waits for another one writing the same folder."""

_TEMP = TEMPORARY


def temporary_name(name: str, suffix: str) -> str:
    """A fresh temporary name for ``name``: ``.NAME.<hex>SUFFIX``."""
    return f".{name}.{secrets.token_hex(TEMP_TOKEN_HEX // 2)}{suffix}"


def lock(tree: Tree, operation: int, error: type[DsfError]) -> None:
    """Lock the tree's folder itself (``flock`` on its directory descriptor).

    Locking the directory rather than a lock file adds no file to the tree (nothing for
    ``render --check`` or a GitOps tool to see), follows no link (the descriptor was
    opened with ``O_NOFOLLOW``), and is released by the kernel when the process ends.
    """
    deadline = time.monotonic() + LOCK_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(tree.fds[""], operation | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise error(
                    f"another dsf-compile is writing {tree.label}/; gave up waiting after "
                    f"{LOCK_WAIT_SECONDS:g} s"
                ) from None
            time.sleep(0.05)


# ---------------------------------------------------------------- the journal


class Rename(NamedTuple):
    """A staged file a committed journal moves into place (a list of three in the journal)."""

    path: str  # relative to the folder
    staged: str  # the staged file's name beside it
    backup: str  # the previous file's second name, kept until the end; "" when there was none


class Removal(NamedTuple):
    """A file a committed journal deletes (a list of two in the journal)."""

    path: str
    backup: str  # the name it is renamed away to before it is deleted


@frozen
class Plan:
    """A committed journal: every rename and every removal of the update."""

    renames: tuple[Rename, ...] = ()
    removals: tuple[Removal, ...] = ()

    def text(self) -> str:
        body = {"journal": 1, "state": JournalState.COMMIT, "renames": self.renames}
        return json.dumps({**body, "removals": self.removals}, separators=(",", ":")) + "\n"


def staging(folders: Sequence[str]) -> str:
    """The journal while staging: the folders the staging creates (an undo removes them)."""
    body = {"journal": 1, "state": JournalState.STAGING, "folders": list(folders)}
    return json.dumps(body) + "\n"


@frozen
class FoundJournal:
    """The journal a folder holds (``present``), its ``state`` (``None`` when it is not
    one dsf wrote in full: then nothing of it is trusted, and it is only undone), a
    committed journal's plan and the folders a staging one made."""

    present: bool = False
    state: JournalState | None = None
    plan: Plan | None = None
    made: tuple[str, ...] = ()


_UNREADABLE = FoundJournal(present=True)


def _parse_plan(document: dict[str, Any]) -> Plan:
    """The plan of a committed journal its command's :class:`Ownership` accepted."""
    renames = tuple(Rename(*entry) for entry in document["renames"])
    removals = tuple(Removal(*entry) for entry in document["removals"])
    return Plan(renames, removals)


def _read_journal(tree: Tree, scope: Ownership) -> FoundJournal:
    """The journal in ``tree``: its state, a committed journal's plan, and the folders a
    staging one made.

    Raises :class:`InputError` for a journal that names anything its command does not
    write (:meth:`Ownership.refusals`): then nothing is touched.
    """
    found = tree.read(JOURNAL)  # a link or a folder at its name is refused, never followed
    if found is None:
        return FoundJournal()
    try:
        document = json.loads((found.data or b"").decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return _UNREADABLE
    if not isinstance(document, dict) or document.get("journal") != 1:
        return _UNREADABLE
    refused = scope.refusals(document, where(JOURNAL, tree.label))
    if refused:
        raise ForeignJournalError(refused)
    if document["state"] == JournalState.STAGING:
        return FoundJournal(True, JournalState.STAGING, made=tuple(document["folders"]))
    return FoundJournal(True, JournalState.COMMIT, plan=_parse_plan(document))


def write_journal(tree: Tree, text: str, *, durable: bool) -> None:
    """Put ``text`` at the journal's name all at once (a rename); ``durable``: on the disk
    (``fsync``) before this returns."""
    root = tree.fds[""]
    fd, staged = create_new(f".{JOURNAL}.", STAGED_SUFFIX, dir_fd=root)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
            if durable:
                out.flush()
                os.fsync(out.fileno())
        os.replace(staged, JOURNAL, src_dir_fd=root, dst_dir_fd=root)
    except BaseException:
        remove_quietly(staged, root)
        raise
    if durable:
        os.fsync(root)  # the rename itself reaches the disk


def drop_journal(tree: Tree) -> None:
    """Remove the journal (nothing when there is none)."""
    remove_quietly(JOURNAL, tree.fds[""])


# ---------------------------------------------------------------- recovery


def inspect(tree: Tree, folders: Sequence[str] | None = None) -> Debris:
    """What a killed command left in ``tree`` (read-only): its journal and temporary files."""
    if not tree.exists:
        return Debris(tree.label)
    journal = _exists(tree.fds[""], JOURNAL)
    files = tuple(where(f"{k}/{n}".lstrip("/"), tree.label) for k, _, n in _debris(tree, folders))
    return Debris(tree.label, journal, files)


def vet_journal(folder: Path, label: str, scope: Ownership) -> None:
    """Refuse (:class:`ForeignJournalError`) a journal in ``folder`` naming anything
    ``scope``'s command does not write, changing nothing: what a command that reaches the
    network first (``sync``) checks before any request, so that a refusal costs none."""
    try:
        tree = Tree.open(folder, create=False, label=label)
    except (OSError, InputError):
        return  # the write itself reports what is wrong with the folder
    try:
        if tree.exists:
            _read_journal(tree, scope)
    finally:
        tree.close()


def recover(tree: Tree, scope: Ownership, folders: Sequence[str] | None = None) -> Recovery:
    """Finish (committed journal) or undo (any other) what a killed command left in
    ``tree``, then remove its temporary files and its journal. ``scope``: what the
    command writes there (a journal naming anything else is refused, :class:`InputError`,
    before anything is touched; only its temporary files are removed); ``folders``: the
    folders to sweep (default: the whole tree)."""
    if not tree.exists:
        return Recovery(tree.label)
    found = _read_journal(tree, scope)
    plan = found.plan
    placed, deleted = _finish(tree, plan) if plan is not None else ((), ())
    removed = tuple(_sweep(tree, scope, folders))
    for key in sorted(found.made, reverse=True):  # deepest first; only those left empty
        with contextlib.suppress(InputError):  # a link on the way: nothing of ours there
            tree.folder(key.rpartition("/")[0])  # its parent open, if it is still there
            tree.remove_folder(key)
    if not found.present:
        return Recovery(tree.label, removed=removed)
    drop_journal(tree)
    os.fsync(tree.fds[""])
    finished = found.state is JournalState.COMMIT
    action = RecoveryAction.FINISHED if finished else RecoveryAction.UNDONE
    journal = where(JOURNAL, tree.label)
    return Recovery(
        tree.label, action, WHY_RECOVERED[found.state], removed, placed, deleted, journal
    )


def _finish(tree: Tree, plan: Plan) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The renames and removals of a committed plan still to do (each one at most once);
    the files it put in place and those it deleted."""
    placed, deleted = [], []
    for relative, staged, _ in plan.renames:
        folder, name = tree.locate(relative)
        if folder is not None and _is_regular(folder, staged):
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            placed.append(where(relative, tree.label))
    for relative, kept in plan.removals:
        folder, name = tree.locate(relative)
        if folder is not None and not _exists(folder, kept) and _is_regular(folder, name):
            os.unlink(name, dir_fd=folder)
            deleted.append(where(relative, tree.label))
    prune(tree, [removal.path for removal in plan.removals])
    return tuple(placed), tuple(deleted)


def _exists(folder: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _is_regular(folder: int, name: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except FileNotFoundError:
        return False


def _debris(
    tree: Tree, folders: Sequence[str] | None, scope: Ownership | None = None
) -> list[tuple[str, int, str]]:
    """(folder key, folder descriptor, name) of every regular file named like dsf's
    temporary files (only ``scope``'s, when given); the whole tree (never through a
    link), or only ``folders``."""
    found = []
    pending = list(folders) if folders is not None else [""]
    while pending:
        key = pending.pop()
        try:
            fd = tree.folder(key)
        except InputError:
            continue  # a link or a file where a folder is: nothing of ours inside
        if fd is None:
            continue
        with os.scandir(fd) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if folders is None:
                        pending.append(f"{key}/{entry.name}".lstrip("/"))
                elif (
                    _TEMP.match(entry.name)
                    and (scope is None or scope.temporary_of(key, entry.name))
                    and entry.is_file(follow_symlinks=False)
                ):
                    found.append((key, fd, entry.name))
    return sorted(found, key=lambda item: (item[0], item[2]))


def _sweep(tree: Tree, scope: Ownership, folders: Sequence[str] | None) -> list[str]:
    """Remove every temporary file of the command's, and the folders that held only them."""
    removed = []
    emptied = []
    for key, fd, name in _debris(tree, folders, scope):
        remove_quietly(name, fd)
        removed.append(where(f"{key}/{name}".lstrip("/"), tree.label))
        emptied.append(f"{key}/x")
    prune(tree, emptied)
    return removed


def prune(tree: Tree, paths: Collection[str]) -> None:
    """Remove the folders of ``paths`` that are now empty, upward (never the tree itself)."""
    for relative in sorted(paths, reverse=True):
        key = relative.rpartition("/")[0].lstrip("/")
        while key and tree.remove_folder(key):
            key = key.rpartition("/")[0]
