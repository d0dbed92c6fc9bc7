"""``dsf-compile backtest``: read the history, rebuild the scores, replay, report.

I/O at the edges: the inputs and the history are read here, :mod:`.scores` and
:mod:`.replay` are pure, :mod:`.report` prints.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from dsf_compile.backtest.history import HistoryReader, Series, read_export_file
from dsf_compile.backtest.replay import Track, replay
from dsf_compile.backtest.report import (
    REPORTERS,
    PlacementReport,
    Report,
    Totals,
    Window,
    summarize,
    totals_of,
)
from dsf_compile.backtest.scores import ScorerRule, rebuild_all
from dsf_compile.errors import InputError, UsageError
from dsf_compile.inputs.placements import Placement, PlacementDecision
from dsf_compile.inputs.selectors import selects_cluster
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.prioritizers import STEADY
from dsf_contract.agent_cli import Aggregation
from dsf_contract.problem import Problem
from dsf_contract.scores import SCORE_KIND

_DURATION = re.compile(r"^(?:[0-9]{1,9}(?:ms|s|m|h|d|w))+$")
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_SCORES_CALL = re.compile(r"""scores\(\s*(?:"([^"\\]{1,253})"|'([^'\\]{1,253})')\s*\)""")
DEFAULT_DAYS = 7
NOTES = (
    "samples are what the scraper saw (scrape times, not the agents' cycle times)",
    "a failing scorer whose gauge stays published is seen as valid, while the hub expires it",
    "ds_* label values are cut to 256 characters, item names are not",
)


def duration_seconds(text: str) -> float:
    """``5m``, ``1h30m``, ``7d`` → seconds; UsageError otherwise."""
    if not _DURATION.match(text):
        raise UsageError(f"{text!r} is not a duration like 30s, 5m, 1h or 7d")
    return sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(text))


def moment(text: str, now: datetime) -> int:
    """A ``--from``/``--to``: RFC 3339, or a duration back from ``now``; seconds since the epoch."""
    from dsf_contract.fields import parse_time

    if _DURATION.match(text):
        return int(now.timestamp() - duration_seconds(text))
    try:
        return int(parse_time(text).timestamp())
    except ValueError as err:
        raise UsageError(f"{text!r}: {err}") from None


@dataclass(frozen=True)
class Fleet:
    """The working tree as the replay reads it."""

    inputs: Inputs
    placements: tuple[Placement, ...]
    reported: frozenset[str]
    rules: dict[str, ScorerRule]


def run_backtest(args: argparse.Namespace, root: Path, out: TextIO, now: datetime) -> int:
    """Run the command; return its exit code (problems raise)."""
    fleet = _fleet(root, args.placements)
    window = _window(args, fleet, now)
    series, source = _read_history(args.history, fleet, window, root)
    if args.save_history:
        from dsf_compile.backtest.history import write_export_file

        write_export_file(Path(args.save_history), series)
    initial = _initial_decisions(args.decisions)
    replayer = _Replayer(fleet, window, series, initial)
    reports = [summarize(t, window) for t in replayer.run(fleet.placements) if _reported(t, fleet)]
    weights = _weights(args.steady)
    if weights:
        reports = _with_sweep(reports, replayer, weights)
    if args.baseline:
        reports = _with_baseline(reports, _read_baseline(args.baseline))
    report = Report(window, source, NOTES, tuple(reports), weights, bool(args.baseline))
    out.write(REPORTERS[args.format](report))
    return _gate(reports, args.max_changes_per_day)


def _gate(reports: Sequence[PlacementReport], limit: float | None) -> int:
    if limit is None:
        return 0
    above = [r for r in reports if r.changes_per_day > limit]
    if not above:
        return 0
    names = ", ".join(f"{r.key} ({r.changes_per_day}/day)" for r in above)
    raise InputError(
        [Problem("placements", 0, 0, "", f"more than {limit:g} changes per day: {names}")]
    )


def _fleet(root: Path, names: Sequence[str]) -> Fleet:
    from dsf_compile.pipeline.inputs import load_inputs

    inputs = load_inputs(root)
    placements = tuple(p.model for p in inputs.placements)
    known = {f"{p.metadata.namespace}/{p.metadata.name}" for p in placements}
    missing = sorted(set(names) - known)
    if missing:
        raise UsageError(f"no Placement {', '.join(missing)} in placements/ (NAMESPACE/NAME)")
    return Fleet(inputs, placements, frozenset(names or known), _rules(root, inputs))


