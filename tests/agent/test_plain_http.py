"""The lean plain-HTTP transport: framing, keep-alive, timeouts, and what it leaves to httpx."""

from __future__ import annotations

import asyncio
import gzip
import sys
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
import pytest_asyncio

from agent.errors import FetchError
from agent.transport import make_client, plain_transport, read_answer, request_failures, stream
from dsf_contract.failures import RequestFailure
from dsf_transport.http1 import Pool
from dsf_transport.plainhttp import PlainHTTPTransport

pytestmark = pytest.mark.asyncio

Answer = Callable[[bytes], bytes | None]


class RawServer:
    """A loopback server answering each request head with raw bytes (None: hang up)."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.close_after_reply = False
        self.handlers: set[asyncio.Task[None]] = set()

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        head += await reader.readexactly(int(line.split(b":")[1]))
                self.requests.append(head)
                reply = self.answer(head)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
                if self.close_after_reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


Serve = Callable[[Answer], Awaitable[tuple[RawServer, str]]]


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Serve]:
    servers: list[RawServer] = []

    async def start(answer: Answer) -> tuple[RawServer, str]:
        server = RawServer(answer)
        servers.append(server)
        return server, await server.start()

    yield start
    for server in servers:
        assert server.server is not None
        server.server.close()
        for handler in server.handlers:
            handler.cancel()
        await asyncio.gather(*server.handlers, return_exceptions=True)
        await server.server.wait_closed()
    await asyncio.sleep(0.01)  # closed transports release their sockets on the next turns


def _ok(body: bytes, *extra: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body),
        b"".join(line + b"\r\n" for line in extra),
        body,
    )


def _client(timeout: float = 5.0) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=PlainHTTPTransport(httpx.AsyncHTTPTransport()), timeout=timeout
    )


async def test_keeps_the_connection_alive_across_requests(serve: Serve) -> None:
    server, base = await serve(lambda head: _ok(b'{"a": 1}'))
    async with _client() as client:
        for _ in range(5):
            answer = await client.post(f"{base}/scoring?x=1", content=b'{"data": []}')
            assert answer.status_code == 200
            assert answer.json() == {"a": 1}
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /scoring?x=1 HTTP/1.1\r\n")
    assert b"\r\nContent-Length: 12\r\n" in first
    assert first.endswith(b'\r\n\r\n{"data": []}')


async def test_reads_a_chunked_body(serve: Serve) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    server, base = await serve(lambda head: chunked)
    async with _client() as client:
        assert (await client.get(base)).content == b"abcdefg"
        assert (await client.get(base)).content == b"abcdefg"
    assert server.connections == 1


async def test_a_body_ending_with_the_connection_is_read_and_not_reused(serve: Serve) -> None:
    server, base = await serve(lambda head: b"HTTP/1.0 200 OK\r\n\r\nuntil close")
    server.close_after_reply = True
    async with _client() as client:
        assert (await client.get(base)).content == b"until close"
        assert (await client.get(base)).content == b"until close"
    assert server.connections == 2


async def test_a_connection_closed_while_idle_is_replaced(serve: Serve) -> None:
    # The server answers, then hangs up: the next request must not fail on the dead socket.
    replies = iter([_ok(b"one", b"Connection: keep-alive"), None, _ok(b"two"), None])
    server, base = await serve(lambda head: next(replies))
    async with _client() as client:
        assert (await client.get(base)).content == b"one"
        assert (await client.get(base)).content == b"two"
    assert server.connections == 2


async def test_a_slow_answer_is_a_read_timeout(serve: Serve) -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read()  # until the client gives up
        finally:
            writer.close()

    slow = await asyncio.start_server(silent, "127.0.0.1", 0)
    base = f"http://127.0.0.1:{slow.sockets[0].getsockname()[1]}"
    try:
        async with _client(timeout=0.2) as client:
            with pytest.raises(httpx.ReadTimeout):
                await client.get(base)
    finally:
        slow.close()
        await asyncio.sleep(0.01)


async def test_a_refused_connection_is_a_connect_error() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    async with _client() as client:
        with pytest.raises(httpx.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/")


@pytest.mark.parametrize(
    "reply",
    [
        b"SPDY/3 200 OK\r\n\r\n",
        b"HTTP/1.1 2xx OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * 70_000 + b"\r\n\r\n",
        # RFC 9112 6.3 (3): both framings in one response "ought to be handled as an
        # error" (request smuggling, response splitting); neither is trusted
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 2\r\n\r\nab",
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"2\r\nab\r\n0\r\n\r\n",
    ],
    ids=[
        "version",
        "status",
        "header",
        "lengths",
        "head-size",
        "te-and-length",
        "chunked-and-length",
    ],
)
async def test_a_malformed_head_is_a_protocol_error(serve: Serve, reply: bytes) -> None:
    _, base = await serve(lambda head: reply)
    async with _client() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(base)


@pytest.mark.parametrize(
    "reply",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nab\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n+2\r\nab\r\n0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n0\r\n\r\n",
    ],
    ids=["hex", "sign", "terminator"],
)
async def test_a_malformed_chunked_body_is_a_protocol_error(serve: Serve, reply: bytes) -> None:
    _, base = await serve(lambda head: reply)
    async with _client() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(base)


async def test_trailers_are_read_past_within_a_head_s_size(serve: Serve) -> None:
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nab\r\n0\r\n"
    few = chunked + b"X-Sum: 1\r\nX-Other: 2\r\n\r\n"
    many = chunked + (b"X-Trailer: " + b"a" * 1000 + b"\r\n") * 100 + b"\r\n"
    replies = iter([few, many])
    _, base = await serve(lambda head: next(replies))
    async with _client() as client:
        assert (await client.get(base)).content == b"ab"
        with pytest.raises(httpx.RemoteProtocolError, match="trailers"):
            await client.get(base)


async def test_a_body_cut_short_is_a_protocol_error_and_the_connection_is_dropped(
    serve: Serve,
) -> None:
    replies = iter([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", _ok(b"ok")])
    server, base = await serve(lambda head: next(replies))
    server.close_after_reply = True
    async with _client() as client:
        with pytest.raises(httpx.RemoteProtocolError):
            await client.get(base)
        assert (await client.get(base)).content == b"ok"
    assert server.connections == 2


async def test_an_abandoned_body_closes_its_connection(serve: Serve) -> None:
    server, base = await serve(lambda head: _ok(b"x" * 200_000))
    async with _client() as client:
        async with client.stream("GET", base) as response:
            async for _ in response.aiter_bytes():
                break  # e.g. the response size cap
        assert (await client.get(base)).content == b"x" * 200_000
    assert server.connections == 2


async def test_other_schemes_go_to_the_fallback() -> None:
    seen: list[str] = []

    def fallback(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return httpx.Response(200, content=b"via fallback")

    transport = PlainHTTPTransport(httpx.MockTransport(fallback))
    async with httpx.AsyncClient(transport=transport) as client:
        answer = await client.get("https://prometheus.example/api/v1/query_range")
    assert answer.content == b"via fallback"
    assert seen == ["https://prometheus.example/api/v1/query_range"]


async def test_make_client_uses_the_lean_transport_only_without_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    async with make_client(5.0) as client:
        assert isinstance(plain_transport(client), Pool)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    async with make_client(5.0) as client:
        assert plain_transport(client) is None  # httpx's transports and proxy mounts


async def test_cookies_are_not_kept(serve: Serve) -> None:
    server, base = await serve(lambda head: _ok(b"ok", b"Set-Cookie: session=abc; Path=/"))
    async with make_client(5.0) as client:
        for _ in range(2):
            async with stream(client, "GET", base, headers={}) as response:
                await read_answer(response, "Prometheus", FetchError, 1 << 20)
    assert all(b"session=abc" not in request for request in server.requests)


async def test_a_connection_with_bytes_past_its_response_is_not_reused(serve: Serve) -> None:
    # Bytes the server sent past its answer would be read as the next request's answer:
    # that connection is closed, the next request gets a fresh one and its own answer.
    answers = iter([_ok(b"one") + _ok(b"stray"), _ok(b"two")])
    server, base = await serve(lambda head: next(answers))
    async with _client() as client:
        assert (await client.get(base)).content == b"one"
        await asyncio.sleep(0.05)  # the stray bytes may come in a later packet
        assert (await client.get(base)).content == b"two"
    assert server.connections == 2


async def test_the_agent_s_plain_requests_load_no_httpx() -> None:
    # The agent's plain requests, and their failures, go without httpx (a fresh
    # interpreter: the tests themselves import it).
    probe = (
        "import asyncio, sys\n"
        "from agent.errors import FetchError\n"
        "from agent.transport import make_client, request_failures, stream\n"
        "async def main():\n"
        "    async with make_client(1.0) as client:\n"
        "        try:\n"
        "            with request_failures('Prometheus', FetchError):\n"
        "                async with stream(client, 'GET', 'http://127.0.0.1:9/', headers={}):\n"
        "                    pass\n"
        "        except FetchError as err:\n"
        "            print(err.reason)\n"
        "asyncio.run(main())\n"
        "print(sorted(m for m in sys.modules if m.partition('.')[0] in ('httpx', 'httpcore')))\n"
    )
    done = await asyncio.create_subprocess_exec(
        sys.executable, "-c", probe, stdout=asyncio.subprocess.PIPE
    )
    out, _ = await done.communicate()
    assert out.decode().split("\n") == ["unreachable", "['httpx._main']", ""]


@pytest.mark.parametrize(
    ("coding", "packed"),
    [
        ("gzip", gzip.compress(b'{"a": 1}')),
        ("deflate", zlib.compress(b'{"a": 1}')),
        ("deflate", zlib.compress(b'{"a": 1}')[2:-4]),  # raw deflate, as some servers send
        ("identity", b'{"a": 1}'),
        ("gzip, gzip", gzip.compress(gzip.compress(b'{"a": 1}'))),
    ],
    ids=["gzip", "deflate", "raw-deflate", "identity", "twice"],
)
async def test_the_agent_undoes_a_content_encoding_as_httpx_does(
    serve: Serve, coding: str, packed: bytes
) -> None:
    _, base = await serve(lambda head: _ok(packed, b"Content-Encoding: " + coding.encode()))
    async with make_client(5.0) as client:
        assert plain_transport(client) is not None
        async with stream(client, "GET", base, headers={}) as response:
            body = await read_answer(response, "Prometheus", FetchError, 1 << 20)
    async with httpx.AsyncClient() as bare:
        assert body == (await bare.get(base)).content == b'{"a": 1}'


async def test_the_agent_s_cap_counts_the_decoded_bytes(serve: Serve) -> None:
    bomb = gzip.compress(b"0" * 100_000)
    _, base = await serve(lambda head: _ok(bomb, b"Content-Encoding: gzip"))
    async with make_client(5.0) as client:
        with pytest.raises(FetchError) as caught, request_failures("Prometheus", FetchError):
            async with stream(client, "GET", base, headers={}) as response:
                await read_answer(response, "Prometheus", FetchError, 50_000)
    assert caught.value.reason is RequestFailure.TOO_LARGE


async def test_the_agent_s_failures_read_as_httpx_s(serve: Serve) -> None:
    # a failure's message names the exception's class: the plain pool's are named as httpx's
    _, base = await serve(lambda head: b"HTTP/1.1 2xx OK\r\n\r\n")
    async with make_client(5.0) as client:
        with pytest.raises(FetchError) as caught, request_failures("Prometheus", FetchError):
            async with stream(client, "GET", base, headers={}):
                pass
    assert str(caught.value) == (
        "Prometheus connection failed (RemoteProtocolError: malformed response status line)"
    )
    assert caught.value.reason is RequestFailure.TRANSPORT_ERROR
