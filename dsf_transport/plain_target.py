"""An ``http://`` URL that httpx would send as it is written, read without httpx.

Most fleets' scorers and Prometheus endpoints are plain-http URLs with a lower-case host, a
port and a path or query of letters, digits and a few marks: for those, ``httpx.URL``
changes nothing (no case to fold, no dot segment to remove, nothing to percent-encode, no
IDNA name to decode, no default port to drop beyond ``:80``), so the target's host, port,
``Host`` header and request target can be read from the text itself. ``dsf-compile sync``
then sends its requests without importing httpx (tens of milliseconds of every run), and
the agent hands them to its plain pool as bytes. Any other URL is parsed by httpx, as it
always was: a :class:`PlainTarget` is only ever what ``httpx.URL`` would have given
(``tests/test_plain_target.py`` compares them). The one reader for both, so that the
compiler and the agent agree on which URLs go which way.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv6Address

#: ``http://host[:port][/path][?query]``, each part in a form httpx keeps as written: a
#: lower-case name, an IPv4 address or a bracketed IPv6 address; a port without a leading
#: zero; path and query characters httpx does not percent-encode (no ``%``, no ``#``).
_PLAIN_URL = re.compile(
    r"http://(?P<host>[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?|\[[0-9a-f:.]+\])"
    r"(?::(?P<port>[1-9][0-9]{0,4}))?"
    r"(?P<path>/[A-Za-z0-9._~!$&'()*+,;=:@/-]*)?"
    r"(?P<query>\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?"
)
#: What httpx takes for an IPv4 address (and refuses when it is not a valid one).
_IPV4_STYLE = re.compile(r"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+")
#: A ``.`` or ``..`` segment, which httpx removes from the path.
_DOT_SEGMENT = re.compile(r"/\.\.?(?=/|$)")


@dataclass(frozen=True, slots=True)
class PlainTarget:
    """An ``http://`` URL as ``httpx.URL`` reads it: ``scheme``, ``host`` (an IPv6 address
    without its brackets) and ``port`` (80 when the URL names none), the ``Host`` header
    (``netloc``) and the request target (``raw_path``)."""

    text: str
    host: str
    port: int
    netloc: bytes
    raw_path: bytes
    scheme: str = "http"


def plain_target(url: str) -> PlainTarget | None:
    """``url`` as a :class:`PlainTarget` when httpx would send it as written; None otherwise
    (httpx then parses it)."""
    match = _PLAIN_URL.fullmatch(url)
    if match is None:
        return None
    host, port_text, path = match["host"], match["port"], match["path"] or "/"
    if not _canonical_host(host) or _DOT_SEGMENT.search(path):
        return None
    port = int(port_text) if port_text else 80
    if port > 65535:
        return None
    netloc = host if port == 80 else f"{host}:{port}"
    raw_path = path + (match["query"] or "")
    return PlainTarget(
        url, host.strip("[]"), port, netloc.encode("ascii"), raw_path.encode("ascii")
    )


@functools.lru_cache(maxsize=1024)
def _canonical_host(host: str) -> bool:
    """Whether httpx keeps ``host`` as written (an address only in its canonical form, a
    name not starting ``xn--``, which httpx reads as IDNA: its ``host`` is then the
    decoded name, the one the allow-list is matched against); remembered, as a fleet's
    scorers share a few hosts."""
    if host.startswith("xn--"):
        return False
    if host.startswith("["):
        return _canonical(IPv6Address, host[1:-1])
    if _IPV4_STYLE.fullmatch(host):
        return _canonical(IPv4Address, host)
    return True


def _canonical(kind: type[IPv4Address] | type[IPv6Address], text: str) -> bool:
    try:
        return str(kind(text)) == text
    except ValueError:
        return False
