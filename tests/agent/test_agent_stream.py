"""``agent.transport.stream``: a request sent straight to the transport httpx picks for its
URL is the request ``client.stream`` would have sent (URL and query, headers, timeouts),
and a proxy mounted on the client still carries it."""

from __future__ import annotations

import httpx
import pytest

from agent.transport import _request_url, make_client, stream

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
        assert _request_url(endpoint, PARAMS) == httpx.URL(endpoint).copy_merge_params(PARAMS)
        assert _request_url(endpoint, PARAMS).params["tenant"] == "a b"
        assert _request_url(endpoint, PARAMS).params["query"] == built.params["query"]
    else:
        assert _request_url(endpoint, PARAMS) == built
    assert _request_url(endpoint, None) == client.build_request("GET", endpoint).url


@pytest.mark.asyncio
async def test_a_request_carries_the_clients_headers_and_timeouts() -> None:
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, content=b'{"ok": true}')

    async with make_client(7.0, transport=httpx.MockTransport(answer)) as client:
        headers = {"Authorization": "Bearer t", "content-type": "application/json"}
        async with stream(client, "POST", ENDPOINTS[0], headers=headers, content=b"{}") as response:
            assert await response.aread() == b'{"ok": true}'
        (request,) = seen
        expected = client.build_request("POST", ENDPOINTS[0], headers=headers, content=b"{}")
    assert request.headers.multi_items() == expected.headers.multi_items()
    assert request.extensions["timeout"] == expected.extensions["timeout"]
    assert request.content == b"{}"
    assert response.is_closed


@pytest.mark.asyncio
async def test_a_mounted_proxy_transport_still_carries_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # with HTTP_PROXY set, the agent's client leaves every request to httpx's mounts
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.example:3128")
    async with make_client(5.0) as client:
        url = httpx.URL(ENDPOINTS[0])
        proxied = client._transport_for_url(url)
        seen: list[httpx.Request] = []

        async def handle(request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(204)

        monkeypatch.setattr(proxied, "handle_async_request", handle)
        async with stream(client, "GET", ENDPOINTS[0], headers={}, params={"q": "1"}) as response:
            assert response.status_code == 204
    assert [str(r.url) for r in seen] == [ENDPOINTS[0] + "?q=1"]
