"""One all-or-nothing update of ``rendered/``: check, stage, rename with undo, clean up.

Every new or changed file, and the new record, is first staged as a new temporary file
beside its target; only when all are staged are they renamed into place and the owned
files no longer rendered deleted, each previous file kept under a temporary name until
the last step succeeded. On any failure every rename is undone, so from the outside an
update happens completely or not at all.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Callable

from dsf_compile.errors import RenderError
from dsf_compile.files import create_new
from dsf_compile.render.changes import Changes
from dsf_compile.render.record import RECORD, record_text
from dsf_compile.render.tree import RENDERED, Tree, check_kind, remove_quietly, where

_STAGED = ".dsf-tmp"
_BACKUP = ".dsf-old"


class Update:
    """One all-or-nothing update of the tree: check, stage, rename with undo, clean up."""

    def __init__(self, tree: Tree, existing: set[str]) -> None:
        self.tree = tree
        self.existing = existing
        self.staged: list[tuple[str, int, str, str]] = []  # relative, folder, name, staged name
        self.undo: list[Callable[[], None]] = []
        self.backups: list[tuple[str, int, str]] = []  # relative, folder, backup name

    def run(self, changes: Changes, files: dict[str, str]) -> None:
        writes = [*changes.added.items(), *((p, new) for p, (_, new) in changes.changed.items())]
        if changes.record_stale:
            writes.append((RECORD, record_text(files)))
        self._check_removals(list(changes.removed))
        self._stage(writes)
        try:
            for relative, folder, name, staged in self.staged:
                self._replace(relative, folder, name, staged)
            for relative in changes.removed:
                self._remove(relative)
        except OSError as err:
            trouble = self._roll_back()
            state = (
                "the previous tree is restored"
                if not trouble
                else f"the previous tree could not be fully restored ({trouble})"
            )
            raise RenderError(f"cannot update {RENDERED}/: {err}; {state}") from err
        changes.leftovers = self._clean_up(list(changes.removed))

    def _check_removals(self, removed: list[str]) -> None:
        """Before anything changes: every file to delete is a regular file in a writable folder."""
        for relative in removed:
            folder, name = self.tree.locate(relative)
            assert folder is not None  # it was read a moment ago
            mode = os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode
            check_kind(relative, mode, stat.S_ISREG, "a regular file")
            if not os.access(".", os.W_OK, dir_fd=folder):
                parent = relative.rpartition("/")[0]
                raise RenderError(
                    f"cannot update {RENDERED}/: {where(parent)} is not writable, so "
                    f"{RENDERED}/{relative} cannot be deleted; nothing was changed"
                )

    def _stage(self, writes: list[tuple[str, str]]) -> None:
        """Write every file beside its target as a new ``.NAME.<random>.dsf-tmp``."""
        try:
            for relative, text in writes:
                folder, name = self.tree.locate(relative, create=True)
                assert folder is not None
                fd, staged = create_new(f".{name}.", _STAGED, dir_fd=folder)
                self.staged.append((relative, folder, name, staged))
                with os.fdopen(fd, "wb") as out:
                    out.write(text.encode("utf-8"))
        except OSError as err:
            self._roll_back()
            raise RenderError(
                f"cannot write {RENDERED}/: {err}; the previous tree is intact"
            ) from err

    def _backup_name(self, name: str) -> str:
        return f".{name}.{secrets.token_hex(6)}{_BACKUP}"

    def _replace(self, relative: str, folder: int, name: str, staged: str) -> None:
        if relative in self.existing or relative == RECORD:
            backup = self._backup_name(name)
            try:  # a second name for the previous file, to put it back on failure
                os.link(name, backup, src_dir_fd=folder, dst_dir_fd=folder, follow_symlinks=False)
            except FileNotFoundError:
                backup = ""  # the record may not exist yet
            if backup:
                self.backups.append((relative, folder, backup))
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            if backup:
                self.undo.append(
                    lambda: os.replace(backup, name, src_dir_fd=folder, dst_dir_fd=folder)
                )
            else:
                self.undo.append(lambda: os.unlink(name, dir_fd=folder))
        else:
            os.replace(staged, name, src_dir_fd=folder, dst_dir_fd=folder)
            self.undo.append(lambda: os.unlink(name, dir_fd=folder))

    def _remove(self, relative: str) -> None:
        # Renamed away, not unlinked: renaming moves the name (never a link's target) and
        # can be undone until the whole update succeeded.
        folder, name = self.tree.locate(relative)
        assert folder is not None
        backup = self._backup_name(name)
        os.rename(name, backup, src_dir_fd=folder, dst_dir_fd=folder)
        self.backups.append((relative, folder, backup))
        self.undo.append(lambda: os.rename(backup, name, src_dir_fd=folder, dst_dir_fd=folder))

    def _roll_back(self) -> str:
        """Undo every rename, remove staged files and new folders; say what could not be undone."""
        trouble = []
        for step in reversed(self.undo):
            try:
                step()
            except OSError as err:
                trouble.append(str(err))
        for _, folder, _, staged in self.staged:
            remove_quietly(staged, folder)
        for _, folder, backup in self.backups:
            remove_quietly(backup, folder)  # left only when its rename never happened
        for key in reversed(self.tree.made):
            parent_key, _, name = key.rpartition("/")
            parent = self.tree.fds.get(parent_key)
            if parent is not None:
                with contextlib.suppress(OSError):
                    os.rmdir(name, dir_fd=parent)
        return "; ".join(trouble)

    def _clean_up(self, removed: list[str]) -> list[str]:
        """After success: drop the previous files and prune folders the removals emptied."""
        leftovers = []
        for relative, folder, backup in self.backups:
            try:
                os.unlink(backup, dir_fd=folder)
            except OSError:
                leftovers.append(f"{where(relative.rpartition('/')[0])}/{backup}")
        for relative in removed:
            key = relative.rpartition("/")[0]
            while key:
                parent_key, _, name = key.rpartition("/")
                parent = self.tree.fds.get(parent_key)
                try:
                    assert parent is not None
                    os.rmdir(name, dir_fd=parent)  # fails on a non-empty folder, and on a link
                except OSError:
                    break
                key = parent_key
        return leftovers
