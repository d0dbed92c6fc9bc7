"""``dsf-compile``: arguments, exit codes and printing. The only place that exits.

Exit codes: 0 success; 1 invalid inputs, or ``rendered/`` differs (``render --check``,
``diff``), or a conformance check failed (``scorer-check``), or an Inactive scorer with
``sync --strict``; 2 usage error or internal failure.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from dsf_compile.errors import DsfError, InputError, UnreachableFleetError, UsageError
from dsf_compile.untrusted import safe_message
from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.hub_state import HubState
    from dsf_compile.sync.lock import LockEntry

EXIT_OK, EXIT_INVALID, EXIT_FAILURE = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        raise UsageError(message)


MAX_TIMEOUT_SECONDS = 3600.0
#: Where ``scorer-check`` finds the bearer token when ``--token`` is not given.
SCORER_TOKEN_VARIABLE = "DSF_SCORER_TOKEN"


def _seconds(text: str) -> float:
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dsf-compile", description="Validate, sync and render a DSF fleet for OCM."
    )
    parser.add_argument("--root", default=".", help="repository root (default: current directory)")
    parser.add_argument(
        "--format",
        dest="problem_format",
        choices=("text", "github"),
        default=None,
        help="how problems are printed (default: text; github when GITHUB_ACTIONS=true)",
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    validate = commands.add_parser("validate", help="load and check the inputs; no network")
    validate.add_argument(
        "--strict", action="store_true", help="warnings are errors (exit 1 when there are any)"
    )

    sync = commands.add_parser(
        "sync", help="fetch each scorer's /config or /healthz into dsf.lock.json"
    )
    sync.add_argument("names", nargs="*", metavar="NAME", help="refresh only these scorers")
    sync.add_argument("--strict", action="store_true", help="exit 1 when a scorer is Inactive")
    sync.add_argument(
        "--allow-mass-failure",
        action="store_true",
        help="record the scorers Inactive even when most Active ones cannot be reached "
        "(sync.maxUnreachableFraction); once",
    )
    sync.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR[:PORT]",
        help="connect to ADDR (and PORT) for HOST:PORT, like curl's --resolve/--connect-to; repeatable",
    )
    sync.add_argument(
        "--clusters",
        action="store_true",
        help="instead of the scorers: list the hub's ManagedClusters into clusters/discovered.yaml",
    )
    sync.add_argument(
        "--hub-kubeconfig",
        type=Path,
        default=None,
        metavar="PATH",
        help="kubeconfig of the hub, for --clusters (read-only: one list call)",
    )

    render = commands.add_parser(
        "render", help="write rendered/ from the inputs and the lockfile; no network"
    )
    render.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if rendered/ is stale"
    )
    _add_state_options(render, hub=False)

    diff = commands.add_parser("diff", help="what render would change, object by object")
    diff.add_argument("--format", dest="diff_format", choices=("text", "markdown"), default="text")
    _add_state_options(diff, hub=False)

    optimize = commands.add_parser(
        "optimize",
        help="choose configurations and placements together; writes placements/optimized/",
    )
    _add_state_options(optimize, hub=True)
    optimize.add_argument(
        "--time-limit",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stop the solver after this many seconds, an error (default: 60)",
    )

    explain = commands.add_parser(
        "explain", help="which clusters each Placement picks, and why (OCM's scheduler, offline)"
    )
    explain.add_argument(
        "placements", nargs="*", metavar="NAMESPACE/NAME", help="these Placements (default: all)"
    )
    explain.add_argument(
        "--format",
        dest="explain_format",
        choices=("text", "markdown", "json"),
        default="text",
    )
    explain.add_argument(
        "--verify",
        action="store_true",
        help="replay on the hub's own state and compare with its PlacementDecisions "
        "(needs --hub-kubeconfig; exit 1 on any difference)",
    )
    _add_state_options(explain, hub=True)

    check = commands.add_parser("scorer-check", help="conformance test of a live Scoring API")
    check.add_argument("url", help="the scorer's base URL or its /config URL")
    check.add_argument(
        "--token",
        default=None,
        help=f"bearer token for /scoring (default: ${SCORER_TOKEN_VARIABLE})",
    )
    check.add_argument(
        "--timeout",
        type=_seconds,
        default=10.0,
        help="seconds each request may take in all, answer included (default 10)",
    )

    from dsf_compile.backtest.options import add_backtest_parser

    add_backtest_parser(commands)

    schemas = commands.add_parser(
        "schemas", help="write the JSON Schemas of every format into schemas/"
    )
    schemas.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if schemas/ is stale"
    )
    return parser


def _add_state_options(parser: argparse.ArgumentParser, *, hub: bool) -> None:
    """``--scores``/``--decisions``/``--at`` (and ``--hub-kubeconfig``): the hub state to replay."""
    parser.add_argument(
        "--scores", metavar="PATH", help="AddOnPlacementScores: a YAML/JSON file or folder"
    )
    parser.add_argument(
        "--decisions", metavar="PATH", help="PlacementDecisions: a YAML/JSON file or folder"
    )
    if hub:
        parser.add_argument(
            "--hub-kubeconfig",
            metavar="PATH",
            help="read scores, decisions and bindings from a hub (list only)",
        )
    parser.add_argument(
        "--at",
        type=_moment,
        default=None,
        metavar="RFC3339",
        help="judge validUntil and toleration times at this moment (default: now)",
    )


def _moment(text: str) -> datetime:
    from dsf_contract.fields import parse_time  # not on the no-op path: it imports pydantic

    try:
        return parse_time(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _refuse_unused_state_options(command: str, args: argparse.Namespace) -> None:
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


def _hub_state(args: argparse.Namespace, root: Path) -> HubState | None:
    """The state named by the options, or None when neither scores nor a hub were given."""
    kubeconfig = getattr(args, "hub_kubeconfig", None)
    if kubeconfig and (args.scores or args.decisions):
        raise UsageError("--hub-kubeconfig reads scores and decisions: drop --scores/--decisions")
    if not kubeconfig and args.scores is None and args.decisions is None:
        return None  # before the import: a no-op --check must not load the models
    from dsf_compile.hub_state import HubState, read_decisions, read_hub, read_scores

    if kubeconfig:
        from dsf_compile.pipeline import load_settings

        return read_hub(kubeconfig, load_settings(root).hub)
    scores = read_scores(args.scores) if args.scores else None
    decisions = read_decisions(args.decisions) if args.decisions else ()
    return HubState(scores, decisions)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    # pydantic looks for plugins in every installed package's metadata before it builds the
    # first model (a tenth of validate's time); a compiler has no use for them, and what
    # it checks must not depend on what else is installed. An explicit setting still wins.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    code = run(list(sys.argv[1:] if argv is None else argv), sys.stdout, sys.stderr)
    sys.exit(code)


def run(argv: list[str], out: TextIO, err: TextIO) -> int:
    """Run one command; return its exit code. Never raises for user mistakes."""
    try:
        args = build_parser().parse_args(argv)
    except UsageError as error:
        _print_error(error, err)
        return EXIT_FAILURE
    except SystemExit as exit_:  # --help
        return int(exit_.code or 0)
    github = args.problem_format == "github" or (
        args.problem_format is None and os.environ.get("GITHUB_ACTIONS") == "true"
    )
    root = Path(args.root)
    try:
        if not root.is_dir():
            raise UsageError(f"--root {args.root}: not a directory")
        return _dispatch(args, root, out, err, github)
    except InputError as error:
        print_problems(error.problems, err, github)
        count = sum(1 for p in error.problems if p.severity == "error")
        print(f"dsf-compile: {count} error(s); nothing was written", file=err)
        return EXIT_INVALID
    except DsfError as error:
        _print_error(error, err)
        return EXIT_FAILURE
    except OSError as error:
        # The last line of defence: a file system refusing something is one line, not a traceback.
        where = f" ({error.filename})" if error.filename else ""
        _print_error(f"{error.strerror or error}{where}", err)
        return EXIT_FAILURE
    except KeyboardInterrupt:
        print("dsf-compile: interrupted", file=err)
        return EXIT_FAILURE


def _no_scores() -> HubState:
    from dsf_compile.hub_state import HubState

    return HubState(None, ())


def format_unchanged(style: str) -> str:
    """What ``check``/``diff`` print for an unchanged tree (as ``format_changes`` would)."""
    if style == "markdown":
        from dsf_compile.render.changes import Changes
        from dsf_compile.render.changes_text import format_changes

        return format_changes(Changes(), style)
    return ""


def _now() -> datetime:
    return datetime.now(UTC)


_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


def print_problems(problems: Sequence[Problem], stream: TextIO, github: bool) -> None:
    """Print ``problems`` sorted, errors first (what stops the command before what does
    not), one line each; credentials and control characters never reach the terminal."""
    for problem in sorted(problems, key=lambda p: (_SEVERITY_ORDER.get(p.severity, 1), p)):
        print(safe_message(problem.format_github() if github else problem.format()), file=stream)


def _print_error(error: BaseException | str, stream: TextIO) -> None:
    # an error may carry several lines (a hub's malformed objects, one each): each is escaped
    lines = getattr(error, "lines", None) or (str(error),)
    for line in lines:
        print(f"dsf-compile: error: {safe_message(line)}", file=stream)


@dataclass(frozen=True)
class _Call:
    """One command's parsed arguments and where it prints."""

    args: argparse.Namespace
    root: Path
    out: TextIO
    err: TextIO
    github: bool

    def problems(self, problems: Sequence[Problem]) -> None:
        print_problems(problems, self.err, self.github)

    def say(self, line: str) -> None:
        print(f"dsf-compile: {line}", file=self.err)


