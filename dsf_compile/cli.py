"""``dsf-compile``: arguments, exit codes and printing. The only place that exits.

Exit codes: 0 success; 1 invalid inputs, or ``rendered/`` differs (``render --check``,
``diff``), or a conformance check failed (``scorer-check``), or an Inactive scorer with
``sync --strict``; 2 usage error or internal failure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from dsf_compile import cli_parser
from dsf_compile.backtest.options import backtest_arguments
from dsf_compile.errors import (
    DsfError,
    InputError,
    MassRemovalError,
    UnreachableFleetError,
    UsageError,
)
from dsf_compile.reporters import Reporter, reporter_for
from dsf_compile.repository import find_repository
from dsf_compile.untrusted import safe_message
from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.hub_state import HubState
    from dsf_compile.placement.explain import DecisionChange
    from dsf_compile.render.changes import Changes
    from dsf_compile.sync.lock import LockEntry

EXIT_OK, EXIT_INVALID, EXIT_FAILURE = 0, 1, 2

#: Where ``scorer-check`` finds the bearer token when ``--token`` is not given.
SCORER_TOKEN_VARIABLE = "DSF_SCORER_TOKEN"
NO_SCORES_WARNING = (
    "no scores given (--scores PATH or --hub-kubeconfig PATH): every AddOnPlacementScore "
    "counts 0, so these decisions are not the hub's"
)


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


def build_parser() -> argparse.ArgumentParser:
    """``dsf-compile``'s parser, from :data:`COMMANDS`."""
    return cli_parser.build_parser(COMMANDS)


def run(argv: list[str], out: TextIO, err: TextIO) -> int:
    """Run one command; return its exit code. Never raises for user mistakes."""
    try:
        # --help, --version and usage messages go where this run prints, as everything else
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(argv)
        command = _BY_NAME[args.command]
        cli_parser.check_format(command, args.format)
        call = _Call(
            command, args, _root(command, args), out, err, _reporter(command, args, out, err)
        )
    except UsageError as error:
        _print_error(error, err)
        return EXIT_FAILURE
    except SystemExit as exit_:  # --help, --version
        return int(exit_.code or 0)
    code = _run_command(call)
    call.report.close()
    return code


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


def _run_command(call: _Call) -> int:
    """The handler's exit code; a user's mistake or a refusing file system is reported, not raised."""
    try:
        return call.command.handler(call)
    except InputError as error:
        count = sum(1 for p in error.problems if p.severity == "error")
        written = "; nothing was written" if call.writes else ""
        call.report.failed(error.problems, f"{count} error(s){written}")
        return EXIT_INVALID
    except DsfError as error:
        _print_error(error, call.err)
    except OSError as error:
        # The last line of defence: a file system refusing something is one line, not a traceback.
        where = f" ({error.filename})" if error.filename else ""
        _print_error(f"{error.strerror or error}{where}", call.err)
    except KeyboardInterrupt:
        print("dsf-compile: interrupted", file=call.err)
    call.report.failed((), "")
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


def _print_error(error: BaseException | str, stream: TextIO) -> None:
    # an error may carry several lines (a hub's malformed objects, one each): each is escaped
    lines = getattr(error, "lines", None) or (str(error),)
    for line in lines:
        print(f"dsf-compile: error: {safe_message(line)}", file=stream)


@dataclass(frozen=True)
class _Call:
    """One command's parsed arguments, its repository, and where and how it prints."""

    command: cli_parser.Command
    args: argparse.Namespace
    root: Path
    out: TextIO
    err: TextIO
    report: Reporter

    @property
    def writes(self) -> bool:
        """Whether this run may write (so that a failure says nothing was written)."""
        return self.command.writes and not getattr(self.args, "check", False)

    @property
    def structured(self) -> bool:
        """Whether the result goes into the reporter's document, not the command's own text."""
        return self.report.structured

    def problems(self, problems: Sequence[Problem]) -> None:
        self.report.problems(problems)

    def say(self, line: str) -> None:
        self.report.say(line)


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
    call.report.result(scorers=len(inputs.scorers), clusters=len(inputs.clusters))
    call.say(f"{len(inputs.scorers)} scorer(s), {len(inputs.clusters)} cluster(s): valid")
    return EXIT_OK


