"""``dsf-mcp`` through the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fleet_repo import REPO_ROOT, copy_fleet

mcp = pytest.importorskip("mcp")
pytest.importorskip("scipy.optimize")

AT = "2026-11-22T10:00:00Z"
TOOLS = {"list_scorers", "get_scores", "explain_placement", "validate", "optimize"}


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


async def session_run(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dsf_compile.mcp_server",
            "--root",
            str(root),
            "--scores",
            str(root / "snapshots"),
        ],
        env=env,
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def structured(result: Any) -> Any:
    assert not result.is_error, result
    if result.structured_content is not None:
        content = result.structured_content
        return content.get("result", content) if set(content) == {"result"} else content
    return json.loads(result.content[0].text)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_tools_answer_over_stdio_and_optimize_writes_only_its_folder(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    (root / "placements/optimized/default-gpu-apps.yaml").unlink()
    before = tree_digest(root)
    tools, results = asyncio.run(
        session_run(
            root,
            [
                ("list_scorers", {}),
                ("get_scores", {}),
                ("explain_placement", {"placement": "default/gpu-inference", "at": AT}),
                ("validate", {}),
                ("optimize", {"at": AT}),
            ],
        )
    )
    by_name = {tool.name: tool for tool in tools.tools}
    assert set(by_name) == TOOLS
    assert by_name["explain_placement"].input_schema["properties"].keys() >= {"placement", "at"}
    assert by_name["list_scorers"].annotations.read_only_hint is True
    assert by_name["optimize"].annotations.read_only_hint is False

    scorers, scores, explained, validation, optimized = (structured(r) for r in results)
    names = {s["name"]: s for s in scorers}
    assert names["example-performance-scorer"]["addOnPlacementScore"] == "example-performance-score"
    assert names["example-performance-scorer"]["health"] == "Active"
    worker02 = next(
        s for s in scores if (s["cluster"], s["name"]) == ("worker02", "example-performance-score")
    )
    assert worker02["items"]["app01;3g.48gb"] == 85
    assert worker02["scoreDimensionFormat"] == "${app};${device}"
    (placement,) = explained["placements"]
    assert placement["decisions"] == ["worker02"]
    assert validation == {"valid": True, "problems": []}
    assert optimized["files"] == ["placements/optimized/default-gpu-apps.yaml"]
    assert "+  name: placement-app01" in optimized["diff"]

    after = tree_digest(root)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed == {"placements/optimized/default-gpu-apps.yaml"}