def _rules(root: Path, inputs: Inputs) -> dict[str, ScorerRule]:
    """Score name → its rule, for every scorer publishing AddOnPlacementScores."""
    from dsf_compile.resolve.summaries import Resolutions
    from dsf_compile.sync.lock import LOCKFILE, read_lockfile

    lock = None
    if (root / LOCKFILE).exists():
        lock, problems = read_lockfile(root)
        lock = None if problems else lock
    resolutions = Resolutions(lock)
    rules = {}
    for located in inputs.scorers:
        resolved, _ = resolutions.of(located)
        if resolved is None or located.model.spec.scoreDestination != SCORE_KIND:
            continue
        summary = resolved.summary
        rules[summary.scoreName] = ScorerRule(
            summary.scoreName, summary.scoringInterval, summary.scoreDimensionFormat
        )
    return rules


def used_resources(placements: Sequence[Placement]) -> set[str]:
    """The AddOnPlacementScore names the Placements rank by or read with CEL ``scores()``."""
    used = set()
    for placement in placements:
        for config in placement.spec.prioritizerPolicy.configurations:
            if config.scoreCoordinate.addOn is not None and config.weight != 0:
                used.add(config.scoreCoordinate.addOn.resourceName)
        for predicate in placement.spec.predicates:
            selector = predicate.requiredClusterSelector
            cel = selector.celSelector if selector is not None else None
            for expression in (cel.celExpressions or ()) if cel is not None else ():
                used |= {a or b for a, b in _SCORES_CALL.findall(expression)}
    return used


def _used_rules(fleet: Fleet) -> dict[str, ScorerRule]:
    used = used_resources(fleet.placements)
    return {name: rule for name, rule in fleet.rules.items() if rule.resource in used}


def _window(args: argparse.Namespace, fleet: Fleet, now: datetime) -> Window:
    end = moment(args.end, now) if args.end else int(now.timestamp())
    start = moment(args.start, now) if args.start else end - DEFAULT_DAYS * 86_400
    if start > end:
        raise UsageError("--from is after --to")
    if args.step:
        seconds = duration_seconds(args.step)
        if seconds < 1 or seconds != int(seconds):
            raise UsageError(f"--step {args.step}: a whole number of seconds, at least 1s")
        step = int(seconds)
    else:
        intervals = [r.interval for r in _used_rules(fleet).values()]
        step = min(intervals) if intervals else 300
    count = (end - start) // step + 1
    limit = fleet.inputs.settings.history.maxSteps
    if count > limit:
        fits = math.ceil((end - start) / max(limit - 1, 1))
        raise UsageError(
            f"{count} steps is more than history.maxSteps ({limit}): use --step {fits}s or more, "
            "or a shorter window"
        )
    return Window(start, end, step, count)


def _read_history(
    location: str, fleet: Fleet, window: Window, root: Path
) -> tuple[list[Series], str]:
    rules = _used_rules(fleet)
    longest = max((r.window_ms for r in rules.values()), default=0)
    settings = fleet.inputs.settings.history
    reader = HistoryReader(
        clusters=frozenset(c.model.metadata.name for c in fleet.inputs.clusters),
        score_names=frozenset(rules),
        start_ms=window.start * 1000 - longest,
        end_ms=window.end * 1000,
        limits=settings,
    )
    if location.startswith(("http://", "https://")):
        from dsf_compile.backtest.source import read_api

        return read_api(location, reader, settings.timeoutSeconds), location
    return read_export_file(Path(location), reader), location


def _initial_decisions(path: str | None) -> tuple[PlacementDecision, ...]:
    if path is None:
        return ()
    from dsf_compile.edges.hub_state import read_decisions

    return read_decisions(path)


class _Replayer:
    """Replays the fleet (once, and once per ``--steady`` weight) on one rebuilt history."""

    def __init__(
        self,
        fleet: Fleet,
        window: Window,
        series: Sequence[Series],
        initial: Sequence[PlacementDecision],
    ) -> None:
        from dsf_compile.placement.cluster_groups import inventory_clusters

        self.fleet, self.window, self.initial = fleet, window, initial
        steps = (window.start + window.step * np.arange(window.count, dtype=np.int64)) * 1000
        self.history = rebuild_all(series, _used_rules(fleet), _aggregation(fleet.inputs), steps)
        self.clusters = inventory_clusters(fleet.inputs)
        self.bindings = [b.model for b in fleet.inputs.bindings]

    def run(self, placements: Sequence[Placement]) -> list[Track]:
        """Every Placement's track over the window."""
        return replay(placements, self.clusters, self.bindings, self.history, self.initial)


