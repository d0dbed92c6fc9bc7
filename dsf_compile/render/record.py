"""``rendered/.dsf-files``: the record of the files the compiler owns, and may delete.

A render deletes only what this record lists; a line the compiler could not have written
(a hidden name, ``..``, a control character) is refused rather than trusted.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsf_compile.edges.journal_scope import SAFE_PATH
from dsf_compile.edges.tree import RENDERED, Tree, refuse
from dsf_compile.errors import InputError
from dsf_contract.problem import Problem

RECORD = ".dsf-files"
RECORD_HEADER = "# Files written by dsf-compile; it deletes only these. Do not edit.\n"

# A path the compiler writes (never hidden: never the record, the journal or a staged
# file). Anything else in the record was not written by it.
_OWNED_PATH = SAFE_PATH


def record_text(paths: Iterable[str]) -> str:
    """The record listing ``paths``, sorted."""
    return RECORD_HEADER + "".join(f"{p}\n" for p in sorted(paths))


def read_owned(tree: Tree) -> tuple[set[str], bool]:
    """The paths the record lists, and whether it exists; refuses lines it could not have written."""
    found = tree.read(RECORD)
    if found is None:
        return set(), False
    if found.data is None:
        raise refuse(RECORD, f"{found.reason}; restore it from Git")
    owned: set[str] = set()
    problems = []
    for number, line in enumerate(found.data.split(b"\n"), 1):
        if not line or line.startswith(b"#"):
            continue
        text = line.decode("ascii", "backslashreplace")
        if _OWNED_PATH.match(text):
            owned.add(text)
        else:
            shown = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text[:80])
            shown = f"'{shown}'" if len(text) <= 80 else f"'{shown}...'"
            problems.append(
                Problem(
                    f"{RENDERED}/{RECORD}",
                    number,
                    1,
                    "",
                    f"{shown} is not a file dsf-compile writes; restore the record from Git",
                )
            )
    if problems:
        raise InputError(problems)
    return owned, True
