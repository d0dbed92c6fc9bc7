"""``dsf-mcp --http``'s pieces without a server: addresses, Host values, tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsf_compile.commands.mcp_http import (
    Listen,
    allowed_hosts,
    check_can_start,
    parse_listen,
    read_token,
)
from dsf_compile.errors import UsageError


@pytest.mark.parametrize(
    ("text", "host", "port", "loopback"),
    [
        ("127.0.0.1:8765", "127.0.0.1", 8765, True),
        ("localhost:1", "localhost", 1, True),
        ("[::1]:8765", "::1", 8765, True),
        ("0.0.0.0:8765", "0.0.0.0", 8765, False),
        ("[::]:8765", "::", 8765, False),
        ("10.0.0.5:80", "10.0.0.5", 80, False),
        ("dsf.example:443", "dsf.example", 443, False),
    ],
)
def test_listen_addresses(text: str, host: str, port: int, loopback: bool) -> None:
    listen = parse_listen(text)
    assert (listen.host, listen.port, listen.loopback) == (host, port, loopback)


@pytest.mark.parametrize(
    "text", ["8765", ":8765", "::1:8765", "[::1]", "[nope]:1", "host:0", "host:70000", "host:x"]
)
def test_bad_listen_addresses_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="expected HOST:PORT or \\[IPv6\\]:PORT"):
        parse_listen(text)


def test_allowed_hosts() -> None:
    assert allowed_hosts(Listen("::1", 9), []) == [
        "127.0.0.1:9",
        "[::1]:9",
        "localhost:9",
    ]
    assert allowed_hosts(Listen("10.0.0.5", 9), []) == ["10.0.0.5:9"]
    assert allowed_hosts(Listen("0.0.0.0", 9), ["dsf.example", "proxy:8443", "fe80::1"]) == [
        "127.0.0.1:9",
        "[::1]:9",
        "[fe80::1]",
        "[fe80::1]:9",
        "dsf.example",
        "dsf.example:9",
        "localhost:9",
        "proxy:8443",
    ]


def test_a_token_is_needed_beyond_loopback_only() -> None:
    check_can_start(Listen("::1", 9), None)
    check_can_start(Listen("0.0.0.0", 9), "t0ken")
    with pytest.raises(UsageError, match="needs a bearer token; set DSF_MCP_TOKEN"):
        check_can_start(Listen("0.0.0.0", 9), None)


def test_tokens_come_from_the_environment_or_a_file(tmp_path: Path) -> None:
    assert read_token({}, None) is None
    assert read_token({"DSF_MCP_TOKEN": " abc \n"}, None) == "abc"
    (tmp_path / "token").write_text("from-file\n")
    (tmp_path / "link").symlink_to(tmp_path / "token")  # a mounted Secret is a link
    assert read_token({"DSF_MCP_TOKEN": "ignored"}, str(tmp_path / "link")) == "from-file"
    for bad in ("", "two words", "ctl\x1b"):
        with pytest.raises(UsageError, match="one word of printable ASCII"):
            read_token({"DSF_MCP_TOKEN": bad}, None)
    with pytest.raises(UsageError, match="cannot read it"):
        read_token({}, str(tmp_path / "missing"))
