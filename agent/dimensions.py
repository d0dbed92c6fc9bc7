"""Pure mapping of scorer results to AddOnPlacementScore names and items.

The mapping is the contract's (:mod:`dsf_contract.placement_scores`), shared with
``dsf-compile backtest``, which rebuilds the same objects from the recorded series.
"""

from __future__ import annotations

from dsf_contract.placement_scores import (
    SCORE_MAX,
    SCORE_MIN,
    StatusScore,
    placement_value,
    render_dimension,
    score_items,
)

__all__ = [
    "SCORE_MAX",
    "SCORE_MIN",
    "StatusScore",
    "placement_value",
    "render_dimension",
    "score_items",
]
