"""What a journal may name: only the files of the command that writes its folder.

A journal is a file in the repository, so Git can carry one that no dsf-compile wrote: a
pull request may commit ``.dsf-journal`` beside a planted ``.NAME.<hex>.dsf-tmp``. The
recovery (:func:`dsf_compile.edges.journal.recover`) therefore trusts a journal only when
every path, staged name, backup name and folder it names is one the command that reads it
writes there (:class:`Ownership`: ``sync`` the lockfile, ``sync --clusters``
``clusters/discovered.yaml``, ``schemas`` its ``*.schema.json``, ``optimize`` and
``render`` their own folders); anything else is refused before a file is touched, one
located problem per entry, and the journal stays for the user to look at.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection
from enum import StrEnum
from typing import Any

from dsf_compile.edges.files import BACKUP_SUFFIX, STAGED_SUFFIX, TEMPORARY
from dsf_contract.problem import Problem
from dsf_contract.records import frozen


class JournalState(StrEnum):
    """Where the update a journal records stood: its ``state`` field."""

    STAGING = "staging"  # the new files were being staged: nothing replaced yet
    COMMIT = "commit"  # every file staged and the whole plan written: the commit point


MAX_JOURNAL_ENTRIES = 1_000_000
"""More renames than any real tree holds: a larger journal was not written by dsf."""
#: Entries named one by one when a journal is refused; a count says the rest.
_NAMED = 20

#: A path dsf writes: plain names, none hidden (never ``.``, ``..``, a record, a journal
#: or a temporary file), ``/`` between them.
SAFE_PATH = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*(?:/[A-Za-z0-9_][A-Za-z0-9._-]*)*\Z")
# What a journal may name: such a path, or one whose file is hidden (render's record).
PLANNED_PATH = re.compile(r"(?:[A-Za-z0-9_][A-Za-z0-9._-]*/)*\.?[A-Za-z0-9_][A-Za-z0-9._-]*\Z")


@frozen
class Ownership:
    """What one command writes in the folder it updates: the only paths its journal may
    name (relative to that folder), and the only temporary files its recovery removes."""

    command: str
    writes: str  # said in a refusal: "dsf.lock.json", "every file under rendered/"
    owns: Callable[[str], bool]

    @classmethod
    def files(cls, command: str, names: Collection[str]) -> Ownership:
        """A command that writes exactly ``names`` (top-level files of its folder)."""
        chosen = frozenset(names)
        return cls(command, ", ".join(sorted(chosen)), chosen.__contains__)

    @classmethod
    def folder(cls, command: str, label: str) -> Ownership:
        """A command that owns its whole folder ``label``."""
        return cls(command, f"every file under {label}/", lambda _: True)

    def temporary_of(self, key: str, name: str) -> bool:
        """Whether ``name`` in the folder ``key`` is a temporary file of this command's:
        of a file it writes, or of the journal."""
        found = TEMPORARY.match(name)
        if found is None:
            return False
        target = found.group(1)
        return target == ".dsf-journal" or self.owns(f"{key}/{target}".lstrip("/"))

    def refusals(self, document: dict[str, Any], journal: str) -> list[Problem]:
        """Every entry of a parsed journal that this command could not have written."""
        said: list[tuple[str, str]] = []
        state = document.get("state")
        if state == JournalState.STAGING:
            said += self._folders(document.get("folders"))
        elif state == JournalState.COMMIT:
            said += self._entries(document, "renames", 3)
            said += self._entries(document, "removals", 2)
        else:
            said.append(("state", f"must be {JournalState.STAGING} or {JournalState.COMMIT}"))
        tail = "a journal dsf-compile did not write for this command; nothing was touched"
        tail += f" (remove {journal} if no dsf-compile was killed here)"
        problems = [Problem(journal, 1, 1, f, f"{m}: {tail}") for f, m in said[:_NAMED]]
        if len(said) > _NAMED:
            field = said[_NAMED][0]
            problems.append(Problem(journal, 1, 1, field, f"and {len(said) - _NAMED} more"))
        return problems

    def _folders(self, listed: Any) -> list[tuple[str, str]]:
        if not isinstance(listed, list) or len(listed) > MAX_JOURNAL_ENTRIES:
            return [("folders", "must be a list of folders")]
        return [
            (f"folders[{index}]", why)
            for index, folder in enumerate(listed)
            if (why := self._path_problem(folder, SAFE_PATH))
        ]

    def _entries(self, document: dict[str, Any], key: str, size: int) -> list[tuple[str, str]]:
        listed = document.get(key)
        if not isinstance(listed, list) or len(listed) > MAX_JOURNAL_ENTRIES:
            return [(key, f"must be a list of at most {MAX_JOURNAL_ENTRIES} entries")]
        said = []
        for index, entry in enumerate(listed):
            if not (
                isinstance(entry, list)
                and len(entry) == size
                and all(isinstance(part, str) for part in entry)
            ):
                said.append((f"{key}[{index}]", f"must be a list of {size} strings"))
            elif why := self._path_problem(entry[0], PLANNED_PATH) or _names_problem(entry):
                said.append((f"{key}[{index}]", why))
        return said

    def _path_problem(self, path: Any, pattern: re.Pattern[str]) -> str:
        if not isinstance(path, str) or not pattern.match(path):
            return "names something that is not a path inside this folder"
        if not self.owns(path):
            return (
                f"names {path}, which '{self.command}' never writes here (it writes {self.writes})"
            )
        return ""


def _names_problem(entry: list[str]) -> str:
    """Why the temporary names of a rename ``[path, staged, backup]`` or a removal
    ``[path, backup]`` are not those dsf gives ``path``'s file (``""``: they are)."""
    name = entry[0].rpartition("/")[2]
    staged, kept = (entry[1], entry[2]) if len(entry) == 3 else ("", entry[1])
    if staged and not _named_for(name, staged, STAGED_SUFFIX):
        return f"its staged name is not one dsf gives {entry[0]}"
    if (kept or len(entry) == 2) and not _named_for(name, kept, BACKUP_SUFFIX):
        return f"its backup name is not one dsf gives {entry[0]}"
    return ""


def _named_for(name: str, temporary: str, suffix: str) -> bool:
    found = TEMPORARY.match(temporary)
    return found is not None and found.group(1) == name and temporary.endswith(suffix)
