"""``dsf-compile backtest``: Placements replayed over the fleet's score history (``docs/backtest.md``)."""
