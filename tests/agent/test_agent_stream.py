"""``agent.transport.stream``: a request is the request ``client.stream`` would have sent
(URL and query, headers, timeouts), byte for byte when it goes to the plain-HTTP transport
as bytes, and a proxy in the environment still carries it; no header can break out of
its line."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agent.errors import FetchError
from agent.request_heads import parse_endpoint, request_target, request_url
from agent.transport import (
    make_client,
    plain_transport,
    read_answer,
    request_failures,
    stream,
)
from dsf_contract.failures import RequestFailure

ENDPOINTS = [
    "http://prometheus.monitoring.svc:9090/api/v1/query_range",
    "https://prom.example/api/v1/query_range",
    "http://prom.example/select/0/prometheus/api/v1/query_range?tenant=a%20b",
    "http://prom.example/p#frag",
    "http://[::1]:9090/api/v1/query_range",
]
PARAMS = {
    "query": 'sum by (node) (rate(container_cpu_usage_seconds_total{namespace="a b",pod=~"x.+"}[5m]))',
    "start": "1718600000",
    "end": "1718600600",
    "step": "60",
}


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_the_url_is_the_one_httpx_builds(endpoint: str) -> None:
    client = httpx.AsyncClient()
    built = client.build_request("GET", endpoint, params=PARAMS).url
    if httpx.URL(endpoint).query:
        # httpx 0.28 drops the endpoint's own query when params are given; the agent keeps
        # it (a tenant or extra_label a user wrote must reach Prometheus) and adds them
        merged = request_url(parse_endpoint(endpoint), PARAMS)
        assert merged == httpx.URL(endpoint).copy_merge_params(PARAMS)
        assert merged.params["tenant"] == "a b"
        assert merged.params["query"] == built.params["query"]
    else:
        assert request_url(parse_endpoint(endpoint), PARAMS) == built
    assert request_url(parse_endpoint(endpoint), None) == client.build_request("GET", endpoint).url
    plain = parse_endpoint(endpoint)
    if plain.origin is not None:  # what the plain pool sends is what httpx would
        assert (plain.netloc, request_target(plain, PARAMS)) == (built.netloc, built.raw_path)
        assert plain.origin == (built.host, built.port or 80)


@pytest.mark.parametrize(
    ("endpoint", "plain"),
    [
        ("http://prom.example:80/api/v1/query_range", True),
        ("http://10.0.0.7:9090/x/y_z.~-", True),
        ("http://[::1]/api", True),
        ("http://Prom.Example/api", False),
        ("http://prom.example/a%20b", False),
        ("http://prom.example/a b", False),
        ("http://user:secret@prom.example/api", False),
        ("http://prom.example:0808/api", False),
        ("http://prom.example:/api", False),
        ("http://[0:0::1]/api", False),
        ("http://prom.example", True),
        ("http://prom.example/a/../b", False),
        ("http://prom.example/./b", False),
        ("http://999.1.1.1/api", False),
        ("http://01.2.3.4/api", False),
        ("http://xn--bcher-kva.example/api", False),
        ("http://prom.example/x:y@z,w", True),
    ],
)
def test_only_urls_httpx_sends_as_written_go_to_the_plain_pool(endpoint: str, plain: bool) -> None:
    parsed = parse_endpoint(endpoint)
    assert (parsed.origin is not None) is plain
    if plain:
        built = httpx.AsyncClient().build_request("GET", endpoint, params=PARAMS).url
        assert (parsed.netloc, request_target(parsed, PARAMS)) == (built.netloc, built.raw_path)


@pytest.mark.asyncio
async def test_a_request_carries_the_clients_headers_and_timeouts() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b'{"ok": true}')

    async with make_client(7.0, transport=httpx.MockTransport(answer)) as client:
        headers = {"Authorization": "Bearer t", "content-type": "application/json"}
        async with stream(client, "POST", ENDPOINTS[0], headers=headers, content=b"{}") as response:
            assert isinstance(response, httpx.Response)  # a given transport: through httpx
            assert await response.aread() == b'{"ok": true}'
        (request,) = seen
        expected = client.httpx_client().build_request(
            "POST", ENDPOINTS[0], headers=headers, content=b"{}"
        )
    assert request.headers.multi_items() == expected.headers.multi_items()
    assert request.extensions["timeout"] == expected.extensions["timeout"]
    assert request.content == b"{}"
    assert response.is_closed


@pytest.mark.asyncio
async def test_a_proxy_in_the_environment_still_carries_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # with HTTP_PROXY set, the agent's client leaves every request to httpx, which sends
    # it to the proxy (absolute-form request line), here a loopback one
    lines: list[bytes] = []

    async def proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines.append(head.split(b"\r\n", 1)[0])
        writer.write(b"HTTP/1.1 204 No Content\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    try:
        async with make_client(5.0) as client:
            assert plain_transport(client) is None
            async with stream(client, "GET", ENDPOINTS[0], headers={}, params={"q": "1"}) as answer:
                assert answer.status_code == 204
    finally:
        server.close()
        await server.wait_closed()
    assert lines == [f"GET {ENDPOINTS[0]}?q=1 HTTP/1.1".encode()]


async def _heads_received(send: object) -> list[bytes]:
    """The request heads a loopback server receives while ``send(base_url)`` runs."""
    heads: list[bytes] = []
    handlers: list[asyncio.Task[None]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError:
                break
            heads.append(head)
            length = next(
                (
                    int(line[15:])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                ),
                0,
            )
            await reader.readexactly(length)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        await send(f"http://127.0.0.1:{port}/api/v1/query_range")  # type: ignore[operator]
    finally:
        server.close()
        await server.wait_closed()
        await asyncio.gather(*handlers)  # each ends when its client closes the connection
    return heads


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("method", "content", "params"),
    [("GET", None, PARAMS), ("POST", b'{"data": []}', None), ("POST", None, None)],
    ids=["get-with-query", "post-with-body", "post-without-body"],
)
async def test_the_plain_transport_gets_the_bytes_httpx_would_write(
    method: str, content: bytes | None, params: dict[str, str] | None
) -> None:
    headers = {"Authorization": "Bearer t", "Content-Type": "application/json"}

    async def both(endpoint: str) -> None:
        async with make_client(5.0) as client:
            async with stream(
                client, method, endpoint, headers=headers, params=params, content=content
            ) as response:
                assert await read_answer(response, "API", FetchError, 100) == b"ok"
            via_httpx = client.httpx_client()
            request = via_httpx.build_request(
                method, endpoint, headers=headers, params=params, content=content
            )
            answer = await via_httpx.send(request)
            assert answer.content == b"ok"

    lean, through_httpx = await _heads_received(both)
    assert lean == through_httpx


@pytest.mark.asyncio
@pytest.mark.parametrize("token", ["t\r\nX-Injected: 1", "t\nX-Injected: 1", "t\x00"])
async def test_a_token_cannot_add_a_header(token: str) -> None:
    async def send(endpoint: str) -> None:
        async with make_client(5.0) as client:
            with pytest.raises(FetchError) as caught, request_failures("Prometheus", FetchError):
                async with stream(
                    client, "GET", endpoint, headers={"Authorization": f"Bearer {token}"}
                ):
                    pass
            assert caught.value.reason is RequestFailure.TRANSPORT_ERROR

    assert await _heads_received(send) == []
