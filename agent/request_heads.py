"""What the agent's requests say on the wire: a summary's endpoint parsed once, its query
encoded as httpx encodes it, and, for the plain pool, the very head httpx's client would
write (``tests/agent/test_agent_stream.py`` compares them), so that a request reads the
same whichever way it goes.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote_plus, urlsplit

from dsf_transport.http import UserAgent
from dsf_transport.http1_heads import write_head
from dsf_transport.plain_target import plain_target

if TYPE_CHECKING:
    import httpx

#: The headers every plain request carries (before its own): those httpx's client sends
#: (the heads are the same, ``tests/agent/test_agent_stream.py``), offering the encodings
#: both undo (httpx offers more only where ``brotli`` or ``zstandard`` is installed).
DEFAULT_HEADERS = {
    "Accept": "*/*",
    "Accept-Encoding": "gzip, deflate",
    "Connection": "keep-alive",
    "User-Agent": str(UserAgent.AGENT),
}
_DEFAULT_FIELDS = [
    (name.encode("ascii"), value.encode("ascii")) for name, value in DEFAULT_HEADERS.items()
]


@functools.lru_cache(maxsize=4096)
def host_of(url: str) -> str:
    """``host:port`` of ``url`` as its slots count it (a few endpoints, every cycle)."""
    return urlsplit(url).netloc.lower()


@dataclass(frozen=True)
class Endpoint:
    """A summary's endpoint, parsed once (the same few endpoints serve every cycle)."""

    text: str
    #: without a query or fragment of its own: the parameters are the whole query
    bare: bool
    #: (host, port) when a request can go to the plain pool as bytes
    origin: tuple[str, int] | None
    #: the ``Host`` header and the path, for the plain pool
    netloc: bytes = b""
    path: bytes = b""


@functools.lru_cache(maxsize=4096)
def parse_endpoint(endpoint: str) -> Endpoint:
    bare = "?" not in endpoint and "#" not in endpoint
    target = plain_target(endpoint) if bare else None
    if target is None:
        return Endpoint(text=endpoint, bare=bare, origin=None)
    return Endpoint(
        text=endpoint,
        bare=bare,
        origin=(target.host, target.port),
        netloc=target.netloc,
        path=target.raw_path,
    )


def request_url(endpoint: Endpoint, params: Mapping[str, str] | None) -> httpx.URL:
    """``endpoint`` with ``params`` as its query, encoded as httpx encodes them."""
    import httpx

    url = httpx.URL(endpoint.text)
    if not params:
        return url
    if not endpoint.bare:
        return url.copy_merge_params(params)
    return url.copy_with(raw_path=url.raw_path + _query(params))


def request_target(endpoint: Endpoint, params: Mapping[str, str] | None) -> bytes:
    """The request target of a bare, plain ``endpoint`` with ``params`` as its query."""
    return endpoint.path + _query(params) if params else endpoint.path


def _query(params: Mapping[str, str]) -> bytes:
    """``?`` and ``params`` encoded as httpx encodes them."""
    query = "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in params.items())
    return b"?" + query.encode("ascii")


def _quoted(text: str) -> str:
    """``urlencode``'s quoting of one name or value; short ones are remembered (a scorer
    sends the same query every cycle, and scorers share the names and current seconds),
    within a few MB whatever the configuration holds."""
    return _quoted_short(text) if len(text) <= 2048 else quote_plus(text)


_quoted_short = functools.lru_cache(maxsize=1024)(quote_plus)


def _request_fields(headers: Mapping[str, str]) -> list[tuple[bytes, bytes]]:
    """The default headers, overridden by ``headers`` (names compared as HTTP compares
    them)."""
    own = [(name.encode("ascii"), value.encode("latin-1")) for name, value in headers.items()]
    if not own:
        return _DEFAULT_FIELDS
    names = {name.lower() for name, _ in own}
    return [item for item in _DEFAULT_FIELDS if item[0].lower() not in names] + own


def plain_head(
    method: str,
    endpoint: Endpoint,
    params: Mapping[str, str] | None,
    headers: Mapping[str, str],
    content: bytes | None,
) -> bytes:
    """The head httpx writes for this request, in its order: ``Host`` (and ``Content-Length:
    0`` for a method that carries a body but has none), the default headers overridden by
    ``headers``, then the body's ``Content-Length``."""
    fields = [(b"Host", endpoint.netloc)]
    if content is None and method in ("POST", "PUT", "PATCH"):
        fields.append((b"Content-Length", b"0"))
    fields += _request_fields(headers)
    if content is not None:
        fields.append((b"Content-Length", b"%d" % len(content)))
    return write_head(method.encode("ascii"), request_target(endpoint, params), fields)