def _dispatch(args: argparse.Namespace, root: Path, out: TextIO, err: TextIO, github: bool) -> int:
    handler = _COMMANDS.get(args.command)
    if handler is None:  # pragma: no cover - argparse refuses first
        raise UsageError(f"unknown command {args.command}")
    return handler(_Call(args, root, out, err, github))


def _validate(call: _Call) -> int:
    from dsf_compile.pipeline import validate_fleet

    inputs = validate_fleet(call.root)
    # info lines (what the hub needs for a kind) are not findings: --strict keeps them
    if call.args.strict and any(w.severity == "warning" for w in inputs.warnings):
        raise InputError(
            [
                replace(w, severity="error") if w.severity == "warning" else w
                for w in inputs.warnings
            ]
        )
    call.problems(inputs.warnings)
    call.say(f"{len(inputs.scorers)} scorer(s), {len(inputs.clusters)} cluster(s): valid")
    return EXIT_OK


def _sync(call: _Call) -> int:
    args, err = call.args, call.err
    if args.clusters:
        return _discover(call)
    from dsf_compile.pipeline import sync_fleet
    from dsf_compile.sync.fetch import format_progress

    show = err.isatty() if hasattr(err, "isatty") else False

    def progress(name: str, entry: LockEntry, done: int, total: int) -> None:
        if show:
            print(format_progress(name, entry, done, total), file=err, flush=True)

    try:
        synced = sync_fleet(
            call.root,
            names=args.names,
            resolve=args.resolve,
            progress=progress,
            allow_mass_failure=args.allow_mass_failure,
        )
    except UnreachableFleetError as error:
        call.problems(error.problems)
        _print_error(error, err)
        return EXIT_INVALID
    call.problems(synced.warnings)
    state = "updated" if synced.lockfile_changed else "unchanged"
    call.say(f"{synced.active} Active, {len(synced.inactive)} Inactive; dsf.lock.json {state}")
    return EXIT_INVALID if (args.strict and synced.inactive) else EXIT_OK


