"""HTTP/1.1 heads for :mod:`dsf_transport.plainhttp`: a request's head written (no part of
it may break out of its line), a response's head parsed into its status, reason, headers
and :class:`Framing` (how its body ends and whether the connection stays open). Nothing
here reads or writes a socket; ``request``, where given, only names the request in errors."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import httpx


@dataclass(frozen=True)
class Framing:
    """How the body of a response ends."""

    length: int | None  # Content-Length, or None
    chunked: bool
    keep_alive: bool


def request_head(request: httpx.Request) -> bytes:
    """The request line and headers of ``request``, as they go on the wire."""
    return write_head(request.method.encode("ascii"), request.url.raw_path, request.headers.raw)


def write_head(method: bytes, target: bytes, fields: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A request head: ``METHOD target HTTP/1.1``, the header ``fields`` in order, the blank
    line; ``httpx.LocalProtocolError`` when a part would break out of its line."""
    lines = [method, b" ", target, b" HTTP/1.1\r\n"]
    for name, value in fields:
        lines += (name, b": ", value, b"\r\n")
    head = b"".join(lines)
    written = len(lines) // 4  # the lines written, each ended by one CRLF
    if head.count(b"\r") != written or head.count(b"\n") != written or b"\x00" in head:
        raise httpx.LocalProtocolError("a request header holds a line break or NUL")
    return head + b"\r\n"


def parse_head(
    head: bytes, request: httpx.Request | None
) -> tuple[int, bytes, list[tuple[bytes, bytes]], Framing]:
    """The status, reason, headers and framing of one response head (blank line included)."""
    status_line, *lines = head[:-4].split(b"\r\n")
    version, status, reason = _status_line(status_line, request)
    headers = [_header(line, request) for line in lines]
    return status, reason, headers, _framing(headers, version == b"HTTP/1.1", request)


def _status_line(line: bytes, request: httpx.Request | None) -> tuple[bytes, int, bytes]:
    """``HTTP/1.x NNN reason`` → version, status and reason (which may be empty)."""
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise httpx.RemoteProtocolError("malformed response status line", request=request)
    return parts[0], int(parts[1]), parts[2] if len(parts) == 3 else b""


def _header(line: bytes, request: httpx.Request | None) -> tuple[bytes, bytes]:
    """``Name: value`` → name and value (no space may surround the name)."""
    name, colon, value = line.partition(b":")
    if not colon or not name or name != name.strip():
        raise httpx.RemoteProtocolError("malformed response header", request=request)
    return name, value.strip()


def _framing(
    headers: list[tuple[bytes, bytes]], keep_alive: bool, request: httpx.Request | None
) -> Framing:
    """How the body ends and whether the connection stays open, from the headers in order
    (``keep_alive`` is the version's default: HTTP/1.1 keeps it, HTTP/1.0 does not).

    RFC 9112 6.3: a ``Transfer-Encoding`` whose last coding is ``chunked`` frames the body
    by chunks; any other one, by the end of the connection. A response with both
    ``Transfer-Encoding`` and ``Content-Length`` is refused, as the RFC advises (3: it
    "ought to be handled as an error", a sign of request smuggling or response splitting).
    """
    lengths: set[bytes] = set()
    chunked = coded = False
    for name, value in headers:
        lowered = name.lower()
        if lowered == b"content-length":
            lengths.add(value)
        elif lowered == b"transfer-encoding":
            coded = True
            chunked = value.lower().rsplit(b",", 1)[-1].strip() == b"chunked"
            keep_alive = keep_alive and chunked  # else the body ends when the connection does
        elif lowered == b"connection":
            keep_alive = _connection_keeps_alive(value, keep_alive)
    if coded and lengths:
        raise httpx.RemoteProtocolError(
            "a response framed by both Transfer-Encoding and Content-Length", request=request
        )
    length = None if chunked or not lengths else _content_length(lengths, request)
    if length is None and not chunked:
        keep_alive = False  # read until the server closes
    return Framing(length=length, chunked=chunked, keep_alive=keep_alive)


def _connection_keeps_alive(value: bytes, keep_alive: bool) -> bool:
    """A ``Connection`` header's say: ``close`` wins over ``keep-alive``; neither, no change."""
    tokens = {token.strip() for token in value.lower().split(b",")}
    if b"close" in tokens:
        return False
    return keep_alive or b"keep-alive" in tokens


def _content_length(lengths: set[bytes], request: httpx.Request | None) -> int:
    """The one ``Content-Length`` the headers agree on (repeats of one value are allowed)."""
    if len(lengths) > 1 or not next(iter(lengths)).isdigit():
        raise httpx.RemoteProtocolError("malformed Content-Length", request=request)
    return int(next(iter(lengths)))
