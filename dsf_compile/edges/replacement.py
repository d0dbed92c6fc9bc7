"""Files replaced together (:class:`Replacement`), and a command's files brought to their bytes.

The steps of one update — lock, recover, stage, commit the journal, rename with undo,
clean up — are told in :mod:`dsf_compile.edges.journal`, which holds the journal and the
recovery; this module carries the update out.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from dsf_compile.edges.files import BACKUP_SUFFIX, JOURNAL, STAGED_SUFFIX, create_new
from dsf_compile.edges.journal import (
    Plan,
    Removal,
    Rename,
    drop_journal,
    lock,
    prune,
    recover,
    staging,
    temporary_name,
    write_journal,
)
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.leftovers import Recovery
from dsf_compile.edges.tree import Found, Tree, check_kind, remove_quietly, where
from dsf_compile.errors import DsfError
from dsf_contract.records import frozen


class Staged(NamedTuple):
    """A new file staged beside its target, in the folder ``folder`` (a descriptor)."""

    path: str  # relative to the tree
    folder: int
    name: str  # the target's name in ``folder``
    staged: str  # the staged file's name there
    backup: str  # the previous file's second name ("" when there is none to keep)


class Undo(NamedTuple):
    """A rename to take back on failure: ``backup`` to ``name`` (``""``: remove ``name``)."""

    folder: int
    backup: str
    name: str


@dataclass
class Replacement:
    """One all-or-nothing update of ``tree``: stage, commit, rename with undo, clean up.

    ``existing``: the paths where a file is now (its previous file is kept until the end);
    ``error``: the error raised when the update cannot be made (the previous files are
    then in place); ``durable``: every staged file is flushed to the disk (``fsync``)
    before the commit, so that a power loss, too, leaves the previous files or the new ones
    (one ``fsync`` per file: for a few files, not for ``rendered/``'s thousands).
    """

    tree: Tree
    existing: Collection[str]
    error: type[DsfError]
    durable: bool = False
    staged: list[Staged] = field(default_factory=list)
    undo: list[Undo] = field(default_factory=list)
    journaled: bool = False

    def run(self, writes: Sequence[tuple[str, bytes]], removals: Sequence[str]) -> list[str]:
        """Write ``writes`` and delete ``removals``, all or nothing; return the backups
        that could not be deleted after an otherwise complete update."""
        self._check_removals(removals)
        self.journaled = len(writes) + len(removals) > 1
        plan = Plan()
        try:
            if self.journaled:  # not flushed: a kill keeps it, and it only undoes
                write_journal(self.tree, staging(self._new_folders(writes)), durable=False)
            self._stage(writes)
            gone = tuple(
                Removal(p, temporary_name(p.rpartition("/")[2], BACKUP_SUFFIX)) for p in removals
            )
            plan = Plan(tuple(Rename(f.path, f.staged, f.backup) for f in self.staged), gone)
            if self.journaled:
                write_journal(self.tree, plan.text(), durable=True)
        except OSError as err:
            self._roll_back()
            raise self.error(
                f"cannot write {self.tree.label}/: {err}; the previous tree is intact"
            ) from err
        try:
            self._replace_all(plan)
        except OSError as err:
            trouble = self._roll_back()
            state = (
                "the previous tree is restored"
                if not trouble
                else f"the previous tree could not be fully restored ({trouble}); the next "
                "run finishes the update"
            )
            raise self.error(f"cannot update {self.tree.label}/: {err}; {state}") from err
        return self._clean_up(plan)

    def _check_removals(self, removals: Sequence[str]) -> None:
        """Before anything changes: every file to delete is a regular file in a writable folder."""
        for relative in removals:
            folder, name = self._located(relative)  # it was read a moment ago
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            check_kind(relative, mode, stat.S_ISREG, "a regular file", self.tree.label)
            if not os.access(".", os.W_OK, dir_fd=folder):
                parent = relative.rpartition("/")[0]
                raise self.error(
                    f"cannot update {self.tree.label}/: {where(parent, self.tree.label)} is "
                    f"not writable, so {where(relative, self.tree.label)} cannot be deleted; "
                    "nothing was changed"
                )

    def _new_folders(self, writes: Sequence[tuple[str, bytes]]) -> list[str]:
        """The folders staging ``writes`` will create, parents first."""
        new: set[str] = set()
        for relative, _ in writes:
            key = relative.rpartition("/")[0]
            while key and key not in new and self.tree.folder(key) is None:
                new.add(key)
                key = key.rpartition("/")[0]
        return sorted(new)

    def _stage(self, writes: Sequence[tuple[str, bytes]]) -> None:
        """Write every file beside its target as a new ``.NAME.<random>.dsf-tmp``, flushed."""
        for relative, data in writes:
            folder, name = self._located(relative, create=True)
            fd, staged = create_new(f".{name}.", STAGED_SUFFIX, dir_fd=folder)
            kept = temporary_name(name, BACKUP_SUFFIX) if relative in self.existing else ""
            self.staged.append(Staged(relative, folder, name, staged, kept))
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                if self.durable:
                    out.flush()
                    os.fsync(out.fileno())

    def _located(self, relative: str, *, create: bool = False) -> tuple[int, str]:
        """The descriptor of the folder holding ``relative``, and the file's name in it;
        a folder gone meanwhile is an :class:`OSError`, as any other failed access."""
        folder, name = self.tree.locate(relative, create=create)
        if folder is None:
            raise FileNotFoundError(
                errno.ENOENT, "its folder is gone", where(relative, self.tree.label)
            )
        return folder, name

    def _replace_all(self, plan: Plan) -> None:
        for _, folder, name, staged, kept in self.staged:
            if kept:  # a second name for the previous file, to put it back on failure
                try:
                    os.link(name, kept, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
                except FileNotFoundError:
                    kept = ""  # gone meanwhile: nothing to put back
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            self.undo.append(Undo(folder, kept, name))
        # Renamed away, not unlinked: renaming moves the name (never a link's target) and
        # can be undone until the whole update succeeded.
        for relative, kept in plan.removals:
            at, name = self._located(relative)
            os.rename(name, kept, src_dir_fd=at, dst_dir_fd=at)
            self.undo.append(Undo(at, kept, name))

    def _roll_back(self) -> str:
        """Undo every rename, remove staged files and new folders; say what could not be
        undone (then the journal stays, and the next run finishes the update)."""
        trouble = []
        for folder, kept, name in reversed(self.undo):
            try:
                if kept:
                    os.replace(kept, name, src_dir_fd=folder, dst_dir_fd=folder)
                else:
                    os.unlink(name, dir_fd=folder)
            except OSError as err:
                trouble.append(str(err))
        for _, folder, _, staged, kept in self.staged:
            remove_quietly(staged, folder)
            remove_quietly(kept, folder)  # left only when its rename never happened
        for key in reversed(self.tree.made):
            self.tree.remove_folder(key)
        if self.journaled and not trouble:
            drop_journal(self.tree)
        return "; ".join(trouble)

    def _clean_up(self, plan: Plan) -> list[str]:
        """After success: drop the previous files, prune folders the removals emptied,
        then the journal."""
        leftovers = []
        kept = [Removal(r.path, r.backup) for r in plan.renames if r.backup]
        for relative, backup in kept + list(plan.removals):
            folder, _ = self.tree.locate(relative)
            try:
                if folder is not None:
                    os.unlink(backup, dir_fd=folder)
            except FileNotFoundError:
                pass  # the previous file had gone before it could be kept
            except OSError:
                folder = None
            if folder is None:
                leftovers.append(
                    where(f"{relative.rpartition('/')[0]}/{backup}".lstrip("/"), self.tree.label)
                )
        prune(self.tree, [removal.path for removal in plan.removals])
        if self.journaled and not leftovers:
            try:
                os.unlink(JOURNAL, dir_fd=self.tree.fds[""])
            except OSError:
                leftovers.append(where(JOURNAL, self.tree.label))
        return leftovers  # the next run removes them (the journal stays for it: see recover)


# ---------------------------------------------------------------- a command's files


@frozen
class Replaced:
    """What :func:`replace_files` did: the files it wrote, and what it recovered first."""

    written: tuple[str, ...]
    recovery: Recovery

    @property
    def recovered(self) -> str:
        """The line to show the user about a killed command's leftovers (or ``""``)."""
        return self.recovery.line() if self.recovery.found else ""


def replace_files(
    folder: Path,
    files: Mapping[str, bytes],
    *,
    label: str,
    error: type[DsfError],
    scope: Ownership,
) -> Replaced:
    """Bring the files ``files`` names (paths under ``folder``) to their bytes, all or
    nothing and durably, under ``folder``'s lock, after recovering what a killed command
    left there; files whose bytes are already right are not rewritten. ``scope``: what
    the command writes in ``folder``, the only files a journal there may name
    (:class:`InputError` otherwise, before anything is touched).

    ``folder`` is created if missing; a link at its last component (or below) is refused,
    never followed.
    """
    try:
        tree = Tree.open(folder, create=True, label=label)
    except OSError as err:
        raise error(f"cannot open {label}/: {err}") from err
    try:
        lock(tree, fcntl.LOCK_EX, error)
        folders = sorted({p.rpartition("/")[0] for p in files} | {""})
        recovery = recover(tree, scope, folders)
        found = {p: tree.read(p) for p in files}
        existing = {p for p, now in found.items() if now is not None}
        writes = [(p, data) for p, data in files.items() if _bytes(found[p]) != data]
        if writes:
            Replacement(tree, existing, error, durable=True).run(writes, [])
        return Replaced(tuple(p for p, _ in writes), recovery)
    except OSError as err:
        raise error(f"cannot update {label}/: {err}") from err
    finally:
        tree.close()


def _bytes(found: Found | None) -> bytes | None:
    return None if found is None else found.data