def _sync(call: _Call) -> int:
    args, err = call.args, call.err
    if args.clusters:
        return _discover(call)
    if args.allow_mass_removal:
        raise UsageError("--allow-mass-removal goes with --clusters")
    from dsf_compile.pipeline import sync_fleet
    from dsf_compile.sync.fetch import format_progress

    show = not call.structured and (err.isatty() if hasattr(err, "isatty") else False)

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
        call.report.failed(error.problems, "")
        _print_error(error, err)
        return EXIT_INVALID
    call.problems(synced.warnings)
    if synced.recovered:
        call.say(synced.recovered)
    state = "updated" if synced.lockfile_changed else "unchanged"
    call.report.result(active=synced.active, inactive=list(synced.inactive), lockfile=state)
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
    try:  # HubReadError: exit 2, one line each
        found = discover_clusters(
            call.root, args.hub_kubeconfig, allow_mass_removal=args.allow_mass_removal
        )
    except MassRemovalError as error:
        call.report.failed(error.problems, "")
        _print_error(error, err)
        return EXIT_INVALID
    if found.recovered:
        call.say(found.recovered)
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
    if rendered.recovered:
        call.say(rendered.recovered)
    for leftover in rendered.leftovers:
        call.report.warn(f"cannot remove the temporary file {leftover}")
    said = rendered.said
    call.problems(said.warnings)
    call.report.result(files=said.files, clusters=said.clusters, changes=rendered.summary)
    call.say(f"rendered {said.files} file(s) for {said.clusters} cluster(s): {rendered.summary}")
    return EXIT_OK


def _check(call: _Call) -> int:
    """``render --check`` and ``diff``: what would change, and with a hub state the
    decisions that would move; exit 1 when ``rendered/`` is stale."""
    args = call.args
    _refuse_unused_state_options(args.command, args)
    from dsf_compile.render_command import check

    hub_state = _hub_state(args, call.root)
    checked = check(call.root, use_cache=hub_state is None)
    call.problems(checked.warnings)
    changes = checked.changes
    moved: list[DecisionChange] | None = None
    if changes is not None and hub_state is not None:
        from dsf_compile.pipeline import decision_changes

        moved = decision_changes(call.root, hub_state, args.at or _now())
    _show_changes(call, changes, moved)
    if changes is None or changes.empty:
        call.say("rendered/ is up to date")
        return EXIT_OK
    if changes.debris:
        call.say(changes.debris.line("dsf-compile render"))
    call.say(f"rendered/ is stale: {changes.summary()}; run 'dsf-compile render'")
    return EXIT_INVALID


def _show_changes(call: _Call, changes: Changes | None, moved: list[DecisionChange] | None) -> None:
    """The changes (and moved decisions) as records, or as text or Markdown on stdout."""
    from dsf_compile.render.changes_text import change_records, format_changes

    if call.structured:
        stale = changes is not None and not changes.empty
        records = change_records(changes) if changes is not None else []
        call.report.result(stale=stale, changes=records)
        if moved is not None:
            call.report.result(decisions=[_decision_record(m) for m in moved])
        return
    style = "markdown" if call.args.format == "markdown" else "text"
    if changes is None:
        call.out.write(format_unchanged(style))
        return
    call.out.write(format_changes(changes, style))
    if moved is not None:
        from dsf_compile.placement.explain import format_decision_changes

        call.out.write(format_decision_changes(moved, style))


def _decision_record(change: DecisionChange) -> dict[str, object]:
    return {
        "placement": change.placement,
        "before": list(change.before),
        "after": list(change.after),
    }


def _optimize(call: _Call) -> int:
    from dsf_compile.pipeline import optimize_fleet

    args = call.args
    state = _hub_state(args, call.root) or _no_scores()
    plans = optimize_fleet(call.root, state, args.at or _now(), args.time_limit, call.say)
    for plan in plans:
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
    hub_state = _hub_state(args, call.root)
    results = explain_fleet(call.root, args.placements, hub_state or _no_scores(), at)
    if hub_state is None:  # said before the table, which would look like real decisions
        call.report.warn(NO_SCORES_WARNING)
    if call.structured:
        call.report.result(**explain.explain_document(results, at))
        return EXIT_OK
    formatter = explain.format_markdown if args.format == "markdown" else explain.format_text
    call.out.write(formatter(results, at))
    return EXIT_OK


def _backtest(call: _Call) -> int:
    from dsf_compile.backtest.command import run_backtest

    if not call.structured:
        return run_backtest(call.args, call.root, call.out, _now())
    # the report joins the one JSON document every command prints
    text = io.StringIO()
    code = run_backtest(call.args, call.root, text, _now())
    call.report.result(**json.loads(text.getvalue()))
    return code


