"""``dsf-mcp --http HOST:PORT``: where it listens, who may call it, and from which pages.

- ``HOST`` is a name or an address; an IPv6 address is written in brackets
  (``[::1]:8765``).
- Host and Origin headers are always checked (loopback included): a request whose
  ``Host`` is not one the server answers as, or whose ``Origin`` is a page of another
  site, is refused — what a DNS-rebinding page sends.
- Off loopback the server refuses to start without a bearer token, read from the
  environment variable :data:`TOKEN_VARIABLE` or from ``--token-file`` (never from the
  command line, which ``ps`` shows); when a token is set, every request must carry it
  (``Authorization: Bearer …``), compared in constant time.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from dsf_compile.edges.files import read_regular_file
from dsf_compile.errors import UsageError

TOKEN_VARIABLE = "DSF_MCP_TOKEN"
_MAX_TOKEN_BYTES = 4096
_WILDCARDS = ("0.0.0.0", "::")
_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class Listen(NamedTuple):
    """Where to listen: the host to bind (brackets removed) and the port, a socket address."""

    host: str
    port: int

    @property
    def loopback(self) -> bool:
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def wildcard(self) -> bool:
        return self.host in _WILDCARDS

    def authority(self, host: str | None = None) -> str:
        """``host:port`` as a Host header writes it (IPv6 in brackets)."""
        name = self.host if host is None else host
        if ":" in name and not name.startswith("["):
            name = f"[{name}]"
        return f"{name}:{self.port}"


def parse_listen(text: str) -> Listen:
    """``HOST:PORT`` or ``[IPv6]:PORT``; UsageError otherwise."""
    host, _, port = text.rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        valid_host = _is_ipv6(host)
    else:
        valid_host = bool(host) and ":" not in host
    if not valid_host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UsageError(f"--http {text}: expected HOST:PORT or [IPv6]:PORT")
    return Listen(host, int(port))


def _is_ipv6(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).version == 6
    except ValueError:
        return False


def read_token(environment: MutableMapping[str, str], token_file: str | None) -> str | None:
    """The bearer token from ``--token-file`` or :data:`TOKEN_VARIABLE`; None when neither is set."""
    if token_file is not None:
        try:
            # a link named on the command line is the user's choice (a mounted Secret is one)
            raw = read_regular_file(Path(token_file).resolve(), max_bytes=_MAX_TOKEN_BYTES)
        except OSError as err:
            raise UsageError(f"--token-file {token_file}: cannot read it ({err})") from None
        try:
            token = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise UsageError(f"--token-file {token_file}: not ASCII text") from None
        where = f"--token-file {token_file}"
    else:
        if TOKEN_VARIABLE not in environment:
            return None
        token = environment[TOKEN_VARIABLE].strip()
        where = TOKEN_VARIABLE
    if not token or not token.isascii() or not token.isprintable() or " " in token:
        raise UsageError(f"{where}: the token must be one word of printable ASCII")
    return token


def allowed_hosts(listen: Listen, extra: Sequence[str]) -> list[str]:
    """The Host header values the server answers to: its own address, loopback names, ``--allow-host``.

    An ``--allow-host`` value is allowed as written (``dsf.example`` behind a proxy on the
    default port, ``dsf.example:8443``) and, without a port, also with the server's port.
    """
    hosts = [] if listen.wildcard else [listen.authority()]
    if listen.loopback or listen.wildcard:
        hosts += [f"{name}:{listen.port}" for name in _LOOPBACK_NAMES]
    for name in extra:
        if _is_ipv6(name):
            name = f"[{name}]"
        hosts.append(name)
        if not name.rpartition(":")[2].isdigit() or name.endswith("]"):
            hosts.append(f"{name}:{listen.port}")
    return sorted(set(hosts))


def check_can_start(listen: Listen, token: str | None) -> None:
    """Off loopback, no start without a token: anyone who reaches the port could run the tools."""
    if token is None and not listen.loopback:
        raise UsageError(
            f"--http {listen.authority()}: listening beyond loopback needs a bearer token; "
            f"set {TOKEN_VARIABLE} or pass --token-file PATH"
        )


class BearerToken:
    """ASGI middleware: every HTTP request carries ``Authorization: Bearer <token>``."""

    def __init__(self, app: App, token: str) -> None:
        self.app = app
        self.token = token.encode("ascii")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"www-authenticate", b'Bearer realm="dsf-mcp"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        values = [v for k, v in scope.get("headers", ()) if k.lower() == b"authorization"]
        if len(values) != 1:
            return False
        scheme, _, supplied = bytes(values[0]).partition(b" ")
        # compare_digest on both outcomes: the time does not tell how much matched
        matches = hmac.compare_digest(supplied.strip(), self.token)
        return scheme.lower() == b"bearer" and matches
