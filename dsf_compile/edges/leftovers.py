"""What a killed command left, and what the next run did about it: the records and their lines.

:mod:`dsf_compile.edges.journal` finds the leftovers (:func:`~dsf_compile.edges.journal.inspect`)
and recovers them (:func:`~dsf_compile.edges.journal.recover`); these are what it returns,
and the one line each says to the user. Plain values: reading them loads no writer.
"""

from __future__ import annotations

from enum import StrEnum

from dsf_compile.edges.files import JOURNAL
from dsf_compile.edges.journal_scope import JournalState
from dsf_compile.edges.tree import where
from dsf_contract.escaping import terminal
from dsf_contract.records import frozen


class RecoveryAction(StrEnum):
    """What the next run did with a killed one's journal."""

    NONE = ""  # there was none: only temporary files, if any, were removed
    FINISHED = "finished"  # a committed journal: its renames and removals done
    UNDONE = "undone"  # any other: what it staged removed


@frozen
class Recovery:
    """What the next run found of a killed one, and did about it: every file it touched,
    named under ``label``."""

    label: str = ""
    action: RecoveryAction = RecoveryAction.NONE
    why: str = ""
    removed: tuple[str, ...] = ()  # temporary files removed
    placed: tuple[str, ...] = ()  # staged files a finished update moved into place
    deleted: tuple[str, ...] = ()  # files a finished update deleted
    journal: str = ""  # the journal, when it was removed

    @property
    def found(self) -> bool:
        return self.action is not RecoveryAction.NONE or bool(self.removed)

    def line(self) -> str:
        """One line for the user: what was found, what was done and why, and every file
        it touched."""
        verb = _VERBS[self.action]
        done = f"{verb} its update ({self.why}); " if verb else ""
        if self.placed:
            done += f"put {len(self.placed)} file(s) in place ({', '.join(self.placed)}); "
        if self.deleted:
            done += f"deleted {len(self.deleted)} file(s) ({', '.join(self.deleted)}); "
        place = f"{self.label}/" if self.label else "the repository's folder"
        removed = f" ({', '.join(self.removed)})" if self.removed else ""
        journal = f"; removed its journal {self.journal}" if self.journal else ""
        return (
            f"recovered {place} after an interrupted dsf-compile: {done}"
            f"removed {len(self.removed)} temporary file(s) of its own{removed}{journal}"
        )


@frozen
class Debris:
    """What a killed command left, found without changing anything (``render --check``)."""

    label: str
    journal: bool = False
    files: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return self.journal or bool(self.files)

    def line(self, command: str) -> str:
        """One line naming the debris and the command that removes it."""
        names = [where(JOURNAL, self.label)] if self.journal else []
        names += list(self.files[:3])
        more = len(self.files) - min(len(self.files), 3)
        # names from the repository: a pull request may have planted them
        shown = terminal(", ".join(names)) + (f" and {more} more" if more else "")
        if self.journal:
            what, does = (
                "an interrupted update (its journal)",
                "finishes or undoes it and removes them",
            )
        else:
            what, does = "temporary files", "removes them"
        return (
            f"{self.label}/ holds {what} left by a killed dsf-compile: {shown}; '{command}' {does}"
        )


_VERBS = {
    RecoveryAction.NONE: "",
    RecoveryAction.FINISHED: "finished",
    RecoveryAction.UNDONE: "undid",
}
WHY_RECOVERED: dict[JournalState | None, str] = {
    JournalState.COMMIT: "it was killed while moving the staged files into place, after "
    "every new file had been staged and the plan written",
    JournalState.STAGING: "it was killed while staging the new files, before any file was replaced",
    None: "its journal is not one dsf wrote in full, so nothing of it is trusted",
}