def _verify(call: _Call) -> int:
    """``explain --verify``: each drifted Placement on stdout; exit 1 on any, 2 if none compared."""
    args = call.args
    if not args.hub_kubeconfig or args.scores or args.decisions:
        raise UsageError(
            "explain --verify reads everything from the hub: give --hub-kubeconfig only"
        )
    from dsf_compile.pipeline import verify_hub
    from dsf_compile.placement import verify

    found = verify_hub(call.root, args.hub_kubeconfig, args.placements, args.at or _now())
    for line in verify.not_compared_lines(found):
        call.say(line)
    call.out.write(verify.format_drifts(found))
    call.say(verify.summary(found))
    return verify.exit_code(found)


def _scorer_check(call: _Call) -> int:
    from dsf_compile.conformance import run_scorer_check

    args = call.args
    token = args.token if args.token is not None else os.environ.get(SCORER_TOKEN_VARIABLE) or None
    ok = run_scorer_check(args.url, token=token, timeout=args.timeout, out=call.out)
    return EXIT_OK if ok else EXIT_INVALID


def _schemas(call: _Call) -> int:
    from dsf_compile.schemas import write_schemas

    check = call.args.check
    stale = write_schemas(call.root / "schemas", check=check, notice=call.say)
    for name in stale:
        if check:
            print(f"schemas/{name} is stale; run 'dsf-compile schemas'", file=call.out)
        else:
            print(f"wrote schemas/{name}", file=call.out)
    return EXIT_INVALID if (check and stale) else EXIT_OK


def _completion(call: _Call) -> int:
    """A static completion script for the shell, generated from the parser by shtab."""
    import shtab

    call.out.write(shtab.complete(build_parser(), shell=call.args.shell))
    return EXIT_OK


# ------------------------------------------------------------ each command's arguments


def _validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="warnings are errors (exit 1 when there are any)"
    )


def _sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="refresh only these scorers")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a scorer is Inactive")
    parser.add_argument(
        "--allow-mass-failure",
        action="store_true",
        help="record the scorers Inactive even when most Active ones cannot be reached "
        "(sync.maxUnreachableFraction); once",
    )
    parser.add_argument(
        "--allow-mass-removal",
        action="store_true",
        help="with --clusters: write the hub's list even when it removes most of "
        "clusters/discovered.yaml (sync.maxClusterRemovalFraction); once",
    )
    parser.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR[:PORT]",
        help="connect to ADDR (and PORT) for HOST:PORT, like curl's --resolve/--connect-to; repeatable",
    )
    parser.add_argument(
        "--clusters",
        action="store_true",
        help="instead of the scorers: list the hub's ManagedClusters into clusters/discovered.yaml",
    )
    parser.add_argument(
        "--hub-kubeconfig",
        type=Path,
        default=None,
        metavar="PATH",
        help="kubeconfig of the hub, for --clusters (read-only: one list call)",
    )


def _render_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if rendered/ is stale"
    )
    cli_parser.add_state_options(parser, hub=False)


def _replay_arguments(parser: argparse.ArgumentParser) -> None:
    cli_parser.add_state_options(parser, hub=False)


def _optimize_arguments(parser: argparse.ArgumentParser) -> None:
    cli_parser.add_state_options(parser, hub=True)
    parser.add_argument(
        "--time-limit",
        type=cli_parser.seconds,
        default=None,
        metavar="SECONDS",
        help="stop the solver after this many seconds, an error (default: 60)",
    )


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "placements",
        nargs="*",
        metavar="NAMESPACE/NAME",
        help="these Placements (default: all); NAME alone is default/NAME, or the one "
        "namespace holding it",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="replay on the hub's own state and compare with its PlacementDecisions "
        "(needs --hub-kubeconfig; exit 1 on any difference)",
    )
    cli_parser.add_state_options(parser, hub=True)


def _scorer_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the scorer's base URL or its /config URL")
    parser.add_argument(
        "--token",
        default=None,
        help=f"bearer token for /scoring (default: ${SCORER_TOKEN_VARIABLE})",
    )
    parser.add_argument(
        "--timeout",
        type=cli_parser.seconds,
        default=10.0,
        help="seconds each request may take in all, answer included (default 10)",
    )


def _schemas_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if schemas/ is stale"
    )


def _completion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")


# ------------------------------------------------------------------- the commands

