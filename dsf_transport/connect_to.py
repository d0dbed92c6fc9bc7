"""``--resolve HOST:PORT:ADDR[:PORT]``: connecting to another address while keeping the URL.

``dsf-compile sync --resolve`` (and ``dsf.yaml``'s ``sync.resolve``) and ``dsf-agent
--resolve`` parse their values here: a workstation reaches in-cluster service names
through a tunnel or loopback, and tests serve them on 127.0.0.1, while every request
still carries the names the configuration holds. The transport that does it is
:mod:`dsf_transport.connect_transport`; this module imports no HTTP client, so that
``validate`` can check ``sync.resolve`` without loading one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DEFAULT_PORTS = {"http": 80, "https": 443}
_HOSTPORT = r"(?P<{0}>\[[0-9A-Fa-f:.]+\]|[^:\[\]\s]+)"
_PORT = r"(?P<{0}>[0-9]{{1,5}})"
_RESOLVE_KEY_RE = re.compile("^" + _HOSTPORT.format("host") + ":" + _PORT.format("port") + "$")
_RESOLVE_VALUE_RE = re.compile(
    "^" + _HOSTPORT.format("addr") + "(?::" + _PORT.format("addr_port") + ")?$"
)
Address = tuple[str, int]


def parse_resolve_entry(key: str, value: str) -> tuple[Address, Address]:
    """One ``sync.resolve`` entry, ``'host:port': 'addr[:port]'`` → ``((host, port), (addr, port))``.

    Host names are lower-cased, IPv6 addresses lose their brackets, an address without a
    port keeps the key's. Raises ``ValueError`` saying what is wrong.
    """
    key_match = _RESOLVE_KEY_RE.fullmatch(key)
    if key_match is None:
        raise ValueError("the key must be HOST:PORT, for example scorer.ns.svc:8000")
    value_match = _RESOLVE_VALUE_RE.fullmatch(value)
    if value_match is None:
        raise ValueError("the value must be ADDR[:PORT], for example 127.0.0.1:18000")
    port = _resolve_port(key_match["port"])
    return (
        (_resolve_host(key_match["host"]), port),
        (
            _resolve_host(value_match["addr"]),
            _resolve_port(value_match["addr_port"]) if value_match["addr_port"] else port,
        ),
    )


def _resolve_host(text: str) -> str:
    host = text[1:-1] if text.startswith("[") else text
    if not host:
        raise ValueError("empty host")
    return host.lower()


def _resolve_port(text: str) -> int:
    port = int(text)
    if not 1 <= port <= 65535:
        raise ValueError(f"port {port} is not between 1 and 65535")
    return port


class ResolveError(ValueError):
    """A ``--resolve`` value that cannot be used; the message says why and what is expected."""


# --resolve HOST:PORT:ADDR[:PORT] is a sync.resolve key (HOST:PORT) and value (ADDR[:PORT]).
_CONNECT_TO_RE = re.compile(r"(?P<key>(?:\[[^\]]*\]|[^:\[\]]+):[^:]+):(?P<value>.+)", re.DOTALL)


def parse_connect_to(values: Iterable[str]) -> dict[Address, Address]:
    """Parse ``--resolve HOST:PORT:ADDR[:PORT]`` values into a ``connect_to`` mapping.

    ``ADDR`` without a port keeps ``PORT``. IPv6 addresses go in brackets
    (``svc:8000:[::1]:18000``). Host names are compared case-insensitively.
    Raises :class:`ResolveError` on a malformed value or a ``HOST:PORT`` given twice with
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
            raise ResolveError(
                f"--resolve {value!r}: {err}; expected HOST:PORT:ADDR[:PORT], for example "
                "scorer.ns.svc:8000:127.0.0.1:18000 (IPv6 in brackets)"
            ) from err
        if result.get(key, target) != target:
            raise ResolveError(
                f"--resolve {value!r}: {key[0]}:{key[1]} is mapped twice to different addresses"
            )
        result[key] = target
    return result
