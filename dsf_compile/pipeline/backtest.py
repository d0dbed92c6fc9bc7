"""``backtest``: the Placements replayed over the score history (``docs/backtest.md``).

Typed arguments in (:class:`BacktestRequest`), the report and the gate's verdict out
(:class:`Outcome`); the command prints them (``commands/handlers.py``). Everything that
cannot be read — the inputs, the history, ``--baseline``, ``--decisions``, a
``--save-history`` path that is not a regular file — raises :class:`InputError`, located:
nothing was compared (exit 2).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.pipeline.collector import loading, without_cyclic_gc
from dsf_compile.pipeline.inputs import load_inputs
from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.backtest.gate import ChangesLimit
    from dsf_compile.backtest.report import Report
    from dsf_compile.resolve.summaries import Resolutions


@dataclass(frozen=True)
class BacktestRequest:
    """What a run replays and reports (the command's options, typed)."""

    #: The reported Placements, ``NAMESPACE/NAME`` (empty: all).
    placements: Sequence[str]
    #: A Prometheus-compatible API's base URL, or an export file.
    history: str
    #: ``--from``, ``--to`` (RFC 3339 or a duration back) and ``--step`` as given; None: default.
    start: str | None = None
    end: str | None = None
    step: str | None = None
    decisions: str | None = None
    #: ``--steady W,…`` as given.
    steady: str | None = None
    baseline: str | None = None
    max_changes_per_day: ChangesLimit | None = None
    save_history: str | None = None


@dataclass(frozen=True)
class Outcome:
    """A run's report, and the gate's verdict beside it: the reported Placements above
    ``--max-changes-per-day`` (exit 1), one problem each."""

    report: Report
    over: tuple[Problem, ...] = ()


def run_backtest(root: Path, request: BacktestRequest, now: datetime) -> Outcome:
    """Replay every Placement of ``root`` over the history; report the requested ones."""
    with loading():  # numpy and the replay's modules: start-up
        from dsf_compile.backtest import run
        from dsf_compile.backtest.coverage import first_covered
        from dsf_compile.backtest.files import read_baseline, saving_target
        from dsf_compile.backtest.gate import over_limit
        from dsf_compile.backtest.report import Report, summarize

    fleet = run.fleet_of(load_inputs(root), _resolutions(root), request.placements)
    span = (request.start, request.end, request.step)
    window = run.replay_window(span, fleet, now)
    weights = run.steady_weights(request.steady)
    if request.save_history:  # refused before the read: nothing is fetched for nothing
        saving_target(request.save_history)
    baseline = read_baseline(request.baseline) if request.baseline else None
    # the series, the rebuilt scores and every step's record stay alive until the report
    with without_cyclic_gc():
        series, source = run.read_history(request.history, fleet, window)
        if request.save_history:
            from dsf_compile.backtest.history import write_export_file

            write_export_file(saving_target(request.save_history), series)
        initial = run.initial_decisions(request.decisions)
        window = replace(window, first=first_covered(series, window))
        replayer = run.Replayer(fleet, window, series, initial)
        reports = [
            run.with_warnings(summarize(track, window), track, replayer)
            for track in replayer.run(fleet.placements)
            if run.is_reported(track, fleet)
        ]
        if weights:
            reports = run.with_sweep(reports, replayer, weights)
    if baseline is not None:
        reports = [replace(r, baseline=baseline.get(r.key)) for r in reports]
    report = Report(window, source, run.NOTES, tuple(reports), weights, baseline is not None)
    return Outcome(report, over_limit(reports, window, request.max_changes_per_day))


def _resolutions(root: Path) -> Resolutions:
    """The scorers resolved against the committed lockfile when it is readable (a broken
    one is render's and sync's to report), else from their specs alone."""
    from dsf_compile.resolve.summaries import Resolutions
    from dsf_compile.sync.lock import LOCKFILE, read_lockfile

    lock = None
    if os.path.lexists(root / LOCKFILE):
        lock, problems = read_lockfile(root)
        lock = None if problems else lock
    return Resolutions(lock)
