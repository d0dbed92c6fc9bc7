"""``dsf-compile``'s argument parser, built from a table of :class:`Command` entries.

Each command is one entry: its name, one line for ``dsf-compile --help``, a description
and an example for its own ``--help``, the formats it prints in, its options (rows of
:class:`Option`) and the handler that runs it. The options every command takes (``--root``,
``--format``) are accepted before or after the command's name: the subcommand's copy
is added with ``SUPPRESS`` so that it only overrides what was given before the name.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NoReturn

from dsf_compile.errors import UsageError
from dsf_contract import __version__

PROG = "dsf-compile"
#: ``--root``'s help, the same in ``dsf-compile`` and ``dsf-mcp``.
ROOT_HELP = (
    "the repository (default: the nearest folder, from here upward, holding "
    "dsf.yaml or scorers/ and clusters/)"
)
MAX_TIMEOUT_SECONDS = 3600.0


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(message)


class Option:
    """One row of an option table: a flag (or a positional's name), its metavar and help,
    and any other keyword ``add_argument`` takes (``dest``, ``type``, ``nargs``…)."""

    def __init__(self, flag: str, metavar: str | None, help: str, **keywords: Any) -> None:
        self.flag = flag
        self.keywords: dict[str, Any] = {"help": help, **keywords}
        if metavar is not None:  # flags (store_true) take none
            self.keywords["metavar"] = metavar


def add_options(parser: argparse._ActionsContainer, options: Iterable[Option]) -> None:
    """Add each row of ``options`` to ``parser`` (or to a group of it), in order."""
    for option in options:
        parser.add_argument(option.flag, **option.keywords)


@dataclass(frozen=True)
class Command:
    """One subcommand: what ``--help`` says about it and how it runs."""

    name: str
    #: One line, in ``dsf-compile --help``.
    summary: str
    #: What it does, in its own ``--help``.
    description: str
    #: A command line (or several) to copy, in its own ``--help``.
    example: str
    #: ``handler(call) -> exit code``.
    handler: Callable[[Any], int]
    #: Its own arguments, in ``--help``'s order (``--root`` and ``--format`` are every command's).
    options: tuple[Option, ...] = ()
    #: ``--format`` choices; the first is the default (``github`` under GitHub Actions).
    formats: tuple[str, ...] = ("text", "github")
    #: Whether it works on a repository (``--root``, or the one found upward).
    repository: bool = True
    #: Whether it may write (``--check`` aside): only then does a failure say nothing was written.
    writes: bool = False


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    """The whole parser: the global options, then one subparser per command."""
    parser = _Parser(
        prog=PROG,
        description="Validate, sync and render a DSF fleet for OCM.",
        epilog=f"'{PROG} COMMAND --help' describes a command, with an example.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    every_format = dict.fromkeys(f for c in commands for f in c.formats)  # text first
    _add_global_options(parser, list(every_format), None)
    subparsers = parser.add_subparsers(
        dest="command", required=True, parser_class=_Parser, metavar="COMMAND"
    )
    for command in commands:
        _add_command(subparsers, command)
    return parser


def _add_global_options(
    parser: argparse.ArgumentParser, formats: Sequence[str], default: object
) -> None:
    parser.add_argument(
        "--root",
        metavar="DIR",
        default=default,
        help=ROOT_HELP,
    )
    if formats:
        parser.add_argument(
            "--format",
            choices=formats,
            default=default,
            help=f"how the command prints: {', '.join(formats)} (default: {formats[0]}; "
            "github under GitHub Actions)",
        )


def _add_command(subparsers: Any, command: Command) -> None:
    sub = subparsers.add_parser(
        command.name,
        help=command.summary,
        description=command.description,
        epilog="example:\n" + "\n".join(f"  {line}" for line in command.example.splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if command.repository:
        _add_global_options(sub, command.formats, argparse.SUPPRESS)
    add_options(sub, command.options)


def check_format(command: Command, chosen: str | None) -> None:
    """A ``--format`` given before the command's name is checked against its choices."""
    if chosen is None or chosen in command.formats:
        return
    if not command.formats:
        raise UsageError(f"{command.name} takes no --format")
    raise UsageError(f"{command.name}: --format {chosen}: choose from {', '.join(command.formats)}")


# ------------------------------------------------------------------ argument types


def seconds(text: str) -> float:
    """A time limit: a finite number of seconds above 0 and at most an hour."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and 0 < value <= MAX_TIMEOUT_SECONDS):
        raise argparse.ArgumentTypeError(
            f"{text!r}: must be more than 0 and at most {MAX_TIMEOUT_SECONDS:g} seconds"
        )
    return value


def moment(text: str) -> datetime:
    """An RFC 3339 time (``--at``)."""
    from dsf_contract.fields import parse_time  # not on the no-op path: it imports pydantic

    try:
        return parse_time(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


#: The hub's context, for every command that reads a hub (``--hub-kubeconfig``, else
#: ``$KUBECONFIG``, else ``~/.kube/config``, as kubectl finds it).
CONTEXT = Option(
    "--context",
    "NAME",
    "the kubeconfig context of the hub (default: its current context); the kubeconfig is "
    "--hub-kubeconfig, else $KUBECONFIG (files merged as kubectl merges them), else "
    "~/.kube/config",
)


def state_options(*, hub: bool) -> tuple[Option, ...]:
    """``--scores``/``--decisions``/``--at`` (and ``--hub-kubeconfig``): the hub state to replay."""
    files = (
        Option("--scores", "PATH", "AddOnPlacementScores: a YAML/JSON file or folder"),
        Option("--decisions", "PATH", "PlacementDecisions: a YAML/JSON file or folder"),
    )
    from_hub = Option(
        "--hub-kubeconfig", "PATH", "read scores, decisions and bindings from a hub (list only)"
    )
    at = Option(
        "--at",
        "RFC3339",
        "judge validUntil and toleration times at this moment (default: now)",
        type=moment,
        default=None,
    )
    return (*files, *((from_hub, CONTEXT) if hub else ()), at)
