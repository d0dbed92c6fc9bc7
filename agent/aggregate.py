"""Folding of results that land on the same dimension (or the same metric series).

Upstream keeps the last result; an operator may choose another fold per score name (the
functions' names are the contract's :data:`~dsf_contract.agent_cli.Aggregation`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from dsf_contract.agent_cli import Aggregation

_K = TypeVar("_K")


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
