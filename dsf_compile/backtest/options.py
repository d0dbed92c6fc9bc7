"""``dsf-compile backtest``'s options (``docs/backtest.md``); parsing only, nothing imported
that the other commands do not need."""

from __future__ import annotations

import argparse


def backtest_arguments(parser: argparse.ArgumentParser) -> None:
    """``backtest``'s own arguments (``--format`` is every command's)."""
    parser.add_argument(
        "placements", nargs="*", metavar="NAMESPACE/NAME", help="report these (default: all)"
    )
    parser.add_argument(
        "--history",
        required=True,
        metavar="URL|PATH",
        help="a Prometheus-compatible API's base URL, or a VictoriaMetrics export file (.gz too)",
    )
    parser.add_argument("--from", dest="start", metavar="TIME", help="RFC 3339 or 7d, 36h… back")
    parser.add_argument("--to", dest="end", metavar="TIME", help="RFC 3339 or a duration back")
    parser.add_argument(
        "--step",
        metavar="DURATION",
        help="30s, 5m, 1h… (default: the smallest interval of the scorers the Placements use)",
    )
    parser.add_argument(
        "--decisions", metavar="PATH", help="PlacementDecisions before the first step"
    )
    parser.add_argument(
        "--steady", metavar="W[,W...]", help="replay once more per Steady weight W (-10..10)"
    )
    parser.add_argument("--baseline", metavar="PATH", help="the JSON of an earlier run to compare")
    parser.add_argument(
        "--max-changes-per-day",
        type=float,
        default=None,
        metavar="N",
        help="exit 1 when a reported Placement changes its decisions more often",
    )
    parser.add_argument(
        "--save-history", metavar="PATH", help="write what was read as an export file"
    )
