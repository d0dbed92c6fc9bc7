"""``dsf-compile``'s argument parser, built from a table of :class:`Command` entries.

Each command is one entry: its name, one line for ``dsf-compile --help``, a description
and an example for its own ``--help``, the formats it prints in, its options (rows of
:class:`Option`) and the handler that runs it. The options every command takes (``--root``,
``--format``) are accepted before or after the command's name: the subcommand's copy
is added with ``SUPPRESS`` so that it only overrides what was given before the name.
"""

from __future__ import annotations

import argparse
import enum
import math
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, NoReturn

from dsf_compile.errors import UsageError
from dsf_contract import __version__
from dsf_contract.records import frozen

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


class Completion(enum.Enum):
    """What a shell completes an option's value with (``dsf-compile completion``)."""

    FILE = "file"
    DIRECTORY = "directory"


#: The attribute of an argparse action holding its :class:`Completion`.
COMPLETION_ATTRIBUTE = "dsf_completion"
_UNSET: Any = object()


@frozen
class Option:
    """One row of an option table: a flag (or a positional's name), its metavar, help,
    value type and completion, and how argparse stores it. Each option is defined once;
    a command that gives it another role says so with :meth:`where`."""

    flag: str
    metavar: str | None
    help: str
    type: Callable[[str], Any] | None = None
    complete: Completion | None = None
    action: str | None = None
    nargs: str | None = None
    default: Any = _UNSET
    dest: str | None = None
    choices: tuple[str, ...] | None = None
    required: bool = False

    def where(self, help: str, **changes: Any) -> Option:
        """This option, as one command uses it: its own help (and ``changes``), the same
        flag, value, type and completion."""
        return replace(self, help=help, **changes)

    def as_input(self, help: str, **changes: Any) -> Option:
        """This option as an input of ``ci`` (the GitHub Action's): text passed on to the
        command that reads it, empty when not given."""
        given = {"help": help, "type": None, "default": "", "required": False, **changes}
        return replace(self, **given)

    def arguments(self) -> dict[str, Any]:
        """``add_argument``'s keywords."""
        given = {
            "help": self.help,
            "metavar": self.metavar,
            "type": self.type,
            "action": self.action,
            "nargs": self.nargs,
            "dest": self.dest,
            "choices": self.choices,
        }
        keywords: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        if self.default is not _UNSET:
            keywords["default"] = self.default
        if self.required:
            keywords["required"] = True
        return keywords


def with_completions(
    parser: argparse.ArgumentParser, hints: Mapping[str, object]
) -> argparse.ArgumentParser:
    """``parser`` with each option's :class:`Completion` set as its completion script's
    ``hints[completion.value]`` (shtab's ``action.complete``), in every subcommand."""
    for action in parser._actions:
        completion = getattr(action, COMPLETION_ATTRIBUTE, None)
        if isinstance(completion, Completion):
            action.complete = hints[completion.value]  # type: ignore[attr-defined]
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                with_completions(sub, hints)
    return parser


def add_options(parser: argparse._ActionsContainer, options: Iterable[Option]) -> None:
    """Add each row of ``options`` to ``parser`` (or to a group of it), in order."""
    for option in options:
        action = parser.add_argument(option.flag, **option.arguments())
        if option.complete is not None:
            setattr(action, COMPLETION_ATTRIBUTE, option.complete)


@frozen
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
    #: Whether it reads every command's options from the parser (the completion scripts).
    reads_every_option: bool = False


def build_parser(
    commands: Sequence[Command], named: Collection[str] | None = None
) -> argparse.ArgumentParser:
    """The whole parser: the global options, then one subparser per command.

    With ``named`` (the arguments of one run), only the commands named there get their
    options: the others are listed (``--help``, choices, usage errors) as before, but no
    run parses their options, and adding a hundred options to argparse was a tenth of
    ``dsf-compile --help``. A named command that reads every option gets them all.
    """
    if named is not None and any(c.reads_every_option and c.name in named for c in commands):
        named = None
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
        _add_command(subparsers, command, named is None or command.name in named)
    return parser


def _add_global_options(
    parser: argparse.ArgumentParser, formats: Sequence[str], default: object
) -> None:
    add_options(parser, (ROOT.where(ROOT.help, default=default),))
    if formats:
        parser.add_argument(
            "--format",
            choices=formats,
            default=default,
            help=f"how the command prints: {', '.join(formats)} (default: {formats[0]}; "
            "github under GitHub Actions)",
        )


def _add_command(subparsers: Any, command: Command, with_options: bool) -> None:
    sub = subparsers.add_parser(
        command.name,
        help=command.summary,
        description=command.description,
        epilog="example:\n" + "\n".join(f"  {line}" for line in command.example.splitlines()),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if not with_options:
        return
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
    """An RFC 3339 time (``--at``; :mod:`dsf_compile.times` parses every time typed)."""
    from dsf_compile.times import parse_moment

    try:
        return parse_moment(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# -------------------------------------------------------------- the shared options

#: The repository, for every command that works on one (and ``dsf-mcp``).
ROOT = Option("--root", "DIR", ROOT_HELP, complete=Completion.DIRECTORY)
#: The hub's context, for every command that reads a hub (``--hub-kubeconfig``, else
#: ``$KUBECONFIG``, else ``~/.kube/config``, as kubectl finds it).
CONTEXT = Option(
    "--context",
    "NAME",
    "the kubeconfig context of the hub (default: its current context); the kubeconfig is "
    "--hub-kubeconfig, else $KUBECONFIG (files merged as kubectl merges them), else "
    "~/.kube/config",
)
SCORES = Option(
    "--scores",
    "PATH",
    "AddOnPlacementScores: a YAML/JSON file or folder",
    complete=Completion.FILE,
)
DECISIONS = Option(
    "--decisions",
    "PATH",
    "PlacementDecisions: a YAML/JSON file or folder",
    complete=Completion.FILE,
)
HUB_KUBECONFIG = Option(
    "--hub-kubeconfig",
    "PATH",
    "read scores, decisions and bindings from a hub (list only)",
    complete=Completion.FILE,
)
AT = Option(
    "--at",
    "RFC3339",
    "judge validUntil and toleration times at this moment (default: now)",
    type=moment,
    default=None,
)
STRICT = Option(
    "--strict", None, "warnings are errors (exit 1 when there are any)", action="store_true"
)


def state_options(*, hub: bool) -> tuple[Option, ...]:
    """``--scores``/``--decisions``/``--at`` (and ``--hub-kubeconfig``): the hub state to replay."""
    return (SCORES, DECISIONS, *((HUB_KUBECONFIG, CONTEXT) if hub else ()), AT)
