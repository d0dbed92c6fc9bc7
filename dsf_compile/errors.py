"""The error tree of the compiler, and the did-you-mean hint its messages share.

Stages collect :class:`~dsf_contract.problem.Problem` records instead of stopping at the
first one; the CLI prints them sorted and turns them into exit codes. Only the CLI
catches :class:`DsfError`.
"""

from __future__ import annotations

from collections.abc import Iterable

from dsf_contract.problem import Problem


class DsfError(Exception):
    """Base of every error the project raises on purpose."""


class InputError(DsfError):
    """The inputs are invalid; carries every problem found, sorted."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems = tuple(sorted(problems))
        super().__init__(f"{len(self.problems)} problem(s) in the inputs")


class ForeignJournalError(InputError):
    """A journal names a file its command does not write: recovery refused, nothing touched."""


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


class MassRemovalError(DsfError):
    """``sync --clusters`` would remove too much of the inventory to trust the hub's list."""

    def __init__(
        self, problems: Iterable[Problem], removed: int, held: int, listed: int, fraction: float
    ) -> None:
        self.problems = tuple(sorted(problems))
        self.removed = removed
        super().__init__(
            f"the hub lists {listed} cluster(s): removing {removed} of the {held} in "
            f"clusters/discovered.yaml is more than sync.maxClusterRemovalFraction ({fraction:g}) "
            "allows; the file was not changed (check that --hub-kubeconfig names the right "
            "hub, or pass --allow-mass-removal to remove them)"
        )


class UnreadableInventoryError(MassRemovalError):
    """``sync --clusters`` cannot read ``clusters/discovered.yaml`` as ``validate`` does, so
    it cannot tell what the hub's list would remove (the guard's input, unreadable)."""

    def __init__(self, problems: Iterable[Problem], file: str) -> None:
        self.problems = tuple(sorted(problems))
        self.removed = 0
        DsfError.__init__(
            self,
            f"cannot tell which clusters {file} holds, so not which ones the hub's list would "
            "remove; the file was not changed (fix or remove it, or pass --allow-mass-removal "
            "to replace it)",
        )


class RenderError(DsfError):
    """Rendering failed for a reason that is not an input problem (for example I/O)."""


class WriteError(DsfError):
    """Files could not be written (I/O); the previous ones are in place."""


class UsageError(DsfError):
    """The command line is wrong."""


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``choices``, or an empty string."""
    import difflib  # every command imports this module; few ever suggest a name

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
