"""``dsf-compile``: arguments, exit codes and printing. The only place that exits.

Exit codes: 0 success; 1 invalid inputs, or what is compared differs (``render --check``,
``diff``, ``explain --verify``), or a conformance check failed (``scorer-check``), or an
Inactive scorer with ``sync --strict``; 2 usage error, internal failure, or a comparing
command that could not compare (its inputs invalid or unreadable, its source unreachable).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import itertools
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dsf_compile.commands import parser as cli_parser
from dsf_compile.commands.call import EXIT_FAILURE, EXIT_INVALID, Call, print_error
from dsf_compile.commands.reporters import Reporter, error_problem, json_failure, reporter_for
from dsf_compile.commands.repository import find_repository
from dsf_compile.commands.table import BY_NAME, COMMANDS
from dsf_compile.errors import (
    DsfError,
    InputError,
    UsageError,
)
from dsf_contract.pydantic_plugins import without_pydantic_plugins

if TYPE_CHECKING:
    pass


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    without_pydantic_plugins()
    code = run(list(sys.argv[1:] if argv is None else argv), sys.stdout, sys.stderr)
    # The process ends here: the collection CPython makes at exit would walk everything
    # the command built (a twentieth of validate) only to free memory the exit frees.
    gc.freeze()
    sys.exit(code)


def build_parser() -> argparse.ArgumentParser:
    """``dsf-compile``'s parser, from :data:`COMMANDS`."""
    return cli_parser.build_parser(COMMANDS)


def run(argv: list[str], out: TextIO, err: TextIO) -> int:
    """Run one command; return its exit code. Never raises for user mistakes."""
    try:
        # --help, --version and usage messages go where this run prints, as everything else
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            parser = cli_parser.build_parser(COMMANDS, named=argv)  # the named commands' options
            args = parser.parse_args(argv)
        command = BY_NAME[args.command]
        cli_parser.check_format(command, args.format)
        call = Call(
            command,
            args,
            _root(command, args),
            out,
            err,
            _reporter(command, args, out, err),
            parser,
        )
    except UsageError as error:
        named = _command_named(argv)
        if _wants_json(argv, named):  # a script asked for JSON: one document, usage errors too
            out.write(json_failure(named, [error_problem(str(error))]))
        else:
            print_error(error, err)
        return EXIT_FAILURE
    except SystemExit as exit_:  # --help, --version
        return int(exit_.code or 0)
    code = _run_command(call)
    call.report.close(code)
    return code


def _wants_json(argv: Sequence[str], named: str | None) -> bool:
    """Whether ``--format json`` is among the arguments (before parsing could say so), for
    a command that offers it (or before any command is named)."""
    given = "--format=json" in argv or ("--format", "json") in itertools.pairwise(argv)
    return given and (named is None or "json" in BY_NAME[named].formats)


def _command_named(argv: Sequence[str]) -> str | None:
    """The first argument that names a command, if any."""
    return next((a for a in argv if a in BY_NAME), None)


def _root(command: cli_parser.Command, args: argparse.Namespace) -> Path:
    """``--root``, or the repository the current folder is in."""
    if not command.repository:
        return Path(".")
    if args.root is None:
        return find_repository(Path("."))
    root = Path(args.root)
    if not root.is_dir():
        raise UsageError(f"--root {args.root}: not a directory")
    return root


def _reporter(
    command: cli_parser.Command, args: argparse.Namespace, out: TextIO, err: TextIO
) -> Reporter:
    chosen = args.format
    if chosen is None:
        github = os.environ.get("GITHUB_ACTIONS") == "true" and "github" in command.formats
        chosen = "github" if github else command.formats[0] if command.formats else "text"
    args.format = chosen  # what the handler prints its own output as
    return reporter_for(chosen, command.name, out, err)


def _run_command(call: Call) -> int:
    """The handler's exit code; a user's mistake or a refusing file system is reported, not raised.

    A comparing command (``render --check``, ``diff``, ``explain --verify``) exits 1 only
    for "differs": invalid inputs, like any failure, mean it could not compare (2).
    """
    try:
        return call.command.handler(call)
    except InputError as error:
        count = sum(1 for p in error.problems if p.severity == "error")
        written = "; nothing was written" if call.writes else ""
        call.report.failed(error.problems, f"{count} error(s){written}")
        return EXIT_FAILURE if call.compares else EXIT_INVALID
    except DsfError as error:
        call.report.error(getattr(error, "lines", None) or (str(error),))
    except OSError as error:
        # The last line of defence: a file system refusing something is one line, not a traceback.
        where = f" ({error.filename})" if error.filename else ""
        path = str(error.filename) if error.filename else ""
        call.report.error((f"{error.strerror or error}{where}",), path)
    except KeyboardInterrupt:
        call.report.error(("interrupted",))
    return EXIT_FAILURE


if __name__ == "__main__":
    main()
