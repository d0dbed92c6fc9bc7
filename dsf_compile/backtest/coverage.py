"""What the history does not cover: the steps before its first sample, and the scores a
Placement ranks by (or reads with CEL ``scores()``) that have no sample at all.

Both are said as warnings on each reported Placement: a replay over no scores decides
by name and looks perfectly stable, which is not what the fleet did. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dsf_compile.backtest.history import Series
from dsf_compile.backtest.rebuilt_scores import ScorerRule
from dsf_compile.backtest.report import Window
from dsf_compile.backtest.score_history import ScoreHistory


def first_covered(series: Sequence[Series], window: Window) -> int:
    """The first step at or after the earliest sample read (``window.count``: none)."""
    if not series:
        return window.count
    earliest = min(int(one.timestamps[0]) for one in series)
    offset = earliest - window.start * 1000
    if offset <= 0:
        return 0
    step_ms = window.step * 1000
    return min(window.count, -(-offset // step_ms))


def coverage_warning(window: Window) -> str | None:
    """Said when steps were left out of the rates because the history starts later."""
    if window.first == 0:
        return None
    if window.first >= window.count:
        return (
            "the history holds no sample of the scores the Placements use in the window: "
            "every step is left out of the rates"
        )
    return (
        f"the history starts at {window.at(window.first)}, after --from: the "
        f"{window.first} step(s) before it replay no score and are left out of the rates"
    )


def missing_scores(
    resources: Sequence[str],
    coordinates: Sequence[tuple[str, str]],
    history: ScoreHistory,
    rules: Mapping[str, ScorerRule],
) -> list[str]:
    """A warning per AddOnPlacementScore a Placement uses (``resources``) that no scorer
    publishes or that has no sample in the window, and per AddOn coordinate whose item
    never appears."""
    published = {rule.resource: rule.score_name for rule in rules.values()}
    present = history.resources
    warnings = []
    for resource in sorted(set(resources)):
        if resource not in published:
            warnings.append(
                f"no scorer of scorers/ publishes AddOnPlacementScore {resource!r}: "
                "its scores count 0 at every step"
            )
        elif resource not in present:
            warnings.append(
                f"score {published[resource]!r} (AddOnPlacementScore {resource!r}) has no "
                "sample in the history: its scores count 0 at every step"
            )
    for resource, item in sorted(set(coordinates)):
        if resource in present and not history.coordinate(resource, item).has_item():
            warnings.append(
                f"AddOnPlacementScore {resource!r} has no item {item!r} at any step: "
                "it counts 0 at every step"
            )
    return warnings
