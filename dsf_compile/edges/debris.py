"""What a killed command left in the repository, as problems of the inputs.

``validate`` (and ``render``) report every journal and temporary file of dsf's they find;
recovering them is :mod:`dsf_compile.edges.journal`'s, which reading does not load.
"""

from __future__ import annotations

from pathlib import Path

from dsf_compile.edges.files import JOURNAL, MAX_DEBRIS_SCAN, find_debris
from dsf_compile.edges.tree import RENDERED
from dsf_contract.problem import Problem


def debris_problems(root: Path) -> list[Problem]:
    """An error for every journal and temporary file of dsf's anywhere in the repository:
    committed, or left by a killed command, they are never inputs, and a planted one must
    not wait for the next run to act on it."""
    found, stopped = find_debris(root)
    problems = [Problem(path, 0, 0, "", _debris_message(path)) for path in found]
    if stopped:
        message = f"looked for dsf's temporary files in the first {MAX_DEBRIS_SCAN} entries only"
        problems.append(Problem(".", 0, 0, "", message, "warning"))
    return problems


def _debris_message(path: str) -> str:
    who = "'dsf-compile render'" if path.startswith(f"{RENDERED}/") else "the command writing here"
    if path.rpartition("/")[2] == JOURNAL:
        return (
            "a journal left by a killed dsf-compile, or planted: never commit it; "
            f"{who} finishes or undoes its own and refuses one naming anything else "
            "(remove that one)"
        )
    return (
        "a temporary file left by a killed dsf-compile, or planted: never commit it; "
        f"{who} removes its own (remove any other)"
    )
