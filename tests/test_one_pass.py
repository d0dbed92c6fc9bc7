"""One pass: every command and every ``dsf-mcp`` tool loads the inputs once and resolves
each scorer once.

The example fleet (it has Placements and a PlacementOptimization, so the placement checks
look at every scorer's score before the plan resolves them) is run through the real CLI
and through the real MCP server's tools, in process, with the loader and the resolver
counted.
"""

from __future__ import annotations

import asyncio
import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.pipeline import inputs as pipeline_inputs
from dsf_compile.render.fastpath_cache import CACHE
from dsf_compile.resolve import scorer as resolving
from tests.backtest import history_data
from tests.fleet_repo import copy_fleet

AT = "2026-11-22T10:00:00Z"
SCORES = "snapshots/addonplacementscores.yaml"


class Counted:
    """How many times the inputs were loaded, and each scorer resolved, since :meth:`clear`."""

    def __init__(self) -> None:
        self.loads = 0
        self.resolved: Counter[str] = Counter()

    def clear(self) -> None:
        self.loads = 0
        self.resolved.clear()


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Counted:
    seen = Counted()
    load = pipeline_inputs._load_inputs
    resolve = resolving._Resolver.resolve

    def counted_load(root: Path) -> Any:
        seen.loads += 1
        return load(root)

    def counted_resolve(self: resolving._Resolver) -> resolving.ResolvedScorer | None:
        seen.resolved[self.located.model.metadata.name] += 1
        return resolve(self)

    monkeypatch.setattr(pipeline_inputs, "_load_inputs", counted_load)
    monkeypatch.setattr(resolving._Resolver, "resolve", counted_resolve)
    return seen


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    root = copy_fleet(tmp_path / "fleet")
    assert (root / "placements/gpu-apps/optimization.yaml").is_file()
    return root


def scorer_names(root: Path) -> list[str]:
    names = [s.model.metadata.name for s in pipeline_inputs.load_inputs(root).scorers]
    assert len(names) >= 2
    return names


def history_file(root: Path) -> str:
    start, end = history_data.window()
    path = root.parent / "history.jsonl"
    path.write_text(history_data.export_text(history_data.series(start, end)))
    return str(path)


def cli_commands(root: Path) -> dict[str, list[str]]:
    """Each command (with the options that change what it loads), as a user types it."""
    start, end = history_data.window()
    from datetime import UTC, datetime

    window = [datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") for t in (start, end)]
    return {
        "validate": ["validate"],
        "render": ["render"],
        "render --check": ["render", "--check", "--scores", str(root / SCORES), "--at", AT],
        "diff": ["diff"],
        "diff --scores": ["diff", "--scores", str(root / SCORES), "--at", AT],
        "explain": ["explain", "--scores", str(root / SCORES), "--at", AT],
        "explain (no scores)": ["explain"],
        "optimize": ["optimize", "--scores", str(root / SCORES), "--at", AT],
        "backtest": [
            "backtest",
            "--history",
            history_file(root),
            "--from",
            window[0],
            "--to",
            window[1],
            "--step",
            "1h",
        ],
    }


#: What each command resolves: explain, optimize's replay and backtest read the
#: scores of the Placements, not the scorers' summaries (validate's checks do).
RESOLVES = {"explain", "explain (no scores)", "backtest"}


def test_each_command_loads_the_inputs_once_and_resolves_each_scorer_once(
    fleet: Path, counted: Counted
) -> None:
    scorers = scorer_names(fleet)
    for name, argv in cli_commands(fleet).items():
        (fleet / CACHE).unlink(missing_ok=True)  # the full path runs, not the no-op cache
        counted.clear()
        out, err = io.StringIO(), io.StringIO()
        code = run(["--root", str(fleet), *argv], out, err)
        assert code in (0, 1), (name, err.getvalue())
        assert counted.loads == 1, (name, counted.loads)
        if name not in RESOLVES:
            assert counted.resolved == dict.fromkeys(scorers, 1), (name, counted.resolved)
        else:
            assert max(counted.resolved.values(), default=0) <= 1, (name, counted.resolved)


def call_tools(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    """The tools called in process on the real server, as an MCP client would call them."""
    pytest.importorskip("mcp")
    from dsf_compile.commands.mcp_fleet import Fleet
    from dsf_compile.commands.mcp_server import build_server

    server = build_server(Fleet(root, SCORES, None))

    async def each() -> list[Any]:
        return [await server.call_tool(name, arguments) for name, arguments in calls]

    return asyncio.run(each())


TOOLS: list[tuple[str, dict[str, Any]]] = [
    ("list_scorers", {}),
    ("get_scores", {"at": AT}),
    ("explain_placement", {"at": AT}),
    ("validate", {}),
    ("optimize", {"at": AT}),
]


@pytest.mark.parametrize(("tool", "arguments"), TOOLS, ids=[t for t, _ in TOOLS])
def test_each_mcp_tool_loads_the_inputs_once_and_resolves_each_scorer_once(
    fleet: Path, counted: Counted, tool: str, arguments: dict[str, Any]
) -> None:
    pytest.importorskip("scipy.optimize")
    scorers = scorer_names(fleet)
    counted.clear()
    (result,) = call_tools(fleet, [(tool, arguments)])
    assert not getattr(result, "is_error", getattr(result, "isError", False)), result
    assert counted.loads == 1, (tool, counted.loads)
    assert counted.resolved == dict.fromkeys(scorers, 1), (tool, counted.resolved)
