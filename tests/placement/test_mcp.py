"""``dsf-mcp`` through the MCP SDK's own client over stdio."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import subprocess
import sys
import time
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
        args=["-m", "dsf_compile.mcp_server", "--root", str(root), *options],
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
    assert validation["valid"] is True
    # the example's repository.url (its image is published by nothing) and what the hub
    # needs for the kinds placements/ uses
    assert sorted((p["path"], p["severity"], p["field"]) for p in validation["problems"]) == [
        ("dsf.yaml", "warning", "repository.url"),
        ("placements/gpu-apps/policies.yaml", "info", "kind"),
        ("placements/gpu-apps/workloads.yaml", "info", "kind"),
    ]
    assert optimized["files"] == ["placements/optimized/default-gpu-apps.yaml"]
    assert "+  name: placement-app01" in optimized["diff"]

    after = tree_digest(root)
    changed = {p for p in set(before) | set(after) if before.get(p) != after.get(p)}
    assert changed == {"placements/optimized/default-gpu-apps.yaml"}


def error_text(result: Any) -> str:
    assert result.is_error, result
    return "\n".join(part.text for part in result.content)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_assistant_reads_what_went_wrong(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    optimization = root / "placements/gpu-apps/optimization.yaml"
    optimization.write_text(
        optimization.read_text().replace("policy-enable-mig-2g-worker02", "policy-enable-mig-4g")
    )
    before = tree_digest(root)
    _, results = asyncio.run(
        session_run(
            root,
            [
                ("optimize", {"at": AT}),
                ("validate", {}),
                ("explain_placement", {"at": "yesterday"}),
                ("list_scorers", {}),
            ],
        )
    )
    optimized, validation, explained, scorers = results
    # the located problem, not only "Error executing tool optimize"
    assert (
        "placements/gpu-apps/optimization.yaml:23:11: error: spec.clusters[1].availablePolicies[2]: "
        "no Policy default/policy-enable-mig-4g in placements/"
    ) in error_text(optimized)
    assert "nothing was written" in error_text(optimized)
    report = structured(validation)
    assert report["valid"] is False
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert [(p["path"], p["line"], p["field"]) for p in errors] == [
        ("placements/gpu-apps/optimization.yaml", 23, "spec.clusters[1].availablePolicies[2]")
    ]
    assert "yesterday" in error_text(explained)
    assert not scorers.is_error
    assert tree_digest(root) == before


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_optimize_without_scores_says_how_to_give_them(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    _, (optimized,) = asyncio.run(session_run(root, [("optimize", {})], scores=False))
    assert "--scores PATH or --hub-kubeconfig PATH" in error_text(optimized)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_tools_answer_over_streamable_http(tmp_path: Path) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    root = copy_fleet(tmp_path / "fleet")
    port = free_port()
    log = tmp_path / "server.log"
    log_file = log.open("wb")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dsf_compile.mcp_server",
            "--root",
            str(root),
            "--scores",
            str(root / "snapshots"),
            "--http",
            f"127.0.0.1:{port}",
        ],
        env=server_env(),
        stdout=subprocess.DEVNULL,
        stderr=log_file,
    )
    try:
        for _ in range(300):  # up to 30 s for the interpreter and the SDK to start
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert server.poll() is None, log.read_text()
            time.sleep(0.1)

        async def call() -> tuple[Any, Any]:
            async with (
                httpx2.AsyncClient(trust_env=False, timeout=30) as client,
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=client) as (
                    read,
                    write,
                ),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.list_tools(), await session.call_tool("get_scores", {})

        tools, scores = asyncio.run(call())
    finally:
        server.terminate()
        server.wait(timeout=30)
        log_file.close()
    assert {tool.name for tool in tools.tools} == TOOLS
    names = {(s["cluster"], s["name"]) for s in structured(scores)}
    assert ("worker01", "example-powerconsumption-score") in names
