"""Pure mapping of scorer results to AddOnPlacementScore names and items."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent.aggregate import group_by_key
from agent.score import RESULT_LABELS, Scored
from dsf_contract.agent_cli import Aggregation
from dsf_contract.summary import PLACEHOLDER_RE

SCORE_MIN = -100
SCORE_MAX = 100


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


@dataclass(frozen=True)
class StatusScore:
    """One entry of ``status.scores``."""

    name: str
    value: int

    def as_dict(self) -> dict[str, str | int]:
        """The item as the API wants it."""
        return {"name": self.name, "value": self.value}


def score_items(
    results: Iterable[Scored],
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
