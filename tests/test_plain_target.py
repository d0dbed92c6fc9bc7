"""A plain ``http://`` URL read without httpx (``dsf_transport/plain_target.py``) is what
``httpx.URL`` reads, or is left to httpx."""

from __future__ import annotations

import random

import httpx
import pytest

from dsf_transport.plain_target import PlainTarget, plain_target

#: Pieces the random URLs are made of: every character class the reader looks at, and
#: the forms httpx rewrites (case, dot segments, default and bad ports, addresses).
_HOSTS = [
    "h",
    "a.b",
    "x-y.z",
    "A",
    "127.0.0.1",
    "01.2.3.4",
    "999.1.1.1",
    "1.2.3",
    "[::1]",
    "[::ffff:1.2.3.4]",
    "[::FFFF:1.2.3.4]",
    "[0:0::1]",
    "é.x",
    "xn--bcher-kva",
    "xn--a.b",
    "www.xn--bcher-kva.de",
    "",
]
_PORTS = ["", ":80", ":8080", ":0", ":65535", ":65536", ":99999", ":08", ":"]
_PIECES = [*"abcAZ09.-_~!$&'()*+,;=:@/?#%[] \t\\\"", "..", "/./", "/../", "é", "%41", "%zz"]


#: The characters a plain target may hold after its host, and the forms httpx rewrites.
_PLAIN_PIECES = [*"abcAZ09.-_~!$&'()*+,;=:@/?", "/./", "/../", "%41"]


def _random_url(rng: random.Random) -> str:
    pieces = rng.choice([_PIECES, _PLAIN_PIECES])
    rest = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
    scheme = rng.choice(["http://", "http://", "http://", "HTTP://", "https://", "http:/"])
    start = rng.choice(["", "/", "/", "?"])
    return f"{scheme}{rng.choice(_HOSTS)}{rng.choice(_PORTS)}{start}{rest}"


def _as_httpx(target: PlainTarget) -> tuple[str, str, int, bytes, bytes]:
    url = httpx.URL(target.text)
    return url.scheme, url.host, url.port or 80, url.netloc, url.raw_path


def test_a_plain_target_is_what_httpx_reads() -> None:
    rng = random.Random(38)
    read = 0
    for _ in range(40_000):
        target = plain_target(_random_url(rng))
        if target is None:
            continue
        read += 1
        own = (target.scheme, target.host, target.port, target.netloc, target.raw_path)
        assert own == _as_httpx(target), target.text
    assert read > 1_000  # the comparison covered many URLs read without httpx


@pytest.mark.parametrize(
    ("url", "host", "port", "netloc", "raw_path"),
    [
        (
            "http://scorer.ns.svc:8000/config?n=1&b=x",
            "scorer.ns.svc",
            8000,
            b"scorer.ns.svc:8000",
            b"/config?n=1&b=x",
        ),
        ("http://h:80/x", "h", 80, b"h", b"/x"),
        ("http://h", "h", 80, b"h", b"/"),
        ("http://h?q", "h", 80, b"h", b"/?q"),
        ("http://[::1]:81/x", "::1", 81, b"[::1]:81", b"/x"),
    ],
)
def test_plain_targets(url: str, host: str, port: int, netloc: bytes, raw_path: bytes) -> None:
    assert plain_target(url) == PlainTarget(url, host, port, netloc, raw_path)


@pytest.mark.parametrize(
    "url",
    [
        "HTTP://h/",
        "http://H/",
        "https://h/",
        "http://h/a/../b",
        "http://h/./b",
        "http://h/%41",
        "http://h/a b",
        "http://h/#x",
        "http://u@h/",
        "http://01.2.3.4/",
        "http://999.1.1.1/",
        "http://[::FFFF:1.2.3.4]/",
        "http://h:65536/",
        "http://h:08/",
        "http://é/",
        "http://xn--bcher-kva.de/",
    ],
)
def test_urls_httpx_would_rewrite_or_refuse_are_left_to_it(url: str) -> None:
    assert plain_target(url) is None
