"""The static scorer: fixed performance and power-consumption scores, two scorers in one service.

Run: ``python -m samples.static_scorer [--host 127.0.0.1] [--port 8000]``.

``/performance/config`` + ``/performance/scoring`` and ``/powerconsumption/config`` +
``/powerconsumption/scoring``. The source type is ``None`` (the agent sends
``{"data": []}``); every result carries ``app`` and ``device`` labels, for a
``${app};${device}`` dimension format. The devices are the GPU layouts of the upstream
placement use case: a whole GPU (``all``) or a MIG slice; bigger slices perform better
and draw more power.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from .cli import base_parser, run_main
from .service import ScoreFunction, ScoringApp

# (app, device) -> score in [-100, 100]; a higher score is a better placement.
PERFORMANCE: dict[tuple[str, str], int] = {
    ("app01", "all"): 90,
    ("app01", "3g.48gb"): 70,
    ("app01", "2g.24gb"): 40,
    ("app02", "all"): 80,
    ("app02", "3g.48gb"): 60,
    ("app02", "2g.24gb"): 50,
}
POWER_CONSUMPTION: dict[tuple[str, str], int] = {
    ("app01", "all"): -60,
    ("app01", "3g.48gb"): 20,
    ("app01", "2g.24gb"): 70,
    ("app02", "all"): -40,
    ("app02", "3g.48gb"): 10,
    ("app02", "2g.24gb"): 60,
}


def config(kind: str, description: str) -> dict[str, Any]:
    """The ``/<kind>/config`` document."""
    return {
        "name": f"example-{kind}-scorer",
        "description": description,
        "source": {"type": "None"},
        "scoring": {
            "path": f"/{kind}/scoring",
            "params": {"name": f"example_{kind}_score", "interval": 30},
        },
    }


def fixed_scores(table: dict[tuple[str, str], int]) -> ScoreFunction:
    """A scoring function that ignores its input and returns ``table``, sorted."""

    def score(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {"metric": {"app": app, "device": device}, "score": float(value)}
            for (app, device), value in sorted(table.items())
        ]

    return score


def build(args: argparse.Namespace) -> ScoringApp:
    """The app serving both scorers."""
    return ScoringApp(
        documents={
            "/performance/config": config("performance", "An example performance score"),
            "/powerconsumption/config": config(
                "powerconsumption", "An example power consumption score"
            ),
        },
        scorers={
            "/performance/scoring": fixed_scores(PERFORMANCE),
            "/powerconsumption/scoring": fixed_scores(POWER_CONSUMPTION),
        },
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    return run_main(build, base_parser("The static performance / power-consumption scorer."), argv)


if __name__ == "__main__":
    raise SystemExit(main())
