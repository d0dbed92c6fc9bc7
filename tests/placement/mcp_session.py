"""``dsf-mcp`` driven by the MCP SDK's own client over stdio, as an assistant runs it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.fleet_repo import REPO_ROOT


def server_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    return env


async def session_run(
    root: Path, calls: list[tuple[str, dict[str, Any]]], *, scores: bool = True
) -> tuple[Any, list[Any]]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    options = ["--scores", str(root / "snapshots")] if scores else []
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dsf_compile.commands.mcp_server", "--root", str(root), *options],
        env=server_env(),
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
