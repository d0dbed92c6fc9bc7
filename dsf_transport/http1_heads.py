"""HTTP/1.1 heads for :mod:`dsf_transport.http1`: a request's head written (no part of it
may break out of its line), a response's head parsed into its status, reason, headers and
:class:`Framing` (how its body ends and whether the connection stays open). Nothing here
reads or writes a socket."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from dsf_transport.http1_errors import LocalProtocolError, RemoteProtocolError


@dataclass(frozen=True)
class Framing:
    """How the body of a response ends."""

    length: int | None  # Content-Length, or None
    chunked: bool
    keep_alive: bool


def write_head(method: bytes, target: bytes, fields: Iterable[tuple[bytes, bytes]]) -> bytes:
    """A request head: ``METHOD target HTTP/1.1``, the header ``fields`` in order, the blank
    line; :class:`LocalProtocolError` when a part would break out of its line."""
    lines = [method, b" ", target, b" HTTP/1.1\r\n"]
    for name, value in fields:
        lines += (name, b": ", value, b"\r\n")
    head = b"".join(lines)
    written = len(lines) // 4  # the lines written, each ended by one CRLF
    if head.count(b"\r") != written or head.count(b"\n") != written or b"\x00" in head:
        raise LocalProtocolError("a request header holds a line break or NUL")
    return head + b"\r\n"


def parse_head(head: bytes) -> tuple[int, bytes, list[tuple[bytes, bytes]], Framing]:
    """The status, reason, headers and framing of one response head (blank line included)."""
    status_line, *lines = head[:-4].split(b"\r\n")
    version, status, reason = _status_line(status_line)
    headers = [_header(line) for line in lines]
    return status, reason, headers, _framing(headers, version == b"HTTP/1.1")


def _status_line(line: bytes) -> tuple[bytes, int, bytes]:
    """``HTTP/1.x NNN reason`` → version, status and reason (which may be empty)."""
    parts = line.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise RemoteProtocolError("malformed response status line")
    return parts[0], int(parts[1]), parts[2] if len(parts) == 3 else b""


def _header(line: bytes) -> tuple[bytes, bytes]:
    """``Name: value`` → name and value (no space may surround the name)."""
    name, colon, value = line.partition(b":")
    if not colon or not name or name != name.strip():
        raise RemoteProtocolError("malformed response header")
    return name, value.strip()


def _framing(headers: list[tuple[bytes, bytes]], keep_alive: bool) -> Framing:
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
        raise RemoteProtocolError("a response framed by both Transfer-Encoding and Content-Length")
    length = None if chunked or not lengths else _content_length(lengths)
    if length is None and not chunked:
        keep_alive = False  # read until the server closes
    return Framing(length=length, chunked=chunked, keep_alive=keep_alive)


def _connection_keeps_alive(value: bytes, keep_alive: bool) -> bool:
    """A ``Connection`` header's say: ``close`` wins over ``keep-alive``; neither, no change."""
    tokens = {token.strip() for token in value.lower().split(b",")}
    if b"close" in tokens:
        return False
    return keep_alive or b"keep-alive" in tokens


def _content_length(lengths: set[bytes]) -> int:
    """The one ``Content-Length`` the headers agree on (repeats of one value are allowed)."""
    if len(lengths) > 1 or not next(iter(lengths)).isdigit():
        raise RemoteProtocolError("malformed Content-Length")
    return int(next(iter(lengths)))
