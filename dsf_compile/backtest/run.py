"""The pieces of a backtest run (:mod:`dsf_compile.pipeline.backtest` puts them in order):
the working tree as the replay reads it, the window, the history read, the scores
rebuilt and replayed, the ``--steady`` sweep and the warnings of each Placement.

I/O at the edges: the inputs and the history are read here, :mod:`.rebuilt_scores` and
:mod:`.replay` are pure, :mod:`.report` prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

import numpy as np

from dsf_compile.backtest.coverage import coverage_warning, missing_scores
from dsf_compile.backtest.fast_plan import Budget
from dsf_compile.backtest.history import (
    HistoryReader,
    HistoryReadError,
    Series,
    read_export_file,
)
from dsf_compile.backtest.rebuilt_scores import ScorerRule
from dsf_compile.backtest.replay import Track, replay
from dsf_compile.backtest.report import PlacementReport, Totals, Window, totals_of
from dsf_compile.backtest.score_history import rebuild_all
from dsf_compile.errors import InputError, UsageError
from dsf_compile.inputs.placements import Placement, PlacementDecision
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.cel import score_names
from dsf_compile.placement.prioritizers import STEADY
from dsf_compile.placement.scheduler import compile_cached
from dsf_compile.render.agent_overrides import cluster_overrides, override_aggregation
from dsf_compile.resolve.summaries import ClusterPlan, Resolutions
from dsf_compile.times import duration_seconds, window_bound
from dsf_contract.agent_cli import Aggregation
from dsf_contract.problem import Problem
from dsf_contract.scores import SCORE_KIND

DEFAULT_DAYS = 7
NOTES = (
    "samples are what the scraper saw (scrape times, not the agents' cycle times)",
    "a failing scorer whose gauge stays published is seen as valid, while the hub expires it",
    "ds_* label values are cut to 256 characters, item names are not",
)


@dataclass(frozen=True)
class Fleet:
    """The working tree as the replay reads it."""

    inputs: Inputs
    placements: tuple[Placement, ...]
    reported: frozenset[str]
    rules: dict[str, ScorerRule]


def with_warnings(found: PlacementReport, track: Track, replayer: Replayer) -> PlacementReport:
    """The scheduler's warnings, and what the history does not cover for this Placement."""
    placement = track.placement
    warnings = set(found.warnings)
    warnings.update(
        missing_scores(
            sorted(used_resources([placement])),
            addon_coordinates(placement),
            replayer.history,
            replayer.fleet.rules,
        )
    )
    covered = coverage_warning(replayer.window)
    if covered is not None:
        warnings.add(covered)
    return replace(found, warnings=tuple(sorted(warnings)))


def fleet_of(inputs: Inputs, resolutions: Resolutions, names: Sequence[str]) -> Fleet:
    """The working tree as the replay reads it; ``names`` the reported Placements (all
    when empty). ``resolutions`` resolve the scorers (against the lockfile, if readable)."""
    placements = tuple(p.model for p in inputs.placements)
    known = {f"{p.metadata.namespace}/{p.metadata.name}" for p in placements}
    missing = sorted(set(names) - known)
    if missing:
        raise UsageError(f"no Placement {', '.join(missing)} in placements/ (NAMESPACE/NAME)")
    return Fleet(inputs, placements, frozenset(names or known), _rules(inputs, resolutions))


def _rules(inputs: Inputs, resolutions: Resolutions) -> dict[str, ScorerRule]:
    """Score name → its rule, for every scorer publishing AddOnPlacementScores."""
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
                used |= score_names(compile_cached(expression))
    return used


def addon_coordinates(placement: Placement) -> list[tuple[str, str]]:
    """The (AddOnPlacementScore, item) pairs the Placement ranks by (weight not 0)."""
    return sorted(
        {
            (config.scoreCoordinate.addOn.resourceName, config.scoreCoordinate.addOn.scoreName)
            for config in placement.spec.prioritizerPolicy.configurations
            if config.scoreCoordinate.addOn is not None and config.weight != 0
        }
    )


def _used_rules(fleet: Fleet) -> dict[str, ScorerRule]:
    used = used_resources(fleet.placements)
    return {name: rule for name, rule in fleet.rules.items() if rule.resource in used}


def replay_window(
    span: tuple[str | None, str | None, str | None], fleet: Fleet, now: datetime
) -> Window:
    """The steps of ``(--from, --to, --step)`` as given (None: the default)."""
    start_text, end_text, step_text = span
    end = window_bound(end_text, now) if end_text else int(now.timestamp())
    start = window_bound(start_text, now) if start_text else end - DEFAULT_DAYS * 86_400
    if start > end:
        raise UsageError("--from is after --to")
    if step_text:
        seconds = duration_seconds(step_text)
        if seconds < 1 or seconds != int(seconds):
            raise UsageError(f"--step {step_text}: a whole number of seconds, at least 1s")
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


def read_history(location: str, fleet: Fleet, window: Window) -> tuple[list[Series], str]:
    """The series the replay needs, from an API or a file, and where they came from."""
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
    try:
        if location.startswith(("http://", "https://")):
            from dsf_compile.backtest.source import read_api

            return read_api(location, reader, settings.timeoutSeconds), location
        return read_export_file(Path(location), reader), location
    except HistoryReadError as err:
        where = err.where or location
        raise InputError([Problem(where, err.line, 0, "", err.message)]) from None


def initial_decisions(path: str | None) -> tuple[PlacementDecision, ...]:
    if path is None:
        return ()
    from dsf_compile.hubread.state import read_decisions

    return read_decisions(path)


class Replayer:
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
        #: The tables of the replays so far (the ``--steady`` ones share the first's).
        self.budget = Budget()

    def run(self, placements: Sequence[Placement]) -> list[Track]:
        """Every Placement's track over the window."""
        return replay(
            placements,
            self.clusters,
            self.bindings,
            self.history,
            self.initial,
            budget=self.budget,
        )


def is_reported(track: Track, fleet: Fleet) -> bool:
    meta = track.placement.metadata
    return f"{meta.namespace}/{meta.name}" in fleet.reported


def _aggregation(inputs: Inputs) -> Callable[[str, str], Aggregation]:
    """The fold each cluster's agent uses per score name: agent.aggregate, then the
    overrides selecting the cluster (later ones win), else ``last``."""
    labels = {c.model.metadata.name: c.model.metadata.labels for c in inputs.clusters}
    settings = inputs.settings
    cache: dict[str, dict[str, Aggregation]] = {}

    def how(cluster: str, score_name: str) -> Aggregation:
        found = cache.get(cluster)
        if found is None:  # as render gives the cluster's agent (render/agent_overrides.py)
            plan = ClusterPlan(cluster, dict(labels.get(cluster, {})), ())
            merged = override_aggregation(cluster_overrides(settings, plan))
            found = cache[cluster] = {**settings.agent.aggregate, **merged}
        return found.get(score_name, "last")

    return how


def steady_weights(text: str | None) -> tuple[int, ...]:
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


def with_sweep(
    reports: Sequence[PlacementReport], replayer: Replayer, weights: Sequence[int]
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
