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

from tests.fleet_repo import copy_fleet, without_example_image
from tests.placement.mcp_session import server_env, session_run, structured

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


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_tools_answer_over_stdio_and_optimize_writes_only_its_folder(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    without_example_image(root)  # so that validate has a warning to pass on
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
    # the example's repository.url without its image (published by nothing) and what the hub
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
                ("explain_placement", {"at": AT}),
            ],
        )
    )
    optimized, validation, explained, scorers, explained_now = results
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
    # every tool validates first, as validate does
    assert "no Policy default/policy-enable-mig-4g" in error_text(scorers)
    assert "nothing was written" not in error_text(scorers)
    assert "no Policy default/policy-enable-mig-4g" in error_text(explained_now)
    assert tree_digest(root) == before


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_without_scores_the_tools_say_how_to_give_them(tmp_path: Path) -> None:
    # get_scores used to answer [] silently
    root = copy_fleet(tmp_path / "fleet")
    _, (optimized, scores) = asyncio.run(
        session_run(root, [("optimize", {}), ("get_scores", {})], scores=False)
    )
    assert "--scores PATH or --hub-kubeconfig PATH" in error_text(optimized)
    assert "started without scores" in error_text(scores)
    assert "--scores PATH" in error_text(scores)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_the_tools_answer_over_streamable_http(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    port = free_port()
    server = HttpServer(tmp_path, root, f"127.0.0.1:{port}", env=server_env())
    try:
        server.wait_listening(socket.AF_INET, "127.0.0.1", port)
        tools, scores = asyncio.run(http_session(f"http://127.0.0.1:{port}/mcp"))
    finally:
        server.stop()
    assert {tool.name for tool in tools.tools} == TOOLS
    names = {(s["cluster"], s["name"]) for s in structured(scores)}
    assert ("worker01", "example-powerconsumption-score") in names


# ------------------------------------------------------------- hostile files (issue 17 row 6)

PLAN = "placements/optimized/default-gpu-apps.yaml"


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_optimize_never_reads_hidden_files_of_the_plan_folder(tmp_path: Path) -> None:
    # a hidden FIFO used to hang the tool for ever, a hidden link to /dev/zero to exhaust memory
    root = copy_fleet(tmp_path / "fleet")
    folder = root / "placements/optimized"
    os.mkfifo(folder / ".pending.yaml")
    (folder / ".zero.yaml").symlink_to("/dev/zero")
    _, (optimized, validation) = asyncio.run(
        session_run(root, [("optimize", {"at": AT}), ("validate", {})])
    )
    report = structured(optimized)
    assert report["objective"] == {PLAN: 145}
    assert structured(validation)["valid"] is True


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_fifo_in_place_of_the_plan_is_a_located_error_not_a_hang(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    (root / PLAN).unlink()
    os.mkfifo(root / PLAN)
    _, (optimized, scorers) = asyncio.run(
        session_run(root, [("optimize", {"at": AT}), ("list_scorers", {})])
    )
    assert f"{PLAN}:0:0: error: must be a regular file (not a FIFO or device)" in error_text(
        optimized
    )
    assert f"{PLAN}:0:0: error" in error_text(scorers)


# ----------------------------------------------------------------- the tools (issue 20 item 7)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_tools_have_titles_described_parameters_and_typed_outputs(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    tools, (explained,) = asyncio.run(
        session_run(root, [("explain_placement", {"placement": "default/gpu-inference", "at": AT})])
    )
    by_name = {tool.name: tool for tool in tools.tools}
    for tool in by_name.values():
        assert tool.title, tool.name
        assert tool.description, tool.name
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        for name, parameter in tool.input_schema.get("properties", {}).items():
            assert parameter.get("description"), (tool.name, name)
    assert "RFC 3339" in by_name["get_scores"].input_schema["properties"]["at"]["description"]
    assert (
        "NAMESPACE/NAME"
        in (by_name["explain_placement"].input_schema["properties"]["placement"]["description"])
    )
    # explain_placement's output is typed to `explain --format json`'s document, not an untyped object
    schema = by_name["explain_placement"].output_schema
    placement = schema["$defs"]["ExplainedPlacement"]
    assert {"namespace", "name", "decisions", "totals", "unscheduled"} <= set(placement["required"])
    assert {"decisionGroups", "placementDecisions", "conditions", "margins"} <= set(
        placement["properties"]
    )
    assert explained.structured_content["placements"][0]["decisions"] == ["worker02"]


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_unknown_arguments_are_refused(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    (root / PLAN).unlink()
    before = tree_digest(root)
    _, (validation, optimized, explained) = asyncio.run(
        session_run(
            root,
            [
                ("validate", {"strict": True}),
                ("optimize", {"at": AT, "dryRun": True}),
                ("explain_placement", {"placements": "default/gpu-inference"}),
            ],
        )
    )
    assert "strict" in error_text(validation)
    assert "dryRun" in error_text(optimized)
    assert "placements" in error_text(explained)
    assert tree_digest(root) == before


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_relative_scores_path_is_relative_to_the_root(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = copy_fleet(tmp_path / "fleet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dsf_compile.commands.mcp_server",
            "--root",
            str(root),
            "--scores",
            "snapshots",
        ],
        env=server_env(),
        cwd=str(elsewhere),
    )

    async def call() -> Any:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return await session.call_tool("get_scores", {"at": AT})

    scores = structured(asyncio.run(call()))
    assert ("worker01", "example-powerconsumption-score") in {
        (s["cluster"], s["name"]) for s in scores
    }


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_expired_and_failing_scores_are_flagged(tmp_path: Path) -> None:
    import yaml

    root = copy_fleet(tmp_path / "fleet")
    snapshot = root / "snapshots/addonplacementscores.yaml"
    documents = list(yaml.safe_load_all(snapshot.read_text()))
    items = [i for d in documents for i in d.get("items", [d])]
    for item in items:
        name, cluster = item["metadata"]["name"], item["metadata"]["namespace"]
        status = item.setdefault("status", {})
        if (name, cluster) == ("example-performance-score", "worker01"):
            status["validUntil"] = "2026-11-22T09:00:00Z"
        if (name, cluster) == ("example-performance-score", "worker02"):
            status["conditions"] = [
                {
                    "type": "ScoresAvailable",
                    "status": "False",
                    "reason": "ScorerUnreachable",
                    "message": "connection refused\x1b[2J",
                }
            ]
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    _, (result,) = asyncio.run(session_run(root, [("get_scores", {"at": AT})]))
    scores = {(s["cluster"], s["name"]): s for s in structured(result)}
    stale = scores["worker01", "example-performance-score"]
    assert stale["expired"] is True
    assert stale["warnings"] == [
        "expired: validUntil 2026-11-22T09:00:00Z is before 2026-11-22T10:00:00Z"
    ]
    failing = scores["worker02", "example-performance-score"]
    assert failing["expired"] is False
    assert failing["scoresAvailable"]["status"] == "False"
    assert "\x1b" not in json.dumps(failing["scoresAvailable"], ensure_ascii=False)
    assert failing["warnings"][0].startswith(
        "failing: ScoresAvailable is False (ScorerUnreachable: connection refused"
    )
    healthy = scores["worker01", "example-powerconsumption-score"]
    assert (healthy["expired"], healthy["warnings"]) == (False, [])


def git(root: Path, *arguments: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *arguments],
        check=True,
        capture_output=True,
        timeout=60,
    )


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_optimize_reports_the_change_against_the_committed_plan_every_time(
    tmp_path: Path,
) -> None:
    # a second call used to report an empty diff although the change was uncommitted
    root = copy_fleet(tmp_path / "fleet")
    (root / PLAN).unlink()
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fleet without a plan")
    _, (first, second) = asyncio.run(
        session_run(root, [("optimize", {"at": AT}), ("optimize", {"at": AT})])
    )
    first_report, second_report = structured(first), structured(second)
    assert first_report["written"] == [PLAN] and second_report["written"] == []
    for report in (first_report, second_report):
        assert report["files"] == [PLAN]
        assert "+  name: placement-app01" in report["diff"]
        assert report["leftOut"] == {PLAN: []}
    assert first_report["diff"] == second_report["diff"]
    # once committed, the plan is no change
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "plan")
    _, (third,) = asyncio.run(session_run(root, [("optimize", {"at": AT})]))
    assert (structured(third)["files"], structured(third)["diff"]) == ([], "")


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_optimize_names_the_workloads_left_out(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    workloads = root / "placements/gpu-apps/workloads.yaml"
    text = workloads.read_text()
    second = text.index("name: mwrs-app02")
    workloads.write_text(
        text[:second]
        + text[second:].replace('resource-request-amount: "1"', 'resource-request-amount: "4"', 1)
    )
    _, (optimized,) = asyncio.run(session_run(root, [("optimize", {"at": AT})]))
    report = structured(optimized)
    assert report["leftOut"] == {PLAN: ["mwrs-app02"]}
    assert report["warnings"] == [
        "placements/gpu-apps/optimization.yaml:26:7: warning: spec.targetWorkloads[1]: "
        "mwrs-app02 is left out of the plan: 1 of 2 workloads fit together, and this one is "
        "not among them"
    ]


# ---------------------------------------------------------- streamable HTTP (issue 17 row 11)


class HttpServer:
    """``dsf-mcp --http`` in a subprocess, its stderr in a file."""

    def __init__(self, tmp_path: Path, root: Path, listen: str, *extra: str, env: dict[str, str]):
        self.log = tmp_path / "server.log"
        self.log_file = self.log.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dsf_compile.commands.mcp_server",
                "--root",
                str(root),
                "--scores",
                "snapshots",
                "--http",
                listen,
                *extra,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=self.log_file,
        )

    def wait_listening(self, family: socket.AddressFamily, host: str, port: int) -> None:
        for _ in range(300):  # up to 30 s for the interpreter and the SDK to start
            with socket.socket(family) as probe:
                if probe.connect_ex((host, port)) == 0:
                    return
            assert self.process.poll() is None, self.log.read_text()
            time.sleep(0.1)
        raise AssertionError(self.log.read_text())

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log_file.close()