def _reported(track: Track, fleet: Fleet) -> bool:
    meta = track.placement.metadata
    return f"{meta.namespace}/{meta.name}" in fleet.reported


def _aggregation(inputs: Inputs) -> Callable[[str, str], Aggregation]:
    """The fold each cluster's agent uses per score name: agent.aggregate, then the
    overrides selecting the cluster (later ones win), else ``last``."""
    labels = {c.model.metadata.name: c.model.metadata.labels for c in inputs.clusters}
    agent = inputs.settings.agent
    cache: dict[str, dict[str, Aggregation]] = {}

    def how(cluster: str, score_name: str) -> Aggregation:
        found = cache.get(cluster)
        if found is None:
            found = dict(agent.aggregate)
            for override in agent.overrides:
                if selects_cluster(override, cluster, labels.get(cluster, {})):
                    found.update(override.aggregate or {})
            cache[cluster] = found
        return found.get(score_name, "last")

    return how


def _weights(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    weights = []
    for part in text.split(","):
        try:
            weight = int(part.strip())
        except ValueError:
            raise UsageError(f"--steady {text}: {part!r} is not an integer weight") from None
        if not -10 <= weight <= 10:
            raise UsageError(f"--steady {text}: weights are -10 to 10 (OCM's range)")
        weights.append(weight)
    return tuple(dict.fromkeys(weights))


def with_steady(placement: Placement, weight: int) -> Placement:
    """``placement`` with its Steady weight set to ``weight`` (added to configurations)."""
    policy = placement.spec.prioritizerPolicy
    configurations = [
        c
        for c in policy.configurations
        if not (c.scoreCoordinate.type == "BuiltIn" and c.scoreCoordinate.builtIn == STEADY)
    ]
    data = placement.model_dump(mode="json", exclude_unset=True, by_alias=True)
    policy_data = data.setdefault("spec", {}).setdefault("prioritizerPolicy", {})
    policy_data["configurations"] = [
        *(c.model_dump(mode="json", exclude_unset=True) for c in configurations),
        {"scoreCoordinate": {"type": "BuiltIn", "builtIn": STEADY}, "weight": weight},
    ]
    return Placement.model_validate(data)


def _with_sweep(
    reports: Sequence[PlacementReport], replayer: _Replayer, weights: Sequence[int]
) -> list[PlacementReport]:
    sweeps: dict[str, list[tuple[int, Totals]]] = {r.key: [] for r in reports}
    for weight in weights:
        tuned = [with_steady(p, weight) for p in replayer.fleet.placements]
        for track in replayer.run(tuned):
            meta = track.placement.metadata
            key = f"{meta.namespace}/{meta.name}"
            if key in sweeps:
                sweeps[key].append((weight, totals_of(track, replayer.window)))
    return [replace(r, sweep=tuple(sweeps[r.key])) for r in reports]


def _read_baseline(path: str) -> dict[str, Totals]:
    """An earlier run's JSON: each Placement's changes, churn and meanLoss."""
    try:
        document: Any = json.loads(Path(path).read_bytes())
    except OSError as err:
        raise UsageError(f"--baseline {path}: cannot read: {err.strerror or err}") from None
    except ValueError as err:
        raise InputError([Problem(path, 1, 1, "", f"not the JSON of a backtest: {err}")]) from None
    found = {}
    placements = document.get("placements") if isinstance(document, dict) else None
    if not isinstance(placements, list):
        raise InputError([Problem(path, 1, 1, "placements", "expected a list")])
    for position, entry in enumerate(placements):
        try:
            key = f"{entry['namespace']}/{entry['name']}"
            found[key] = Totals(
                int(entry["changes"]), int(entry["churn"]), float(entry["meanLoss"])
            )
        except (KeyError, TypeError, ValueError):
            raise InputError(
                [
                    Problem(
                        path,
                        1,
                        1,
                        f"placements[{position}]",
                        "expected namespace, name, changes, churn and meanLoss",
                    )
                ]
            ) from None
    return found


def _with_baseline(
    reports: Sequence[PlacementReport], baseline: dict[str, Totals]
) -> list[PlacementReport]:
    return [replace(r, baseline=baseline.get(r.key), has_baseline=True) for r in reports]
