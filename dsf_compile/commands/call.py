"""What a ``dsf-compile`` handler gets (:class:`Call`) and the helpers handlers share.

The exit codes, the error line, the hub state a command's options name
(``--scores``/``--decisions``/``--hub-kubeconfig``) and the clock.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dsf_compile.commands import parser as cli_parser
from dsf_compile.commands.reporters import Reporter
from dsf_compile.edges.untrusted import safe_message
from dsf_compile.errors import (
    UsageError,
)
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:
    from dsf_compile.edges.hub import HubAccess
    from dsf_compile.hubread.state import HubState


EXIT_OK, EXIT_INVALID, EXIT_FAILURE = 0, 1, 2

#: Where ``scorer-check`` finds the bearer token when ``--token`` is not given.
SCORER_TOKEN_VARIABLE = "DSF_SCORER_TOKEN"
NO_SCORES_WARNING = (
    "no scores given (--scores PATH or --hub-kubeconfig PATH): every AddOnPlacementScore "
    "counts 0, so these decisions are not the hub's"
)


def refuse_unused_state_options(command: str, args: argparse.Namespace) -> None:
    """``render`` and ``diff`` use ``--scores``/``--decisions``/``--at`` only to replay the
    hub's decisions (``render --check``, ``diff``); given where nothing reads them, they are
    refused rather than silently dropped."""
    given = [
        flag
        for flag, value in (
            ("--scores", args.scores),
            ("--decisions", args.decisions),
            ("--at", args.at),
        )
        if value is not None
    ]
    if command == "render" and not args.check and given:
        raise UsageError(
            f"render: {', '.join(given)} only with --check (or diff): they replay the hub's "
            "decisions against the rendered placements, which writing rendered/ does not do"
        )
    if given == ["--at"]:
        raise UsageError(
            f"{command}: --at judges the times of --scores or --decisions; give one of them"
        )


def hub_access(args: argparse.Namespace) -> HubAccess:
    """Where the hub's credentials come from: ``--hub-kubeconfig``, else ``$KUBECONFIG``,
    else ``~/.kube/config``, in ``--context`` (as kubectl finds them)."""
    from dsf_compile.edges.hub import HubAccess

    return HubAccess(getattr(args, "hub_kubeconfig", None), getattr(args, "context", None))


def hub_state_of(args: argparse.Namespace, root: Path) -> HubState | None:
    """The state named by the options, or None when neither scores nor a hub were given.

    The hub is read when ``--hub-kubeconfig`` or ``--context`` names it."""
    from_hub = bool(getattr(args, "hub_kubeconfig", None) or getattr(args, "context", None))
    if from_hub and (args.scores or args.decisions):
        raise UsageError(
            "--hub-kubeconfig and --context read scores and decisions from the hub: "
            "drop --scores/--decisions"
        )
    if not from_hub and args.scores is None and args.decisions is None:
        return None  # before the import: a no-op --check must not load the models
    from dsf_compile.hubread.state import HubState, read_decisions, read_hub, read_scores

    if from_hub:
        from dsf_compile.pipeline.inputs import load_settings

        return read_hub(hub_access(args), load_settings(root).hub)
    scores = read_scores(args.scores) if args.scores else None
    decisions = read_decisions(args.decisions) if args.decisions else ()
    return HubState(scores, decisions)


def no_scores() -> HubState:
    """An empty hub state: every AddOnPlacementScore counts 0."""
    from dsf_compile.hubread.state import HubState

    return HubState(None, ())


def now() -> datetime:
    """The current moment, in UTC (what ``--at`` defaults to)."""
    return datetime.now(UTC)


def print_error(error: BaseException | str, stream: TextIO) -> None:
    """``dsf-compile: error: …`` on ``stream``, each line of the error escaped."""
    # an error may carry several lines (a hub's malformed objects, one each): each is escaped
    lines = getattr(error, "lines", None) or (str(error),)
    for line in lines:
        print(f"dsf-compile: error: {safe_message(line)}", file=stream)


@frozen
class Call:
    """One command's parsed arguments, its repository, and where and how it prints."""

    command: cli_parser.Command
    args: argparse.Namespace
    root: Path
    out: TextIO
    err: TextIO
    report: Reporter
    #: The parser that read ``args``: ``completion`` prints its script from it.
    parser: argparse.ArgumentParser

    @property
    def writes(self) -> bool:
        """Whether this run may write (so that a failure says nothing was written)."""
        return self.command.writes and not getattr(self.args, "check", False)

    @property
    def compares(self) -> bool:
        """Whether this run compares (``render --check``, ``diff``, ``explain --verify``,
        ``backtest``): 1 then means "differs" (backtest: over ``--max-changes-per-day``),
        and anything that stops the comparison is 2."""
        name, args = self.command.name, self.args
        if name == "render":
            return bool(args.check)
        return name in ("diff", "backtest") or (name == "explain" and bool(args.verify))

    @property
    def structured(self) -> bool:
        """Whether the result goes into the reporter's document, not the command's own text."""
        return self.report.structured

    def problems(self, problems: Sequence[Problem]) -> None:
        self.report.problems(problems)

    def say(self, line: str) -> None:
        self.report.say(line)
