"""``dsf_transport/http.py``: the one HTTP module of sync, scorer-check and the agent
(with the failure words of ``dsf_contract/failures.py``).

Against real loopback servers: each program names itself and sends no cookie back (sync
and scorer-check run as a user runs them), the capped reader with and without the agent's
memory budget, and what a failed request is called on each side.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent.errors import Reason
from agent.transport import make_client, stream
from dsf_contract import __version__
from dsf_contract.failures import (
    UNANSWERED,
    UNREACHABLE_WORDS,
    ApiFailure,
    ConnectFailure,
    RequestFailure,
)
from dsf_transport.http import (
    BodyTooLargeError,
    UserAgent,
    causes,
    connect_failure,
    describe_failure,
    new_client,
    read_capped,
)
from dsf_transport.plainhttp import PlainHTTPTransport
from tests.fleet_repo import REPO_ROOT, copy_fleet, run_command
from tests.sync_servers import (
    Handler,
    LoopbackServer,
    free_port,
    hang,
    huge_body,
    reset,
    respond,
)

CONFIG = {
    "name": "sample-scorer",
    "source": {"type": "None"},
    "scoring": {"path": "/scoring", "params": {"name": "sample_my_score", "interval": 30}},
}
COOKIE = {"Set-Cookie": "session=from-the-scorer; Path=/"}


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


# ------------------------------------------------------- who asks, and no cookie


def test_sync_names_itself_and_returns_no_cookie_across_a_redirect(
    server: LoopbackServer, tmp_path: Path
) -> None:
    # The redirect sets a cookie: the hop it leads to must not carry it.
    moved = {"Location": "/moved", **COOKIE}
    server.route("/config", respond(302, b"", content_type="text/plain", headers=moved))
    server.route("/moved", _json(CONFIG))
    repo = copy_fleet(tmp_path / "fleet", with_rendered=False)
    result = run_command(
        repo,
        "sync",
        "sample-scorer",
        f"--resolve=sample-scorer.dynamic-scoring.svc:8000:127.0.0.1:{server.port}",
    )
    assert result.returncode == 0, result.stderr
    paths = [request.path for request in server.requests]
    assert paths == ["/config", "/moved"]
    assert {r.headers["user-agent"] for r in server.requests} == {"dsf-compile-sync/1"}
    assert all("cookie" not in request.headers for request in server.requests)


def test_scorer_check_names_itself_and_returns_no_cookie(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.route("/healthz", respond(200, b"ok", content_type="text/plain", headers=COOKIE))
    server.route("/config", _json(CONFIG))
    server.route("/scoring", _json({"results": []}))
    # scorer-check reads no fleet: the root is only where the command runs.
    run_command(tmp_path, "scorer-check", server.url("/"))
    assert [r.path for r in server.requests][:3] == ["/healthz", "/config", "/scoring"]
    assert {r.headers["user-agent"] for r in server.requests} == {"dsf-scorer-check"}
    assert all("cookie" not in request.headers for request in server.requests)


def test_the_agent_names_itself_and_returns_no_cookie(server: LoopbackServer) -> None:
    url = server.route("/api/v1/query_range", _json({"status": "success"}))

    async def twice() -> None:
        async with make_client(5.0) as client:
            for _ in range(2):
                async with stream(client, "GET", url, headers={}) as response:
                    assert response.status_code == 200

    asyncio.run(twice())
    assert {r.headers["user-agent"] for r in server.requests} == {f"dsf-agent/{__version__}"}
    assert all("cookie" not in request.headers for request in server.requests)


def _json(document: object) -> Handler:
    """Answer ``document``, setting a cookie."""
    return respond(200, json.dumps(document).encode(), headers=COOKIE)


# ------------------------------------------------------------- the capped reader


class _Budget:
    """A memory budget that only records what it is asked to cover."""

    def __init__(self) -> None:
        self.held = 0
        self.asked: list[int] = []

    async def grow_to(self, size: int) -> None:
        self.asked.append(size)
        self.held = max(self.held, size)


def _read(
    url: str,
    limit: int,
    *,
    plain: bool = True,
    memory: _Budget | None = None,
    decoded: bool = True,
) -> bytes | bytearray:
    async def go() -> bytes | bytearray:
        inner = httpx.AsyncHTTPTransport()
        transport = PlainHTTPTransport(inner) if plain else inner
        client = new_client(UserAgent.AGENT, transport=transport, timeout=httpx.Timeout(10.0))
        async with client, client.stream("GET", url) as response:
            return await read_capped(response, limit, memory=memory, decoded=decoded)

    return asyncio.run(go())


@pytest.mark.parametrize("plain", [True, False], ids=["plainhttp", "httpcore"])
@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_within_the_cap_is_read_whole_and_covered_in_the_budget(
    server: LoopbackServer, plain: bool, declared: bool
) -> None:
    size = 300_000
    url = server.route("/big", huge_body(size, declare_length=declared))
    budget = _Budget()
    body = _read(url, size, plain=plain, memory=budget)
    assert body == b" " * size
    assert budget.held >= size
    assert budget.asked == sorted(budget.asked)  # it only grows
    if declared:
        assert budget.asked[0] == size  # covered before the first byte is read


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
def test_a_body_past_the_cap_stops_the_read(server: LoopbackServer, declared: bool) -> None:
    url = server.route("/huge", huge_body(50_000_000, declare_length=declared))
    budget = _Budget()
    with pytest.raises(BodyTooLargeError, match="response larger than 100000 bytes"):
        _read(url, 100_000, memory=budget)
    assert budget.held <= 100_000
    assert server.body_bytes_sent("/huge") < 5_000_000  # the 50 MB were never all sent


def test_decoded_counts_the_bytes_the_caller_will_hold(server: LoopbackServer) -> None:
    plain = b"0" * 200_000
    packed = gzip.compress(plain)
    headers = {"Content-Encoding": "gzip"}
    url = server.route("/gz", respond(200, packed, headers=headers))
    assert _read(url, 100_000, decoded=False) == packed
    with pytest.raises(BodyTooLargeError):
        _read(url, 100_000, decoded=True)
    assert _read(url, len(plain), decoded=True) == plain


def test_an_answer_already_in_memory_is_capped_too() -> None:
    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=b"x" * 2048)

    async def go(limit: int) -> bytes | bytearray:
        client = new_client(
            UserAgent.SYNC, transport=httpx.MockTransport(answer), timeout=httpx.Timeout(5.0)
        )
        async with client, client.stream("GET", "http://scorer.invalid/") as response:
            return await read_capped(response, limit, decoded=False)

    assert asyncio.run(go(2048)) == b"x" * 2048
    with pytest.raises(BodyTooLargeError):
        asyncio.run(go(2047))


# ------------------------------------------------------------ what went wrong


def _failure_of(url: str, read_timeout: float = 10.0) -> BaseException:
    async def go() -> None:
        timeout = httpx.Timeout(10.0, read=read_timeout)
        transport = PlainHTTPTransport(httpx.AsyncHTTPTransport())
        async with new_client(UserAgent.AGENT, transport=transport, timeout=timeout) as client:
            await client.get(url)

    with pytest.raises(httpx.HTTPError) as caught:
        asyncio.run(go())
    return caught.value


def test_a_refused_connection_is_unreachable_on_both_sides() -> None:
    failure = describe_failure(_failure_of(f"http://127.0.0.1:{free_port()}/"))
    assert failure is not None
    assert failure.reason is RequestFailure.UNREACHABLE
    assert failure.words == ConnectFailure.REFUSED
    assert failure.words in UNREACHABLE_WORDS
    assert failure.transient
    assert failure.unreached


def test_a_silent_server_times_out(server: LoopbackServer) -> None:
    url = server.route("/hang", hang())
    failure = describe_failure(_failure_of(url, read_timeout=0.2))
    assert failure is not None
    assert (failure.reason, failure.words, failure.transient) == (
        RequestFailure.TIMEOUT,
        "timed out",
        True,
    )
    assert failure.reason in UNANSWERED
    assert failure.unreached


def test_a_reset_is_a_transport_error(server: LoopbackServer) -> None:
    url = server.route("/reset", reset())
    failure = describe_failure(_failure_of(url))
    assert failure is not None
    assert failure.reason is RequestFailure.TRANSPORT_ERROR
    assert failure.words in ("connection reset", "server closed the connection without a response")
    assert failure.transient
    assert not failure.unreached  # it was reached


def test_what_is_not_a_request_failure_is_left_alone() -> None:
    assert describe_failure(ValueError("a bug")) is None
    too_large = describe_failure(BodyTooLargeError(10))
    assert too_large is not None
    assert (too_large.reason, too_large.words, too_large.transient) == (
        RequestFailure.TOO_LARGE,
        "response larger than 10 bytes",
        False,
    )
    wrong_scheme = describe_failure(httpx.UnsupportedProtocol("ftp"))
    assert wrong_scheme is not None
    assert wrong_scheme.words == "only http and https URLs are allowed"
    assert not wrong_scheme.transient


def test_the_chain_of_causes_is_walked_once_and_bounded() -> None:
    first, second = OSError("a"), OSError("b")
    first.__context__, second.__context__ = second, first  # a loop
    assert list(causes(first)) == [first, second]
    deep = ConnectionError("top")
    link = deep
    for _ in range(1000):
        inner = ConnectionError("inner")
        link.__cause__ = inner
        link = inner
    link.__cause__ = ConnectionRefusedError()
    assert len(list(causes(deep))) == 32
    # Past the bound, only the words of the message are left to go by.
    assert connect_failure(deep) == ConnectFailure.FAILED
    refused = httpx.ConnectError("boom")
    refused.__cause__ = OSError(111, "Connection refused")
    assert connect_failure(refused) == ConnectFailure.REFUSED


def test_the_agent_reasons_are_those_its_readme_documents() -> None:
    readme = (REPO_ROOT / "agent" / "README.md").read_text(encoding="utf-8")
    for reason in [*RequestFailure, *ApiFailure, *Reason]:
        assert f"`{reason}`" in readme, reason


def test_the_hub_reader_names_failures_without_loading_httpx() -> None:
    """It reads through the kubernetes client; a second HTTP client would only cost time."""
    probe = "import sys, dsf_compile.edges.hub; print('httpx' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT, timeout=60
    )
    assert done.stdout.strip() == "False", done.stderr