_Command = cli_parser.Command
#: Every command, in the order ``--help`` lists them. A command is one entry: its
#: handler calls the pipeline (imported when the command runs, so a command loads only
#: what it needs), reports, and returns the exit code.
COMMANDS: tuple[cli_parser.Command, ...] = (
    _Command(
        "validate",
        "load and check the inputs; no network",
        "Load dsf.yaml, scorers/, clusters/ and placements/, check each document against "
        "its schema and every rule between them, and print every problem as "
        "PATH:LINE:COL. Exit 1 when there are errors. Never touches the network.",
        "dsf-compile validate --strict\ndsf-compile validate --format json | jq '.problems[]'",
        _validate,
        _validate_arguments,
        formats=("text", "github", "json"),
    ),
    _Command(
        "sync",
        "fetch each scorer's /config or /healthz into dsf.lock.json",
        "Ask each scorer (configSyncMode Full: its /config; None: its /healthz) and "
        "record what it said, Active or Inactive, in dsf.lock.json. The only command "
        "that reaches the scorers; with --clusters, lists the hub's ManagedClusters instead.",
        "dsf-compile sync\ndsf-compile sync sample-scorer --strict",
        _sync,
        _sync_arguments,
        formats=("text", "github", "json"),
        writes=True,
    ),
    _Command(
        "render",
        "write rendered/ from the inputs and the lockfile; no network",
        "Resolve every scorer against the lockfile and write every manifest the hub "
        "needs into rendered/, only the files that change. With --check, write nothing "
        "and exit 1 when rendered/ is stale.",
        "dsf-compile render\ndsf-compile render --check --format json",
        _render,
        _render_arguments,
        formats=("text", "github", "json"),
        writes=True,
    ),
    _Command(
        "diff",
        "what render would change, object by object",
        "Show what 'render' would change in rendered/, as a unified diff, a Markdown "
        "pull-request comment or JSON records; with --scores, also the Placements whose "
        "decisions would move. Exit 1 when rendered/ is stale.",
        "dsf-compile diff --format markdown --scores snapshots/",
        _check,
        _replay_arguments,
        formats=("text", "markdown", "github", "json"),
    ),
    _Command(
        "optimize",
        "choose configurations and placements together; writes placements/optimized/",
        "Solve each PlacementOptimization (a MILP, with HiGHS) against the scores and "
        "write the proposal into placements/optimized/ for review.",
        "dsf-compile optimize --scores snapshots/ --time-limit 30",
        _optimize,
        _optimize_arguments,
        writes=True,
    ),
    _Command(
        "explain",
        "which clusters each Placement picks, and why (OCM's scheduler, offline)",
        "Replay OCM's scheduler on the Placements of placements/ against a snapshot of "
        "AddOnPlacementScores (--scores) or a hub (--hub-kubeconfig): every filter, "
        "every prioritizer's score, the decisions. Without scores every AddOn score is 0.",
        "dsf-compile explain gpu-inference --scores snapshots/\n"
        "dsf-compile explain --verify --hub-kubeconfig hub.kubeconfig",
        _explain,
        _explain_arguments,
        formats=("text", "markdown", "github", "json"),
    ),
    _Command(
        "backtest",
        "replay the Placements over the fleet's score history: decision changes, churn",
        "Replay every Placement of placements/ over recorded dynamic_score history (a "
        "Prometheus-compatible API or a VictoriaMetrics export file) with explain's "
        "scheduler, and report how often each would have changed its decisions.",
        "dsf-compile backtest --history http://vm.hub.example:8428 --from 7d --format markdown\n"
        "dsf-compile backtest --history history.jsonl.gz --steady 0,3 --max-changes-per-day 4",
        _backtest,
        backtest_arguments,
        formats=("text", "markdown", "json"),
    ),
    _Command(
        "scorer-check",
        "conformance test of a live Scoring API",
        "Call a running Scoring API the way the agent does (/healthz, /config, /scoring) "
        "and check every answer against the contract. Exit 1 when one fails.",
        "dsf-compile scorer-check http://localhost:8000/config",
        _scorer_check,
        _scorer_check_arguments,
        formats=(),
        repository=False,
    ),
    _Command(
        "schemas",
        "write the JSON Schemas of every format into schemas/",
        "Generate the JSON Schemas of every input file, the lockfile and the wire "
        "formats from the models into schemas/; with --check, exit 1 if they are stale.",
        "dsf-compile schemas --check",
        _schemas,
        _schemas_arguments,
        writes=True,
    ),
    _Command(
        "completion",
        "print a shell completion script",
        "Print a completion script for bash, zsh or fish, generated from these commands "
        "and options.",
        "dsf-compile completion bash > ~/.local/share/bash-completion/completions/dsf-compile\n"
        "dsf-compile completion fish > ~/.config/fish/completions/dsf-compile.fish",
        _completion,
        _completion_arguments,
        formats=(),
        repository=False,
    ),
)
_BY_NAME = {command.name: command for command in COMMANDS}


if __name__ == "__main__":
    main()
