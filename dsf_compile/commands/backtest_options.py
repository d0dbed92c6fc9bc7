"""``dsf-compile backtest``'s options (``docs/backtest.md``); parsing only, nothing imported
that the other commands do not need."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from dsf_compile.commands.parser import DECISIONS, Completion, Option

if TYPE_CHECKING:  # the option table is built by every command, backtest's gate by backtest
    from dsf_compile.backtest.gate import ChangesLimit


def changes_limit(text: str) -> ChangesLimit:
    """``--max-changes-per-day``: a finite number ≥ 0, else a usage error (exit 2)."""
    from dsf_compile.backtest.gate import parse_limit

    try:
        return parse_limit(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


HISTORY = Option(
    "--history",
    "URL|PATH",
    "a Prometheus-compatible API's base URL, or a VictoriaMetrics export file (.gz too)",
    complete=Completion.FILE,
    required=True,
)
MAX_CHANGES_PER_DAY = Option(
    "--max-changes-per-day",
    "N",
    "exit 1 when a reported Placement changes its decisions more often",
    type=changes_limit,
)

#: ``backtest``'s own arguments (``--format`` is every command's), in ``--help``'s order.
BACKTEST_OPTIONS = (
    Option("placements", "NAMESPACE/NAME", "report these (default: all)", nargs="*"),
    HISTORY,
    Option("--from", "TIME", "RFC 3339 or 7d, 36h… back", dest="start"),
    Option("--to", "TIME", "RFC 3339 or a duration back", dest="end"),
    Option(
        "--step",
        "DURATION",
        "30s, 5m, 1h… (default: the smallest interval of the scorers the Placements use)",
    ),
    DECISIONS.where("PlacementDecisions before the first step"),
    Option("--steady", "W[,W...]", "replay once more per Steady weight W (-10..10)"),
    Option("--baseline", "PATH", "the JSON of an earlier run to compare", complete=Completion.FILE),
    MAX_CHANGES_PER_DAY,
    Option(
        "--save-history",
        "PATH",
        "write what was read as an export file",
        complete=Completion.FILE,
    ),
)
