"""Connecting to another address while keeping the URL, like curl's ``--connect-to``.

``dsf-compile sync --resolve`` and ``dsf-agent --resolve`` use it: a workstation reaches
in-cluster service names through a tunnel or loopback, and tests serve them on
127.0.0.1, while every request still carries the names the configuration holds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

import httpx

from dsf_compile.errors import UsageError
from dsf_compile.inputs.settings import Address, parse_resolve_entry

DEFAULT_PORTS = {"http": 80, "https": 443}
# --resolve HOST:PORT:ADDR[:PORT] is a sync.resolve key (HOST:PORT) and value (ADDR[:PORT]).
_CONNECT_TO_RE = re.compile(r"(?P<key>(?:\[[^\]]*\]|[^:\[\]]+):[^:]+):(?P<value>.+)", re.DOTALL)


def parse_connect_to(values: Iterable[str]) -> dict[Address, Address]:
    """Parse ``--resolve HOST:PORT:ADDR[:PORT]`` values into a ``connect_to`` mapping.

    ``ADDR`` without a port keeps ``PORT``. IPv6 addresses go in brackets
    (``svc:8000:[::1]:18000``). Host names are compared case-insensitively.
    Raises :class:`UsageError` on a malformed value or a ``HOST:PORT`` given twice with
    different targets.
    """
    result: dict[Address, Address] = {}
    for value in values:
        match = _CONNECT_TO_RE.fullmatch(value)
        try:
            if match is None:
                raise ValueError("not HOST:PORT:ADDR[:PORT]")
            key, target = parse_resolve_entry(match["key"], match["value"])
        except ValueError as err:
            raise UsageError(
                f"--resolve {value!r}: {err}; expected HOST:PORT:ADDR[:PORT], for example "
                "scorer.ns.svc:8000:127.0.0.1:18000 (IPv6 in brackets)"
            ) from err
        if result.get(key, target) != target:
            raise UsageError(
                f"--resolve {value!r}: {key[0]}:{key[1]} is mapped twice to different addresses"
            )
        result[key] = target
    return result


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
