"""Scorer results → AddOnPlacementScore items: the agent's mapping, owned here once.

The agent (``agent/cycle.py``) publishes with it every cycle, and ``dsf-compile
backtest`` rebuilds, from the recorded ``dynamic_score`` series, the objects the agent
would have written: the dimension rendered from ``scoreDimensionFormat``, the results
that render the same name folded by the score's aggregation, each value rounded down and
clamped to the API's range, and the window after which Placement stops trusting them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, TypeVar

from dsf_contract.agent_cli import Aggregation
from dsf_contract.records import frozen
from dsf_contract.summary import PLACEHOLDER_RE

#: The result labels the agent uses (dimension placeholders and ``dynamic_score`` labels).
RESULT_LABELS = ("node", "device", "namespace", "app", "pod", "container", "meta")
SCORE_MIN = -100
SCORE_MAX = 100
#: ``validUntil`` is this many scoring intervals after a cycle's scores.
VALIDITY_INTERVALS = 3

_K = TypeVar("_K")


def validity_seconds(interval: int) -> int:
    """How long a score stays valid after it is written: 3 × the scoring interval."""
    return VALIDITY_INTERVALS * interval


def fold_scores(values: Iterable[float], how: Aggregation) -> float:
    """Combine the scores of one dimension, in result order, into one score."""
    items = list(values)
    if not items:
        raise ValueError("nothing to fold")
    if how == "last":
        return items[-1]
    if how == "max":
        return max(items)
    if how == "min":
        return min(items)
    if how == "sum":
        return sum(items)
    return sum(items) / len(items)


def group_by_key(pairs: Iterable[tuple[_K, float]], how: Aggregation) -> dict[_K, float]:
    """Group ``(key, score)`` pairs by key, keeping the first-seen key order, and fold each group."""
    groups: dict[_K, list[float]] = {}
    for key, value in pairs:
        groups.setdefault(key, []).append(value)
    return {key: fold_scores(values, how) for key, values in groups.items()}


def render_dimension(
    template: str, labels: Mapping[str, str], *, cluster: str, score_name: str
) -> str:
    """``scoreDimensionFormat`` with each ``${placeholder}`` replaced by its value.

    Result labels are used untruncated; an absent label renders empty. An unknown
    placeholder (the compiler rejects them) is left as written.
    """
    values = {"cluster": cluster, "scoreName": score_name}

    def replace(match: re.Match[str]) -> str:
        key = match.group(1)
        if key in values:
            return values[key]
        if key in RESULT_LABELS:
            return labels.get(key, "")
        return match.group(0)

    return PLACEHOLDER_RE.sub(replace, template)


def placement_value(score: float) -> int:
    """A score as the API's integer: rounded down, then clamped to [-100, 100].

    Clamping comes first so that an infinite sum of finite scores still maps to a bound.
    """
    if score >= SCORE_MAX:
        return SCORE_MAX
    if score <= SCORE_MIN:
        return SCORE_MIN
    return math.floor(score)


def placement_values(scores: Any, *, in_place: bool = False) -> Any:
    """:func:`placement_value` over a numpy array of finite or infinite scores at once
    (``backtest`` maps millions of recorded samples); the same bounds, then floor.

    ``in_place``: ``scores`` is a float array of the caller's, bounded and floored where it
    is (no temporary array of its size: the pages of each cost more than the arithmetic)."""
    import numpy as np  # only the compiler's backtest calls this; the agent never loads numpy

    if not in_place:
        return np.floor(np.clip(scores, SCORE_MIN, SCORE_MAX)).astype(np.int16)
    np.clip(scores, SCORE_MIN, SCORE_MAX, out=scores)
    np.floor(scores, out=scores)
    return scores.astype(np.int16)


@frozen
class StatusScore:
    """One entry of ``status.scores``."""

    name: str
    value: int

    def as_dict(self) -> dict[str, str | int]:
        """The item as the API wants it."""
        return {"name": self.name, "value": self.value}


class LabelledScore(Protocol):
    """A result as the mapping reads it: its labels (``RESULT_LABELS``) and a finite score."""

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def score(self) -> float: ...


def score_items(
    results: Iterable[LabelledScore],
    *,
    template: str,
    cluster: str,
    score_name: str,
    how: Aggregation,
) -> list[StatusScore]:
    """The sorted ``status.scores`` of one scorer's results.

    Results whose name renders empty are skipped; results with the same name are folded
    (``last`` keeps the later one, as upstream does).
    """
    pairs = (
        (render_dimension(template, r.labels, cluster=cluster, score_name=score_name), r.score)
        for r in results
    )
    folded = group_by_key(((name, score) for name, score in pairs if name), how)
    # A fold can only give NaN by adding +inf and -inf overflows; such a dimension has no value.
    return [
        StatusScore(name, placement_value(score))
        for name, score in sorted(folded.items())
        if not math.isnan(score)
    ]
