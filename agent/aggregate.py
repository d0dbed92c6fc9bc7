"""Folding of results that land on the same dimension (or the same metric series).

Upstream keeps the last result; an operator may choose another fold per score name (the
functions' names are the contract's :data:`~dsf_contract.agent_cli.Aggregation`). The
folds are the contract's (:mod:`dsf_contract.placement_scores`): ``backtest`` folds the
recorded series with the same functions.
"""

from __future__ import annotations

from dsf_contract.placement_scores import fold_scores, group_by_key

__all__ = ["fold_scores", "group_by_key"]
