"""``--max-changes-per-day``: the limit as given, and the reported Placements over it.

The gate's verdict goes beside the report, never instead of it: the command exits 1 and
prints the whole report all the same (``fleet-repo.md``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dsf_contract.problem import Problem

if TYPE_CHECKING:  # the option table imports this module: nothing heavy at its import
    from dsf_compile.backtest.report import PlacementReport, Window


@dataclass(frozen=True)
class ChangesLimit:
    """The number, and the text it was given as (what is printed)."""

    text: str
    value: float


def parse_limit(text: str) -> ChangesLimit:
    """A finite number ≥ 0; ValueError otherwise (NaN and infinities would never trip)."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{text!r}: a finite number, 0 or more, is expected")
    return ChangesLimit(text.strip(), value)


def over_limit(
    reports: Sequence[PlacementReport], window: Window, limit: ChangesLimit | None
) -> tuple[Problem, ...]:
    """The reported Placements changing more often than ``limit`` a day (the exact rate,
    not the rounded one the report shows), one problem each; the limit named as given."""
    if limit is None or window.days <= 0:
        return ()
    return tuple(
        Problem(
            "placements",
            0,
            0,
            r.key,
            f"{r.totals.changes / window.days:.4f} changes per day, more than "
            f"--max-changes-per-day {limit.text}",
        )
        for r in reports
        if r.totals.changes / window.days > limit.value
    )