def _discover(call: _Call) -> int:
    """``sync --clusters``: the hub's ManagedClusters into ``clusters/discovered.yaml``."""
    args, err = call.args, call.err
    from dsf_compile.pipeline import discover_clusters
    from dsf_compile.sync.clusters import DISCOVERED_FILE

    if (
        args.hub_kubeconfig is None
        or args.names
        or args.strict
        or args.resolve
        or args.allow_mass_failure
    ):
        print(
            "dsf-compile: error: sync --clusters needs --hub-kubeconfig PATH and takes no "
            "scorer names, --strict, --resolve or --allow-mass-failure",
            file=err,
        )
        return EXIT_FAILURE
    found = discover_clusters(call.root, args.hub_kubeconfig)  # HubReadError: exit 2, one line each
    joined = f" (joined: {', '.join(found.added)})" if found.added else ""
    left = f" (left: {', '.join(found.removed)})" if found.removed else ""
    state = "updated" if found.changed else "unchanged"
    # the names passed validation (DNS labels); escaped all the same, like every hub text
    line = f"{len(found.clusters)} cluster(s) on the hub{joined}{left}; {DISCOVERED_FILE} {state}"
    call.say(safe_message(line))
    return EXIT_OK


def _render(call: _Call) -> int:
    if call.args.check:
        return _check(call)
    _refuse_unused_state_options("render", call.args)
    from dsf_compile.render_command import render

    rendered = render(call.root)
    for leftover in rendered.leftovers:
        call.say(f"warning: cannot remove the temporary file {leftover}")
    said = rendered.said
    call.problems(said.warnings)
    call.say(f"rendered {said.files} file(s) for {said.clusters} cluster(s): {rendered.summary}")
    return EXIT_OK