async def http_session(url: str, headers: dict[str, str] | None = None) -> tuple[Any, Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(trust_env=False, timeout=30, headers=headers) as client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.list_tools(), await session.call_tool("get_scores", {"at": AT})


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def post_initialize(url: str, headers: dict[str, str]) -> int:
    import httpx2

    with httpx2.Client(trust_env=False, timeout=30) as client:
        return int(
            client.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers}).status_code
        )


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_ipv6_loopback_works_and_foreign_hosts_and_origins_are_refused(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    port = free_port()
    server = HttpServer(tmp_path, root, f"[::1]:{port}", env=server_env())
    try:
        server.wait_listening(socket.AF_INET6, "::1", port)
        url = f"http://[::1]:{port}/mcp"
        tools, scores = asyncio.run(http_session(url))
        assert {tool.name for tool in tools.tools} == TOOLS
        assert not scores.is_error
        # what a DNS-rebinding page sends: its own name as Host, its own page as Origin
        assert post_initialize(url, {"Host": f"evil.example:{port}"}) == 421
        assert post_initialize(url, {"Origin": f"http://evil.example:{port}"}) == 403
        assert post_initialize(url, {"Origin": f"http://[::1]:{port}"}) == 200
    finally:
        server.stop()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_beyond_loopback_without_a_token_the_server_does_not_start(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    env = {k: v for k, v in server_env().items() if k != "DSF_MCP_TOKEN"}
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile.commands.mcp_server", "--root", str(root), "--http",
         f"0.0.0.0:{free_port()}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert "needs a bearer token; set DSF_MCP_TOKEN or pass --token-file PATH" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.integration
@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", ["environment", "file"])
def test_beyond_loopback_every_request_needs_the_token(tmp_path: Path, source: str) -> None:
    root = copy_fleet(tmp_path / "fleet")
    (root / PLAN).unlink()
    before = tree_digest(root)
    token = "s3cret-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:24]
    env = server_env()
    extra: list[str] = []
    if source == "environment":
        env["DSF_MCP_TOKEN"] = token
    else:
        (tmp_path / "token").write_text(token + "\n")
        extra = ["--token-file", str(tmp_path / "token")]
    port = free_port()
    server = HttpServer(tmp_path, root, f"0.0.0.0:{port}", *extra, env=env)
    try:
        server.wait_listening(socket.AF_INET, "127.0.0.1", port)
        url = f"http://127.0.0.1:{port}/mcp"
        tools, scores = asyncio.run(http_session(url, {"Authorization": f"Bearer {token}"}))
        assert {tool.name for tool in tools.tools} == TOOLS
        assert not scores.is_error
        assert post_initialize(url, {}) == 401
        assert post_initialize(url, {"Authorization": f"Bearer {token}x"}) == 401
        assert post_initialize(url, {"Authorization": f"Basic {token}"}) == 401
        assert post_initialize(url, {"Authorization": f"Bearer {token}"}) == 200
        # the token does not lift the Host check
        rebinding = {"Authorization": f"Bearer {token}", "Host": f"evil.example:{port}"}
        assert post_initialize(url, rebinding) == 421
    finally:
        server.stop()
    assert token not in server.log.read_text()
    assert tree_digest(root) == before
