"""The error tree and the problem record every stage reports with.

A :class:`Problem` is one finding about one field of one input file. Stages collect
problems instead of stopping at the first one; the CLI prints them sorted and turns
them into exit codes. Only the CLI catches :class:`DsfError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsf_compile.escaping import github_message, github_property, terminal


@dataclass(frozen=True, order=True)
class Problem:
    """One finding, located in a file: ``path:line:column: severity: field: message``.

    ``path`` is relative to the repository root; ``line`` and ``column`` are 1-based
    (0 when the problem is about a whole file or has no location). ``field`` is the
    dotted path of the field (``spec.scoring.params.interval``), empty for a whole file.
    """

    path: str
    line: int
    column: int
    field: str
    message: str
    severity: str = "error"

    def format(self) -> str:
        """One terminal line: what the inputs put in the path, field or message is escaped."""
        where = f"{self.field}: " if self.field else ""
        return terminal(
            f"{self.path}:{self.line}:{self.column}: {self.severity}: {where}{self.message}"
        )

    def format_github(self) -> str:
        """A GitHub workflow command (``::error file=…,line=…,col=…::message``)."""
        level = {"error": "error", "info": "notice"}.get(self.severity, "warning")
        where = f"{self.field}: " if self.field else ""
        text = github_message(f"{where}{self.message}")
        return f"::{level} file={github_property(self.path)},line={self.line},col={self.column}::{text}"


class DsfError(Exception):
    """Base of every error the project raises on purpose."""


class InputError(DsfError):
    """The inputs are invalid; carries every problem found, sorted."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems))
        super().__init__(f"{len(self.problems)} problem(s) in the inputs")


class SyncError(DsfError):
    """Sync could not run at all (not: a scorer is down, which makes it Inactive)."""


class UnreachableFleetError(DsfError):
    """Sync reached too few of the scorers Active in the lockfile to trust what it saw; nothing was written."""

    def __init__(
        self, problems: Iterable[Problem], lost: int, counted: int, fraction: float
    ) -> None:
        self.problems = tuple(sorted(problems))
        self.lost = lost
        self.counted = counted
        self.fraction = fraction
        super().__init__(
            f"{lost} of the {counted} scorer(s) Active in dsf.lock.json could not be reached: "
            "this machine does not seem to reach the scorers; dsf.lock.json was not changed "
            "(run sync where they are reachable, or pass --allow-mass-failure to record them "
            f"Inactive; sync.maxUnreachableFraction is {fraction:g})"
        )


class RenderError(DsfError):
    """Rendering failed for a reason that is not an input problem (for example I/O)."""


class UsageError(DsfError):
    """The command line is wrong."""