def _check(call: _Call) -> int:
    """``render --check`` and ``diff``: what would change, and with a hub state the
    decisions that would move; exit 1 when ``rendered/`` is stale."""
    args = call.args
    _refuse_unused_state_options(args.command, args)
    from dsf_compile.render_command import check

    style = args.diff_format if args.command == "diff" else "text"
    hub_state = _hub_state(args, call.root)
    checked = check(call.root, use_cache=hub_state is None)
    call.problems(checked.warnings)
    changes = checked.changes
    if changes is None:
        call.out.write(format_unchanged(style))
        call.say("rendered/ is up to date")
        return EXIT_OK
    from dsf_compile.render.changes_text import format_changes

    call.out.write(format_changes(changes, style))
    if hub_state is not None:
        from dsf_compile.pipeline import decision_changes
        from dsf_compile.placement.explain import format_decision_changes

        moved = decision_changes(call.root, hub_state, args.at or _now())
        call.out.write(format_decision_changes(moved, style))
    if changes.empty:
        call.say("rendered/ is up to date")
        return EXIT_OK
    call.say(f"rendered/ is stale: {changes.summary()}; run 'dsf-compile render'")
    return EXIT_INVALID


def _optimize(call: _Call) -> int:
    from dsf_compile.pipeline import optimize_fleet

    args = call.args
    state = _hub_state(args, call.root) or _no_scores()
    for plan in optimize_fleet(call.root, state, args.at or _now(), args.time_limit):
        call.problems(plan.warnings)
        state_word = "written" if plan.changed else "unchanged"
        shown = ", ".join(plan.left_out[:20])
        more = f" and {len(plan.left_out) - 20} more" if len(plan.left_out) > 20 else ""
        left_out = f"; left out: {shown}{more}" if plan.left_out else ""
        line = f"dsf-compile: {plan.path} {state_word} (objective {plan.objective}{left_out})"
        print(safe_message(line), file=call.err)
    return EXIT_OK


def _explain(call: _Call) -> int:
    args = call.args
    if args.verify:
        return _verify(call)
    from dsf_compile.pipeline import explain_fleet
    from dsf_compile.placement import explain

    at = args.at or _now()
    hub_state = _hub_state(args, call.root) or _no_scores()
    results = explain_fleet(call.root, args.placements, hub_state, at)
    formatter = {
        "text": explain.format_text,
        "markdown": explain.format_markdown,
        "json": explain.format_json,
    }[args.explain_format]
    call.out.write(formatter(results, at))
    return EXIT_OK


def _verify(call: _Call) -> int:
    """``explain --verify``: each drifted Placement on stdout, exit 1 on any."""
    args = call.args
    if not args.hub_kubeconfig or args.scores or args.decisions:
        raise UsageError(
            "explain --verify reads everything from the hub: give --hub-kubeconfig only"
        )
    from dsf_compile.pipeline import verify_hub
    from dsf_compile.placement.verify import format_drifts

    drifts, skipped, compared = verify_hub(
        call.root, args.hub_kubeconfig, args.placements, args.at or _now()
    )
    for line in skipped:
        call.say(f"warning: {line}")
    call.out.write(format_drifts(drifts))
    if drifts:
        call.say(f"{len(drifts)} of {compared} Placements differ from the hub's decisions")
        return EXIT_INVALID
    call.say(f"{compared} Placements agree with the hub's decisions")
    return EXIT_OK


def _backtest(call: _Call) -> int:
    from dsf_compile.backtest.command import run_backtest

    return run_backtest(call.args, call.root, call.out, _now())


def _scorer_check(call: _Call) -> int:
    from dsf_compile.conformance import run_scorer_check

    args = call.args
    token = args.token if args.token is not None else os.environ.get(SCORER_TOKEN_VARIABLE) or None
    ok = run_scorer_check(args.url, token=token, timeout=args.timeout, out=call.out)
    return EXIT_OK if ok else EXIT_INVALID


def _schemas(call: _Call) -> int:
    from dsf_compile.schemas import write_schemas

    check = call.args.check
    stale = write_schemas(call.root / "schemas", check=check)
    for name in stale:
        if check:
            print(f"schemas/{name} is stale; run 'dsf-compile schemas'", file=call.out)
        else:
            print(f"wrote schemas/{name}", file=call.out)
    return EXIT_INVALID if (check and stale) else EXIT_OK


#: Each command's handler: it calls the pipeline (imported when the command runs, so a
#: command loads only what it needs), prints, and returns the exit code.
_COMMANDS: dict[str, Callable[[_Call], int]] = {
    "validate": _validate,
    "sync": _sync,
    "render": _render,
    "diff": _check,
    "optimize": _optimize,
    "explain": _explain,
    "backtest": _backtest,
    "scorer-check": _scorer_check,
    "schemas": _schemas,
}


if __name__ == "__main__":
    main()
