"""``dsf-compile``'s handlers: one function per command, from arguments to exit code.

Each runs its pipeline (imported when the command runs, so a command loads only what it
needs), hands the reporter what it found and returns the exit code.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING

from dsf_compile.commands.call import (
    EXIT_FAILURE,
    EXIT_INVALID,
    EXIT_OK,
    NO_SCORES_WARNING,
    SCORER_TOKEN_VARIABLE,
    Call,
    hub_access,
    hub_state_of,
    no_scores,
    now,
    refuse_unused_state_options,
)
from dsf_compile.edges.untrusted import safe_message
from dsf_compile.errors import (
    DsfError,
    InputError,
    MassRemovalError,
    UnreachableFleetError,
    UsageError,
)
from dsf_compile.pipeline.collector import loading

if TYPE_CHECKING:
    from dsf_compile.commands.reporters import Replay
    from dsf_compile.hubread.state import HubState
    from dsf_compile.sync.lock import LockEntry


def handle_validate(call: Call) -> int:
    """``validate``: the inputs checked; ``--strict`` makes warnings errors."""
    with loading():
        from dsf_compile.pipeline.inputs import validate_fleet

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


def handle_sync(call: Call) -> int:
    """``sync``: the lockfile refreshed (``--clusters``: the hub's ManagedClusters)."""
    args, err = call.args, call.err
    if args.clusters:
        return _discover(call)
    if args.allow_mass_removal:
        raise UsageError("--allow-mass-removal goes with --clusters")
    with loading():
        from dsf_compile.pipeline.sync import sync_fleet
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
        call.report.error((str(error),))
        return EXIT_INVALID
    call.problems(synced.warnings)
    if synced.recovered:
        call.say(synced.recovered)
    state = "updated" if synced.lockfile_changed else "unchanged"
    call.report.result(active=synced.active, inactive=list(synced.inactive), lockfile=state)
    call.say(f"{synced.active} Active, {len(synced.inactive)} Inactive; dsf.lock.json {state}")
    return EXIT_INVALID if (args.strict and synced.inactive) else EXIT_OK


def _discover(call: Call) -> int:
    """``sync --clusters``: the hub's ManagedClusters into ``clusters/discovered.yaml``."""
    args = call.args
    from dsf_compile.pipeline.sync import discover_clusters
    from dsf_compile.sync.clusters import DISCOVERED_FILE

    if args.names or args.strict or args.resolve or args.allow_mass_failure:
        raise UsageError(
            "sync --clusters takes no scorer names, --strict, --resolve or --allow-mass-failure"
        )
    try:  # HubReadError: exit 2, one line each
        found = discover_clusters(
            call.root, hub_access(args), allow_mass_removal=args.allow_mass_removal
        )
    except MassRemovalError as error:
        call.report.failed(error.problems, "")
        call.report.error((str(error),))
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


def handle_render(call: Call) -> int:
    """``render``: ``rendered/`` written (``--check``: compared, see :func:`handle_check`)."""
    if call.args.check:
        return handle_check(call)
    refuse_unused_state_options("render", call.args)
    from dsf_compile.commands.render_command import render

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


def handle_check(call: Call) -> int:
    """``render --check`` and ``diff``: what would change, and with a hub state the
    decisions that would move; exit 1 when ``rendered/`` is stale."""
    args = call.args
    refuse_unused_state_options(args.command, args)
    from dsf_compile.commands.render_command import check

    hub_state = hub_state_of(args, call.root)
    checked = check(call.root, use_cache=hub_state is None)
    call.problems(checked.warnings)
    changes = checked.changes
    replay: Replay | None = None
    if changes is not None and hub_state is not None:
        from dsf_compile.pipeline.placements import decision_changes, score_windows

        at = args.at or judged_at(call, hub_state, lambda: score_windows(checked.scorers))
        replay = decision_changes(call.root, hub_state, at, inputs=checked.inputs), at
    call.report.changes(changes, replay)
    if changes is None or changes.empty:
        call.say("rendered/ is up to date")
        return EXIT_OK
    if changes.debris:
        call.say(changes.debris.line("dsf-compile render"))
    call.say(f"rendered/ is stale: {changes.summary()}; run 'dsf-compile render'")
    return EXIT_INVALID


def judged_at(call: Call, state: HubState, windows: Callable[[], Mapping[str, int]]) -> datetime:
    """The moment judged without ``--at``: a scores snapshot's own (its newest write), so
    that a workstation and a workflow agree on it; a live hub's, or decisions alone: now."""
    if call.args.scores is None:
        return now()
    from dsf_compile.pipeline.placements import snapshot_time
    from dsf_compile.placement.scheduler import format_time

    moment = snapshot_time(state, windows())
    if moment is None:
        call.report.warn(
            "--scores does not say when it was taken (no validUntil of a score the fleet "
            "publishes): judged now; give --at to choose"
        )
        return now()
    call.say(f"judged at {format_time(moment)}, the newest write in --scores (--at chooses)")
    return moment


def handle_optimize(call: Call) -> int:
    """``optimize``: every PlacementOptimization solved and its plan written."""
    with loading():
        from dsf_compile.pipeline.placements import fleet_score_windows, optimize_fleet

    args = call.args
    state = hub_state_of(args, call.root) or no_scores()
    inputs, at = None, args.at or now()
    if args.at is None and args.scores is not None:  # a snapshot: judged at its own moment
        from dsf_compile.pipeline.inputs import validated_fleet

        valid = validated_fleet(call.root)  # once: optimize_fleet takes the inputs
        inputs = valid.inputs
        at = judged_at(
            call, state, lambda: fleet_score_windows(call.root, inputs, valid.resolutions)
        )
    plans = optimize_fleet(call.root, state, at, args.time_limit, call.say, inputs=inputs)
    for plan in plans:
        call.problems(plan.warnings)
        state_word = "written" if plan.changed else "unchanged"
        shown = ", ".join(plan.left_out[:20])
        more = f" and {len(plan.left_out) - 20} more" if len(plan.left_out) > 20 else ""
        left_out = f"; left out: {shown}{more}" if plan.left_out else ""
        call.say(f"{plan.path} {state_word} (objective {plan.objective}{left_out})")
    return EXIT_OK


def handle_explain(call: Call) -> int:
    """``explain``: the scheduler replayed per Placement (``--verify``: against the hub)."""
    args = call.args
    if args.verify:
        return _verify(call)
    with loading():
        from dsf_compile.pipeline.placements import explain_fleet

    hub_state = hub_state_of(args, call.root)
    inputs = None
    if args.at is None and args.scores is not None and hub_state is not None:
        from dsf_compile.pipeline.inputs import load_inputs
        from dsf_compile.pipeline.placements import fleet_score_windows

        loaded = inputs = load_inputs(call.root)  # once: explain_fleet takes them
        at = judged_at(call, hub_state, lambda: fleet_score_windows(call.root, loaded))
    else:
        at = args.at or now()
    state = hub_state or no_scores()
    results = explain_fleet(call.root, args.placements, state, at, inputs=inputs)
    if hub_state is None:  # said before the table, which would look like real decisions
        call.report.warn(NO_SCORES_WARNING)
    call.report.explanation(results, at)
    return EXIT_OK


def handle_backtest(call: Call) -> int:
    """``backtest``: the Placements replayed over the score history; exit 1 over
    ``--max-changes-per-day`` (the report printed all the same), 2 when nothing compared."""
    with loading():
        from dsf_compile.pipeline.backtest import BacktestRequest, run_backtest

    args = call.args
    request = BacktestRequest(
        tuple(args.placements),
        args.history,
        start=args.start,
        end=args.end,
        step=args.step,
        decisions=args.decisions,
        steady=args.steady,
        baseline=args.baseline,
        max_changes_per_day=args.max_changes_per_day,
        save_history=args.save_history,
    )
    try:
        outcome = run_backtest(call.root, request, now())
    except InputError as error:  # inputs, history, baseline or decisions: nothing compared
        call.report.failed(error.problems, f"{len(error.problems)} error(s); nothing compared")
        return EXIT_FAILURE
    except MemoryError:
        raise DsfError(
            "out of memory replaying the history: lower history.maxPoints in dsf.yaml, "
            "or replay a shorter window"
        ) from None
    call.report.backtest(outcome.report)
    if outcome.over:
        call.report.failed(outcome.over, "over --max-changes-per-day")
        return EXIT_INVALID
    return EXIT_OK


def _verify(call: Call) -> int:
    """``explain --verify``: each drifted Placement on stdout; exit 1 on any, 2 if none compared."""
    args = call.args
    if args.scores or args.decisions:
        raise UsageError(
            "explain --verify reads everything from the hub (--hub-kubeconfig, else "
            "$KUBECONFIG, else ~/.kube/config): drop --scores/--decisions"
        )
    from dsf_compile.pipeline.placements import verify_hub
    from dsf_compile.placement import verify

    found = verify_hub(call.root, hub_access(args), args.placements, args.at or now())
    call.report.verification(found)
    return verify.exit_code(found)


def handle_scorer_check(call: Call) -> int:
    """``scorer-check``: the conformance test of a live Scoring API; exit 1 on a failure."""
    from dsf_compile.commands.scorer_check import run_scorer_check

    args = call.args
    token = args.token if args.token is not None else os.environ.get(SCORER_TOKEN_VARIABLE) or None
    ok = run_scorer_check(args.url, token=token, timeout=args.timeout, out=call.out)
    return EXIT_OK if ok else EXIT_INVALID


def handle_schemas(call: Call) -> int:
    """``schemas``: ``schemas/`` written (``--check``: exit 1 when stale)."""
    with loading():
        from dsf_compile.pipeline.schemas import write_schemas

    check = call.args.check
    stale = write_schemas(call.root / "schemas", check=check, notice=call.say)
    for name in stale:
        if check:
            print(f"schemas/{name} is stale; run 'dsf-compile schemas'", file=call.out)
        else:
            print(f"wrote schemas/{name}", file=call.out)
    return EXIT_INVALID if (check and stale) else EXIT_OK


def handle_init(call: Call) -> int:
    """``init``: a fleet repository of its own in DIR (refused, exit 2, unless DIR is empty)."""
    from pathlib import Path

    from dsf_compile.pipeline.init import init_fleet
    from dsf_compile.scaffold.files import default_action, parse_action

    args = call.args
    action = parse_action(args.action) if args.action else default_action()
    target = Path(args.dir)
    written = init_fleet(target, action)
    call.say(f"{target}: a fleet repository ({', '.join(written)}), its workflows on {action}")
    call.say("next: the README.md there says what to change, then git add -A and commit")
    return EXIT_OK


def handle_ci(call: Call) -> int:
    """``ci``: the fleet's checks and the pull request's report; exit 1 when a check fails."""
    from dsf_compile.ci.run import Options, run_ci

    args = call.args
    options = Options(
        base=args.base,
        scores=args.scores,
        at=args.at,
        history=args.history,
        max_changes_per_day=args.max_changes_per_day,
        strict=args.strict == "true",
        comment=args.comment == "true",
        report=args.report,
        github=args.format == "github",
    )
    verdict = run_ci(call.root, options, dict(os.environ), call.out)
    return EXIT_INVALID if verdict.failed else EXIT_OK


def handle_completion(call: Call) -> int:
    """A static completion script for the shell, generated from the parser by shtab; a
    PATH option completes file names, a folder's (``--root``, ``init DIR``) folders."""
    import shtab

    from dsf_compile.commands.parser import with_completions

    hints = {"file": shtab.FILE, "directory": shtab.DIRECTORY}
    parser = with_completions(call.parser, hints)  # every command's options (reads_every_option)
    call.out.write(shtab.complete(parser, shell=call.args.shell))
    return EXIT_OK
