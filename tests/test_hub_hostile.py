"""A hostile hub behind ``--hub-kubeconfig``: ``explain`` and ``sync --clusters`` run as a
user runs them (a subprocess), against a real HTTP server the real ``kubernetes`` client
talks to. Every case ends: exit 2, one clean line per problem, no traceback, no raw
control byte printed, nothing written; the server's counters show the client stopped.

``dsf.yaml`` sets small hub limits so each case is quick; the subprocess's hang guard
(before the fix several of these never ended) is not a measure.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.child_command import run_dsf_compile
from tests.fleet_repo import REPO_ROOT, copy_fleet
from tests.hostile_hub import (
    HostileHub,
    HubRequest,
    drip,
    endless_body,
    json_answer,
    list_of,
)

AT = "2026-11-22T10:00:00Z"
HUB_LIMITS = """
hub:
  timeoutSeconds: 3
  pageSize: 5
  maxPages: 20
  maxItems: 50
  maxBytes: 1048576
"""
SCORES = "/apis/cluster.open-cluster-management.io/v1alpha1/addonplacementscores"
CLUSTERS = "/apis/cluster.open-cluster-management.io/v1/managedclusters"
HANG_GUARD = 120  # seconds: only a hung command reaches it


@pytest.fixture
def hub() -> Iterator[HostileHub]:
    server = HostileHub().start()
    yield server
    server.stop()


@pytest.fixture
def fleet(tmp_path: Path, hub: HostileHub) -> Path:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    with (root / "dsf.yaml").open("a", encoding="utf-8") as settings:
        settings.write(HUB_LIMITS)
    (tmp_path / "hub.kubeconfig").write_text(hub.kubeconfig(), encoding="utf-8")
    return root


def dsf(root: Path, *argv: str) -> tuple[int, str, str]:
    """One ``dsf-compile`` command in a subprocess, as a user (or a scheduled job) runs it.

    Every run is held to what the issue asks of a hostile hub: no traceback, no raw
    control byte printed, and a peak memory (the child's own) under 1 GiB.
    """
    done = run_dsf_compile(root, *argv, hang_guard=HANG_GUARD)
    for stream in (done.out, done.err):
        assert not any((ord(c) < 32 and c not in "\n") or 0x7F <= ord(c) < 0xA0 for c in stream)
    assert done.rss_mib < 1024, f"{done.rss_mib:.0f} MiB"
    return done.code, done.out, done.err


def explain(root: Path) -> tuple[int, str, str]:
    kubeconfig = root.parent / "hub.kubeconfig"
    return dsf(root, "explain", "--hub-kubeconfig", str(kubeconfig), "--at", AT)


def sync_clusters(root: Path) -> tuple[int, str, str]:
    kubeconfig = root.parent / "hub.kubeconfig"
    return dsf(root, "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig))


def on_scores(answer: Any) -> Any:
    """``answer`` for the score list, an empty list for everything else."""

    def route(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        if request.path in (SCORES, CLUSTERS):
            return answer(request)
        return json_answer(list_of([]))

    return route


def score(cluster: str, value: int = 1, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1alpha1",
        "kind": "AddOnPlacementScore",
        "metadata": {"name": "example-performance-score", "namespace": cluster},
        "status": {"scores": [{"name": "app01;3g.48gb", "value": value}]},
        **extra,
    }


def page_number(request: HubRequest) -> int:
    return int(request.query.get("continue", ["0"])[0].removeprefix("page-") or 0)


# ------------------------------------------------------------------- pages and items


def test_a_repeated_continue_token_is_an_error(fleet: Path, hub: HostileHub) -> None:
    hub.answer = on_scores(lambda request: json_answer(list_of([score("worker01")], "again")))
    code, out, err = explain(fleet)
    assert code == 2 and out == ""
    assert err == (
        "dsf-compile: error: hub: the addonplacementscores list repeats a continue token: "
        "it would never end\n"
    )
    asked = [r for r in hub.requests if r.path == SCORES]
    assert [r.query.get("continue") for r in asked] == [None, ["again"]]


@pytest.mark.parametrize("per_page", [0, 1])
def test_ever_new_tokens_stop_at_the_page_cap(fleet: Path, hub: HostileHub, per_page: int) -> None:
    def pages(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        number = page_number(request)
        items = [score(f"c{number}")] if per_page else []
        return json_answer(list_of(items, f"page-{number + 1}"))

    hub.answer = on_scores(pages)
    code, _, err = explain(fleet)
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: the addonplacementscores list takes more than 20 pages "
        "(hub.maxPages in dsf.yaml)\n"
    )
    assert len([r for r in hub.requests if r.path == SCORES]) == 20


def test_a_list_past_the_item_cap_is_an_error(fleet: Path, hub: HostileHub) -> None:
    def pages(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        number = page_number(request)
        # more than the page size asked for: the cap counts what came, not what was asked
        batch = [score(f"c{number}-{i}") for i in range(30)]
        return json_answer(list_of(batch, f"page-{number + 1}"))

    hub.answer = on_scores(pages)
    code, _, err = explain(fleet)
    assert code == 2
    assert "the addonplacementscores list holds more than 50 objects (hub.maxItems" in err
    assert [r.query["limit"] for r in hub.requests if r.path == SCORES] == [["5"], ["5"]]


# ------------------------------------------------------------------------- time


def valid_answer() -> bytes:
    body = b'{"kind": "List", "metadata": {}, "items": []}'
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


@pytest.mark.parametrize(
    "where",
    ["status line", "headers", "body"],
)
def test_a_dripping_hub_ends_at_the_deadline(fleet: Path, hub: HostileHub, where: str) -> None:
    # one byte every 0.4 s: no socket read ever waits long, so a per-read timeout never fires
    answer = valid_answer()
    split = {"status line": 0, "headers": 20, "body": answer.index(b"\r\n\r\n") + 4}[where]

    def slow(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        if split:
            yield 0.0, answer[:split]
        yield from drip(answer[split:], 0.4)

    hub.answer = on_scores(slow)
    code, _, err = explain(fleet)
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: cannot list addonplacementscores: no complete answer "
        "within 3 s (hub.timeoutSeconds in dsf.yaml)\n"
    )


def test_the_deadline_covers_the_whole_read_not_each_request(fleet: Path, hub: HostileHub) -> None:
    # every page answers within a second, but the pages never end before the deadline
    def pages(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        number = page_number(request)
        yield 0.9, next(json_answer(list_of([], f"page-{number + 1}")))[1]

    hub.answer = on_scores(pages)
    code, _, err = explain(fleet)
    assert code == 2
    assert "no complete answer within 3 s (hub.timeoutSeconds in dsf.yaml)" in err
    assert len([r for r in hub.requests if r.path == SCORES]) <= 5


# ------------------------------------------------------------------------ bytes


def test_an_endless_answer_stops_at_the_byte_cap(fleet: Path, hub: HostileHub) -> None:
    hub.answer = on_scores(lambda request: endless_body())
    code, _, err = explain(fleet)  # its peak memory is checked, as every run's
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: cannot list addonplacementscores: the answers hold more "
        "than 1048576 bytes (hub.maxBytes in dsf.yaml)\n"
    )
    # the client hung up: what was sent is the cap plus the kernel's socket buffers
    assert hub.bytes_sent < 64 * 1024 * 1024


def test_an_error_answer_is_bounded_too(fleet: Path, hub: HostileHub) -> None:
    # the client reads an error's whole body to build its exception: the cap still applies
    def flood(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        frames = endless_body()
        next(frames)
        yield 0.0, b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n"
        yield from frames

    hub.answer = on_scores(flood)
    code, _, err = explain(fleet)
    assert code == 2 and "more than 1048576 bytes (hub.maxBytes" in err
    assert hub.bytes_sent < 64 * 1024 * 1024


def test_a_compressed_answer_is_refused(fleet: Path, hub: HostileHub) -> None:
    # 1 MiB of zeros compresses to about 1 KiB: decoded, it would slip past the byte cap
    body = gzip.compress(b"0" * (1 << 20))
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    hub.answer = on_scores(lambda request: iter([(0.0, head.encode() + body)]))
    code, _, err = explain(fleet)
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: cannot list addonplacementscores: answer with "
        "Content-Encoding 'gzip', never asked for\n"
    )


@pytest.mark.parametrize(
    ("status", "reason", "shown"),
    [
        (403, "Forbidden", "HTTP 403 Forbidden"),
        (500, "Oops\x1b[2J" + "x" * 500, "HTTP 500 Oops\\x1b[2J" + "x" * 92),
    ],
    ids=["403", "500-esc-long"],
)
def test_an_http_error_is_one_short_line(
    fleet: Path, hub: HostileHub, status: int, reason: str, shown: str
) -> None:
    head = f"HTTP/1.1 {status} {reason}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    hub.answer = on_scores(lambda request: iter([(0.0, head.encode("latin-1"))]))
    code, _, err = explain(fleet)
    assert code == 2
    assert err == f"dsf-compile: error: hub: cannot list addonplacementscores: {shown}\n"


# ------------------------------------------------------------------ malformed answers


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ([1, 2], ["hub: the answer to the addonplacementscores list is not an object"]),
        (b"{not json", ["hub: the answer to the addonplacementscores list is not JSON"]),
        (
            {"items": {"a": 1}},
            ["hub: the answer to the addonplacementscores list: items is not a list"],
        ),
        (
            {"items": [], "metadata": {"continue": 5}},
            ["hub: the answer to the addonplacementscores list: metadata.continue is not a string"],
        ),
        (
            list_of([5, None]),
            [
                "hub: malformed objects",
                "hub: addonplacementscores items[0]: not an object",
                "hub: addonplacementscores items[1]: not an object",
            ],
        ),
        (
            list_of([{**score("worker01"), "metadata": None}]),
            ["hub: malformed objects", "hub: addonplacementscores items[0]: metadata:"],
        ),
        (
            list_of([{**score("worker01"), "status": [1]}]),
            [
                "hub: malformed objects",
                "hub: addonplacementscores items[0] (worker01/example-performance-score): status:",
            ],
        ),
        (
            list_of([score("worker01"), score("worker01")]),
            [
                "hub: malformed objects",
                "hub: addonplacementscores items[1] (worker01/example-performance-score): listed twice",
            ],
        ),
        (
            list_of([score("evil\x1b]8;;http://x\x07\x1b[2J")]),
            [
                "hub: malformed objects",
                "hub: addonplacementscores items[0] (evil\\x1b]8;;http://x\\x07\\x1b[2J/example-performance-score): metadata.namespace:",
            ],
        ),
    ],
    ids=[
        "array",
        "not-json",
        "items-map",
        "continue-number",
        "items-5",
        "metadata-null",
        "status-list",
        "twice",
        "esc-name",
    ],
)
def test_a_malformed_answer_is_one_clean_line_each(
    fleet: Path, hub: HostileHub, answer: Any, expected: list[str]
) -> None:
    hub.answer = on_scores(lambda request: json_answer(answer))
    code, out, err = explain(fleet)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert len(lines) == len(expected), err
    for line, start in zip(lines, expected, strict=True):
        assert line.startswith(f"dsf-compile: error: {start}"), err


def test_a_hub_with_many_malformed_objects_lists_twenty(fleet: Path, hub: HostileHub) -> None:
    hub.answer = on_scores(lambda request: json_answer(list_of([7] * 45)))
    code, _, err = explain(fleet)
    lines = err.splitlines()
    assert code == 2 and len(lines) == 22
    assert lines[-1] == "dsf-compile: error: hub: ... and 25 more"


# ------------------------------------------------------------------- sync --clusters


def cluster(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": {"region": "eu-west", **labels}},
        "spec": {"hubAcceptsClient": True},
    }


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        (cluster("../../etc"), "hub: managedclusters items[1] (../../etc): metadata.name:"),
        (
            cluster("evil\x1b[2Jcluster"),
            "hub: managedclusters items[1] (evil\\x1b[2Jcluster): metadata.name:",
        ),
        (
            cluster("worker09", **{"bad key!": "x"}),
            "hub: managedclusters items[1] (worker09): metadata.labels.bad key!:",
        ),
        (
            cluster("worker09", region="not a label value"),
            "hub: managedclusters items[1] (worker09): metadata.labels.region:",
        ),
        (
            {
                **cluster("worker09"),
                "status": {"clusterClaims": [{"name": "x", "value": "a\x1bb"}]},
            },
            "hub: managedclusters items[1] (worker09): status.clusterClaims[0].value:",
        ),
        ({**cluster("worker09"), "spec": [1]}, "hub: managedclusters items[1] (worker09): spec:"),
        ({**cluster("worker09"), "metadata": None}, "hub: managedclusters items[1]: metadata:"),
        (5, "hub: managedclusters items[1]: not an object"),
    ],
    ids=[
        "dotdot",
        "esc",
        "label-key",
        "label-value",
        "claim-esc",
        "spec-list",
        "meta-null",
        "five",
    ],
)
def test_sync_clusters_writes_nothing_a_hub_sends_that_validate_would_refuse(
    fleet: Path, hub: HostileHub, item: Any, expected: str
) -> None:
    hub.answer = on_scores(lambda request: json_answer(list_of([cluster("worker01"), item])))
    before = sorted(p.relative_to(fleet) for p in fleet.rglob("*"))
    code, out, err = sync_clusters(fleet)
    assert code == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "dsf-compile: error: hub: malformed ManagedClusters"
    assert len(lines) == 2 and lines[1].startswith(f"dsf-compile: error: {expected}"), err
    assert sorted(p.relative_to(fleet) for p in fleet.rglob("*")) == before
    assert not (fleet.parent / "etc").exists()


def test_sync_clusters_writes_what_validate_accepts(fleet: Path, hub: HostileHub) -> None:
    # the hub holds the fleet's own clusters: the file written replaces the hand-written one
    inventory = fleet / "clusters" / "inventory.yaml"
    clusters = [c for c in yaml.safe_load_all(inventory.read_text(encoding="utf-8")) if c]
    inventory.unlink()
    hub.answer = on_scores(lambda request: json_answer(list_of(clusters)))
    code, _, err = sync_clusters(fleet)
    assert code == 0, err
    assert err == (
        "dsf-compile: 3 cluster(s) on the hub (joined: edge01, worker01, worker02); "
        "clusters/discovered.yaml updated\n"
    )
    code, _, err = dsf(fleet, "validate")
    assert code == 0, err


@pytest.mark.parametrize("case", ["repeated token", "drip"])
def test_sync_clusters_reads_are_bounded_too(fleet: Path, hub: HostileHub, case: str) -> None:
    if case == "drip":
        hub.answer = on_scores(lambda request: drip(valid_answer(), 0.4))
        message = "no complete answer within 3 s"
    else:
        hub.answer = on_scores(lambda request: json_answer(list_of([], "same")))
        message = "the managedclusters list repeats a continue token"
    code, _, err = sync_clusters(fleet)
    assert code == 2 and message in err and len(err.splitlines()) == 1
    assert not (fleet / "clusters" / "discovered.yaml").exists()


# ------------------------------------------------------------------------- dsf-mcp


async def mcp_calls(root: Path, calls: list[str]) -> list[Any]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    kubeconfig = root.parent / "hub.kubeconfig"
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "dsf_compile.commands.mcp_server",
            "--root",
            str(root),
            "--hub-kubeconfig",
            str(kubeconfig),
        ],
        env={**env, "PYTHONPATH": str(REPO_ROOT)},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return [await session.call_tool(name, {}) for name in calls]


@pytest.mark.timeout(HANG_GUARD)
def test_dsf_mcp_answers_a_hostile_hub_with_one_clean_error_and_keeps_serving(
    fleet: Path, hub: HostileHub
) -> None:
    pytest.importorskip("mcp")
    import asyncio

    hub.answer = on_scores(lambda request: json_answer(list_of([], "again")))
    repeated, again, scorers = asyncio.run(
        mcp_calls(fleet, ["get_scores", "get_scores", "list_scorers"])
    )
    assert repeated.is_error
    text = "\n".join(part.text for part in repeated.content)
    assert "hub: the addonplacementscores list repeats a continue token" in text
    assert "Traceback" not in text
    assert again.is_error  # the server is not stuck in the first read: a second one errs too
    assert not scorers.is_error


@pytest.mark.parametrize("where", ["clusters", "clusters/discovered.yaml"])
def test_sync_clusters_writes_through_no_link(
    fleet: Path, hub: HostileHub, tmp_path: Path, where: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    if where == "clusters":
        shutil.rmtree(fleet / "clusters")
        (fleet / "clusters").symlink_to(outside)
    else:
        (fleet / "clusters" / "discovered.yaml").symlink_to(outside / "discovered.yaml")
    hub.answer = on_scores(lambda request: json_answer(list_of([cluster("worker01")])))
    code, _, err = sync_clusters(fleet)
    assert code == 1
    assert err.startswith(f"{where}:0:0: error: must be ")
    assert list(outside.iterdir()) == []
    assert hub.requests == []  # refused before the hub is read


def test_a_hub_that_never_accepts_the_connection_ends_at_the_deadline(fleet: Path) -> None:
    # a listening socket whose queue is full: the kernel drops further SYNs, so connecting
    # neither succeeds nor fails, as with a firewall that drops packets
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    queued = []
    try:
        for _ in range(4):
            client = socket.socket()
            client.setblocking(False)
            client.connect_ex(("127.0.0.1", port))
            queued.append(client)
        config = json.loads((fleet.parent / "hub.kubeconfig").read_text(encoding="utf-8"))
        config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{port}"
        (fleet.parent / "hub.kubeconfig").write_text(json.dumps(config), encoding="utf-8")
        code, _, err = explain(fleet)
    finally:
        for client in queued:
            client.close()
        listener.close()
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: cannot list addonplacementscores: no complete answer "
        "within 3 s (hub.timeoutSeconds in dsf.yaml)\n"
    )


def test_a_tls_handshake_that_drips_ends_at_the_deadline(fleet: Path, hub: HostileHub) -> None:
    # a handshake record announcing 16 KiB, then one byte every 0.4 s: TLS waits for the
    # whole record, and no single socket read waits long enough for a read timeout
    hub.greeting = iter([(0.0, b"\x16\x03\x03\x40\x00"), *drip(b"\x02" * 16384, 0.4)])
    kubeconfig = fleet.parent / "hub.kubeconfig"
    config = json.loads(kubeconfig.read_text(encoding="utf-8"))
    config["clusters"][0]["cluster"] = {
        "server": hub.url.replace("http://", "https://"),
        "insecure-skip-tls-verify": True,
    }
    kubeconfig.write_text(json.dumps(config), encoding="utf-8")
    code, _, err = explain(fleet)
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: cannot list addonplacementscores: no complete answer "
        "within 3 s (hub.timeoutSeconds in dsf.yaml)\n"
    )


# -------------------------------------------------------------------- explain --verify

PLACEMENTS = "/apis/cluster.open-cluster-management.io/v1beta1/placements"


def verify(root: Path) -> tuple[int, str, str]:
    kubeconfig = root.parent / "hub.kubeconfig"
    return dsf(root, "explain", "--verify", "--hub-kubeconfig", str(kubeconfig), "--at", AT)


def test_verify_reads_its_six_lists_within_the_same_bounds(fleet: Path, hub: HostileHub) -> None:
    def answer(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        if request.path == PLACEMENTS:
            return json_answer(list_of([], "again"))
        return json_answer(list_of([]))

    hub.answer = answer
    code, _, err = verify(fleet)
    assert code == 2
    assert err == (
        "dsf-compile: error: hub: the placements list repeats a continue token: "
        "it would never end\n"
    )


def test_verify_names_a_placement_that_is_not_an_object_and_cannot_pass(
    fleet: Path, hub: HostileHub
) -> None:
    # verify reports each Placement it cannot read and goes on (a read-only report), but a
    # run that could not read a Placement has not verified the hub: exit 2
    def answer(request: HubRequest) -> Iterator[tuple[float, bytes]]:
        return json_answer(list_of([5] if request.path == PLACEMENTS else []))

    hub.answer = answer
    code, _, err = verify(fleet)
    assert code == 2, err
    assert err.splitlines() == [
        "dsf-compile: error: the hub's Placement (none)/(none) cannot be read, not compared: "
        "not an object",
        "dsf-compile: no Placement could be compared with the hub's decisions; "
        "1 unreadable, not compared",
    ]
