"""The transport behind ``--resolve``: like curl's ``--connect-to``, it connects to another
address while the URL, the ``Host`` header and the TLS name stay the configured ones
(the values are parsed by :mod:`dsf_transport.connect_to`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import httpx

from dsf_transport.connect_to import DEFAULT_PORTS, Address


class ConnectToTransport(httpx.AsyncBaseTransport):
    """Sends requests for mapped ``host:port`` to another address, like curl ``--connect-to``.

    The request URL is rewritten to the address (that is where httpcore connects), while
    its ``Host`` header stays, and for ``https`` the ``sni_hostname`` extension makes TLS
    send and verify the original name. Each mapped ``https`` origin gets a pool of its
    own, so a TLS connection verified for one name is never reused for another name
    mapped to the same address.
    """

    def __init__(
        self,
        inner: httpx.AsyncBaseTransport,
        connect_to: Mapping[Address, Address],
        *,
        owns_inner: bool,
        make_transport: Callable[[], httpx.AsyncBaseTransport] | None,
    ) -> None:
        self._inner = inner
        self._connect_to = {
            (host.lower(), port): target for (host, port), target in connect_to.items()
        }
        self._owns_inner = owns_inner
        self._make_transport = make_transport
        self._tls_pools: dict[tuple[str, int], httpx.AsyncBaseTransport] = {}

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        port = url.port or DEFAULT_PORTS.get(url.scheme, 0)
        target = self._connect_to.get((url.host.lower(), port))
        if target is None:
            return await self._inner.handle_async_request(request)
        address, address_port = target
        extensions = dict(request.extensions)
        inner = self._inner
        if url.scheme == "https":
            extensions["sni_hostname"] = url.host
            if self._make_transport is not None:
                key = (url.host.lower(), port)
                if key not in self._tls_pools:
                    self._tls_pools[key] = self._make_transport()
                inner = self._tls_pools[key]
        # With a stream given, httpx.Request keeps the headers as they are: Host stays.
        rewritten = httpx.Request(
            request.method,
            url.copy_with(host=address, port=address_port),
            headers=request.headers,
            stream=request.stream,
            extensions=extensions,
        )
        return await inner.handle_async_request(rewritten)

    async def aclose(self) -> None:
        pools = list(self._tls_pools.values())
        self._tls_pools.clear()
        for pool in pools:
            await pool.aclose()
        if self._owns_inner:
            await self._inner.aclose()
