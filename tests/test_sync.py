"""Sync against real loopback servers: every fault a scorer can show, redirects, the
allow-list, --connect-to, ``only``, determinism and bounded concurrency.

No assertion depends on timing; counters kept by the servers say what happened.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsf_compile.errors import SyncError, UsageError
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_compile.sync.fetch import (
    format_progress,
    parse_resolve_options,
    parse_resolve_setting,
    sync_lock,
)
from dsf_compile.sync.lock import LockEntry, Lockfile, encode_lockfile, make_entry
from tests.sync_fleet import CONFIG, FAST, scorer
from tests.sync_servers import (
    LoopbackServer,
    flaky,
    free_port,
    hang,
    huge_body,
    json_body,
    redirect,
    reset,
    respond,
)

CAP = 1024 * 1024


def sync(
    scorers: list[DynamicScorer],
    settings: SyncSettings = FAST,
    previous: Lockfile | None = None,
    **kwargs: Any,
) -> Lockfile:
    return asyncio.run(sync_lock(scorers, previous or Lockfile(), settings, **kwargs)).lock


def one(url: str, mode: str = "Full", settings: SyncSettings = FAST, **kwargs: Any) -> LockEntry:
    return sync([scorer("s", url, mode)], settings, **kwargs).scorers["s"]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture
def other_server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


# ------------------------------------------------------------------ answers


def test_full_200_valid_config_is_active_with_the_document(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    entry = one(url)
    assert entry.health == "Active"
    assert entry.reason == ""
    assert entry.config is not None
    assert entry.config.source is not None and entry.config.source.type == "Prometheus"
    assert entry.config.scoring is not None and entry.config.scoring.params is not None
    assert entry.config.scoring.params.interval == 30
    assert entry.configURL == url
    assert server.requests[0].headers["accept-encoding"] == "identity"


def test_none_mode_checks_healthz_only(server: LoopbackServer) -> None:
    server.route("/healthz", respond(200, b"ok", content_type="text/plain"))
    server.route("/config", json_body(CONFIG))
    entry = one(server.url("/config?x=1"), mode="None")
    assert (entry.health, entry.reason, entry.config) == ("Active", "", None)
    assert [r.path for r in server.requests] == ["/healthz"]


def test_none_mode_healthz_404_is_inactive(server: LoopbackServer) -> None:
    entry = one(server.url("/api/config"), mode="None")
    assert entry.health == "Inactive"
    assert entry.reason == f"GET {server.url('/healthz')}: HTTP 404"
    assert server.hits("/healthz") == 1  # 4xx is never retried


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<html>oops</html>", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b"[" * 100_000, "not JSON"),
        (b"[1, 2]", "invalid /config document: not a JSON object"),
        (
            b'{"source": {"params": {"range": "3600"}}}',
            "invalid /config document: source.params.range: must be an integer",
        ),
        (
            b'{"source": {"type": "Graphite"}, "scoring": {"params": {"interval": -1}}}',
            "invalid /config document: scoring.params.interval: must be >= 0 (and 1 more)",
        ),
        (
            b'{"scoring": {"params": {"interval": 1000000000000000000000000000000}}}',
            "invalid /config document: scoring.params.interval: must be <= 9223372036854775807 (a 64-bit integer)",
        ),
    ],
    ids=["html", "binary", "deep", "array", "schema-type", "schema-two", "beyond-int64"],
)
def test_bad_documents_are_inactive_and_not_retried(
    server: LoopbackServer, body: bytes, expected: str
) -> None:
    url = server.route("/config", respond(200, body))
    entry = one(url)
    assert entry.health == "Inactive"
    assert entry.reason == f"GET {url}: {expected}"
    assert entry.config is None
    assert server.hits("/config") == 1


# ------------------------------------------------------------------- faults


def test_hang_times_out_within_the_budget(server: LoopbackServer) -> None:
    url = server.route("/config", hang())
    entry = one(url, settings=SyncSettings(timeoutSeconds=1, retries=1))
    assert entry.health == "Inactive"
    assert entry.reason == f"GET {url}: timed out after 1 s"
    # An accepted request waits out the whole budget; only connecting is retried on timeout.
    assert server.hits("/config") == 1


def test_connection_reset_is_retried_then_inactive(server: LoopbackServer) -> None:
    url = server.route("/config", reset())
    entry = one(url)
    assert entry.health == "Inactive"
    assert entry.reason in (
        f"GET {url}: connection reset",
        f"GET {url}: server closed the connection without a response",
    )
    assert server.hits("/config") == 3  # retries=2


def test_connection_refused() -> None:
    url = f"http://127.0.0.1:{free_port()}/config"
    entry = one(url, settings=SyncSettings(timeoutSeconds=5, retries=1))
    assert (entry.health, entry.reason) == ("Inactive", f"GET {url}: connection refused")


def test_500_is_retried_then_inactive(server: LoopbackServer) -> None:
    url = server.route("/config", respond(500, b"boom"))
    entry = one(url)
    assert (entry.health, entry.reason) == ("Inactive", f"GET {url}: HTTP 500")
    assert server.hits("/config") == 3


def test_500_then_success_is_active(server: LoopbackServer) -> None:
    url = server.route("/config", flaky(2, json_body(CONFIG), status=503))
    entry = one(url)
    assert entry.health == "Active"
    assert server.hits("/config") == 3


def test_retries_zero_means_one_attempt(server: LoopbackServer) -> None:
    url = server.route("/config", flaky(1, json_body(CONFIG)))
    entry = one(url, settings=SyncSettings(retries=0))
    assert (entry.health, entry.reason) == ("Inactive", f"GET {url}: HTTP 500")
    assert server.hits("/config") == 1


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "chunked"])
def test_50_mb_body_is_cut_at_the_cap(server: LoopbackServer, declare_length: bool) -> None:
    size = 50 * 1024 * 1024
    url = server.route("/config", huge_body(size, declare_length=declare_length))
    entry = one(url)
    assert entry.health == "Inactive"
    assert entry.reason == f"GET {url}: response larger than {CAP} bytes"
    assert server.hits("/config") == 1  # an oversized body is not retried
    # Kernel buffers on both ends absorb some bytes past the cap; far from the 50 MB.
    assert server.body_bytes_sent("/config") <= CAP + 4 * 1024 * 1024


def test_compressed_body_is_refused(server: LoopbackServer) -> None:
    url = server.route(
        "/config", respond(200, b"\x1f\x8b...", headers={"Content-Encoding": "gzip"})
    )
    entry = one(url)
    assert entry.reason == f"GET {url}: unsupported Content-Encoding 'gzip'"


# ---------------------------------------------------------------- redirects


def test_same_host_redirect_is_followed(server: LoopbackServer) -> None:
    server.route("/config", json_body(CONFIG))
    server.route("/v1/config", redirect("/config", 301))
    url = server.route("/old", redirect(server.url("/v1/config"), 307))
    entry = one(url)
    assert entry.health == "Active"
    assert entry.configURL == url  # as written, not where it ended
    assert [r.path for r in server.requests] == ["/old", "/v1/config", "/config"]


def test_redirect_loop_is_too_many_redirects(server: LoopbackServer) -> None:
    url = server.route("/loop", redirect("/loop"))
    entry = one(url)
    assert (entry.health, entry.reason) == (
        "Inactive",
        f"GET {url}: too many redirects (more than 5)",
    )
    assert server.hits("/loop") == 6  # the request and 5 redirects, no retry


def test_redirect_to_another_host_is_refused(
    server: LoopbackServer, other_server: LoopbackServer
) -> None:
    other_server.route("/config", json_body(CONFIG))
    target = other_server.url("/config", host="localhost")
    url = server.route("/config", redirect(target))
    entry = one(url)
    assert entry.health == "Inactive"
    assert entry.reason == f"GET {url}: redirect to another host ({target}) refused"
    assert other_server.requests == []
    assert server.hits("/config") == 1


@pytest.mark.parametrize("target", ["https://127.0.0.1:{port}/config", "http://127.0.0.1:1/config"])
def test_redirect_to_another_scheme_or_port_is_refused(server: LoopbackServer, target: str) -> None:
    location = target.format(port=server.port)
    url = server.route("/config", redirect(location))
    entry = one(url)
    assert entry.reason == f"GET {url}: redirect to another scheme or port ({location}) refused"


def test_redirect_without_location(server: LoopbackServer) -> None:
    url = server.route("/config", respond(302, b""))
    assert one(url).reason == f"GET {url}: HTTP 302 without a Location header"


# --------------------------------------------------------------- allow-list


def test_allow_list_refuses_before_any_request(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    entry = one(url, settings=SyncSettings(allowedHosts=("*.svc", "scorer.example")))
    assert (entry.health, entry.reason) == ("Inactive", f"GET {url}: host not in sync.allowedHosts")
    assert server.requests == []


@pytest.mark.parametrize("pattern", ["127.0.0.1", "127.0.0.*", "*"])
def test_allow_list_admits_names_and_globs(server: LoopbackServer, pattern: str) -> None:
    url = server.route("/config", json_body(CONFIG))
    assert one(url, settings=SyncSettings(allowedHosts=(pattern,))).health == "Active"


def test_allow_list_is_case_insensitive_and_checked_on_the_url_host(server: LoopbackServer) -> None:
    server.route("/config", json_body(CONFIG))
    url = "http://Scorer.Example.Invalid:8000/config"
    settings = SyncSettings(allowedHosts=("*.EXAMPLE.invalid",))
    mapping = {("scorer.example.invalid", 8000): ("127.0.0.1", server.port)}
    assert one(url, settings=settings, connect_to=mapping).health == "Active"


# --------------------------------------------------------------- connect-to


def test_connect_to_reaches_loopback_with_the_original_host_header(server: LoopbackServer) -> None:
    server.route("/config", json_body(CONFIG))
    url = "http://scorer.example.invalid:8000/config"
    mapping = parse_resolve_options([f"scorer.example.invalid:8000:127.0.0.1:{server.port}"])
    lock = sync([scorer("s", url)], connect_to=mapping)
    entry = lock.scorers["s"]
    assert entry.health == "Active"
    assert entry.configURL == url
    assert server.requests[0].headers["host"] == "scorer.example.invalid:8000"


def test_connect_to_from_dsf_yaml_setting(server: LoopbackServer) -> None:
    server.route("/healthz", respond(200))
    mapping = parse_resolve_setting({"scorer.ns.svc:80": f"127.0.0.1:{server.port}"})
    entry = one("http://scorer.ns.svc/config", mode="None", connect_to=mapping)
    assert entry.health == "Active"
    assert server.requests[0].headers["host"] == "scorer.ns.svc"


def test_unmapped_host_is_not_rewritten(server: LoopbackServer) -> None:
    server.route("/config", json_body(CONFIG))
    mapping = {("elsewhere.invalid", 8000): ("127.0.0.1", 1)}
    assert one(server.url("/config"), connect_to=mapping).health == "Active"


@pytest.mark.parametrize("path", ["/config", "/config?n=1&b=%2F%20x", "/a%20b/config"])
def test_plain_http_puts_on_the_wire_what_the_client_would(
    server: LoopbackServer, path: str
) -> None:
    # Unmapped plain http skips httpx's client (dsf_compile/sync/client.py); a URL mapped
    # to itself takes the client's way: both must send the same head.
    server.route(path.partition("?")[0], json_body(CONFIG))
    for host in ("127.0.0.1", "localhost"):
        url = server.url(path, host=host)
        assert one(url).health == "Active"
        itself = {(host, server.port): ("127.0.0.1", server.port)}
        assert one(url, connect_to=itself).health == "Active"
    direct_ip, client_ip, direct_name, client_name = (r.head for r in server.requests)
    assert direct_ip == client_ip
    assert direct_name == client_name
    start = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
    assert direct_ip.startswith(start.encode())
    assert b"\r\nUser-Agent: dsf-compile-sync/1\r\n" in direct_ip


def _tls_material(tmp: Path) -> tuple[ssl.SSLContext, ssl.SSLContext, Path]:
    """A server context for ``scorer.example.invalid``, a client context trusting it, the CA file."""
    pytest.importorskip("cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "scorer.example.invalid")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("scorer.example.invalid")]), critical=False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (tmp / "cert.pem").write_bytes(cert_pem)
    (tmp / "key.pem").write_bytes(key_pem)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(tmp / "cert.pem", tmp / "key.pem")
    client_ctx = ssl.create_default_context(cadata=cert_pem.decode())
    return server_ctx, client_ctx, tmp / "cert.pem"


@pytest.mark.parametrize("injected", [True, False], ids=["injected-transport", "default-transport"])
def test_connect_to_https_keeps_sni_and_certificate_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, injected: bool
) -> None:
    server_ctx, client_ctx, ca_file = _tls_material(tmp_path)
    # The default transport trusts SSL_CERT_FILE, as httpx does.
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    seen_sni: list[str | None] = []
    server_ctx.sni_callback = lambda sock, name, ctx: seen_sni.append(name)
    with LoopbackServer(ssl_context=server_ctx) as srv:
        srv.route("/config", json_body(CONFIG))
        mapping = {
            ("scorer.example.invalid", 443): ("127.0.0.1", srv.port),
            ("wrong.example.invalid", 443): ("127.0.0.1", srv.port),
        }
        good = scorer("good", "https://scorer.example.invalid/config")
        bad = scorer("bad", "https://wrong.example.invalid/config")

        async def run() -> Lockfile:
            if not injected:
                fetched = await sync_lock(
                    [good, bad], Lockfile(), SyncSettings(retries=0), connect_to=mapping
                )
                return fetched.lock
            transport = httpx.AsyncHTTPTransport(verify=client_ctx)
            async with transport:
                fetched = await sync_lock(
                    [good, bad],
                    Lockfile(),
                    SyncSettings(retries=0),
                    connect_to=mapping,
                    transport=transport,
                )
            return fetched.lock

        lock = asyncio.run(run())
    assert lock.scorers["good"].health == "Active"
    assert lock.scorers["bad"].health == "Inactive"
    assert lock.scorers["bad"].reason.startswith(
        "GET https://wrong.example.invalid/config: TLS certificate verification failed"
    )
    assert "scorer.example.invalid" in seen_sni
    assert "wrong.example.invalid" in seen_sni


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["a.svc:8000:127.0.0.1:18000"], {("a.svc", 8000): ("127.0.0.1", 18000)}),
        (["A.Svc:8000:127.0.0.1"], {("a.svc", 8000): ("127.0.0.1", 8000)}),
        (["a:80:[::1]:9000"], {("a", 80): ("::1", 9000)}),
        (["[fe80::1]:80:127.0.0.1"], {("fe80::1", 80): ("127.0.0.1", 80)}),
        (["a:1:b", "a:1:b"], {("a", 1): ("b", 1)}),
        ([], {}),
    ],
)
def test_parse_resolve_options(values: list[str], expected: dict[Any, Any]) -> None:
    assert parse_resolve_options(values) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a.svc:8000", "expected HOST:PORT:ADDR[:PORT]"),
        ("a.svc:http:127.0.0.1", "expected HOST:PORT:ADDR[:PORT]"),
        ("a.svc:8000:127.0.0.1:70000", "port 70000 is not between 1 and 65535"),
        ("a.svc:0:127.0.0.1", "port 0 is not between 1 and 65535"),
        ("a::1:80:b", "expected HOST:PORT:ADDR[:PORT]"),
        ("a.svc:8000:127.0.0.1:1:2", "expected HOST:PORT:ADDR[:PORT]"),
    ],
)
def test_parse_resolve_options_rejects(value: str, message: str) -> None:
    with pytest.raises(UsageError, match=r"^--resolve '.*': ") as info:
        parse_resolve_options([value])
    assert message in str(info.value)


def test_parse_resolve_options_rejects_conflicting_mappings() -> None:
    with pytest.raises(UsageError, match="a:1 is mapped twice"):
        parse_resolve_options(["a:1:b", "A:1:c"])


@pytest.mark.parametrize(
    ("mapping", "expected"),
    [
        ({"svc.ns:8000": "127.0.0.1:18000"}, {("svc.ns", 8000): ("127.0.0.1", 18000)}),
        ({"svc.ns:8000": "127.0.0.1"}, {("svc.ns", 8000): ("127.0.0.1", 8000)}),
        ({"svc:443": "[::1]:8443"}, {("svc", 443): ("::1", 8443)}),
    ],
)
def test_parse_resolve_setting(mapping: dict[str, str], expected: dict[Any, Any]) -> None:
    assert parse_resolve_setting(mapping) == expected


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"svc.ns": "127.0.0.1:1"}, "sync.resolve['svc.ns']: the key must be HOST:PORT"),
        ({"svc.ns:1": "127.0.0.1:x"}, "sync.resolve['svc.ns:1']: the value must be ADDR[:PORT]"),
        ({"svc.ns:99999": "127.0.0.1"}, "sync.resolve['svc.ns:99999']: port 99999"),
        ({"svc:1": "a", "SVC:1": "b"}, "svc:1 is mapped twice"),
    ],
)
def test_parse_resolve_setting_rejects(mapping: dict[str, str], message: str) -> None:
    with pytest.raises(SyncError) as info:
        parse_resolve_setting(mapping)
    assert message in str(info.value)


# --------------------------------------------------------------------- only


def test_only_refreshes_named_keeps_others_and_drops_removed(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    a, b, c = scorer("a", url), scorer("b", url), scorer("c", url)
    stale_b = make_entry(b.spec, healthy=False, reason="old")
    gone = make_entry(a.spec, healthy=True)
    previous = Lockfile(scorers={"b": stale_b, "gone": gone, "a": stale_b})
    lock = sync([c, b, a], previous=previous, only=frozenset({"a"}))
    assert list(lock.scorers) == ["a", "b"]  # sorted; c had no entry; "gone" dropped
    assert lock.scorers["a"].health == "Active"
    assert lock.scorers["b"] is stale_b
    assert server.hits("/config") == 1


def test_only_empty_means_all(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    lock = sync([scorer("b", url), scorer("a", url)], only=frozenset())
    assert list(lock.scorers) == ["a", "b"]


def test_only_naming_an_unknown_scorer_raises(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    with pytest.raises(SyncError, match="no such scorer: nope, zzz"):
        sync([scorer("a", url)], only=frozenset({"a", "zzz", "nope"}))
    assert server.requests == []


def test_a_scorer_listed_twice_raises() -> None:
    with pytest.raises(SyncError, match="'a' is listed twice"):
        sync([scorer("a", "http://127.0.0.1:1/"), scorer("a", "http://127.0.0.1:2/")])


# ------------------------------------------------- determinism and progress


def test_same_inputs_give_identical_lockfile_bytes(
    server: LoopbackServer, other_server: LoopbackServer
) -> None:
    server.route("/config", json_body(CONFIG))
    server.route("/bad", respond(200, b"{nope"))
    server.route("/invalid", json_body({"scoring": {"params": {"interval": "x"}}}))
    server.route("/err", respond(500))
    server.route("/reset", reset())
    server.route("/away", redirect(other_server.url("/config", host="localhost")))
    server.route("/loop", redirect("/loop"))
    server.route("/healthz", respond(200))
    refused = free_port()
    scorers = [
        scorer("ok", server.url("/config")),
        scorer("bad", server.url("/bad")),
        scorer("invalid", server.url("/invalid")),
        scorer("err", server.url("/err")),
        scorer("reset", server.url("/reset")),
        scorer("away", server.url("/away")),
        scorer("loop", server.url("/loop")),
        scorer("health", server.url("/config"), mode="None"),
        scorer("refused", f"http://127.0.0.1:{refused}/config"),
    ]
    settings = SyncSettings(retries=1)
    first = encode_lockfile(sync(scorers, settings))
    second = encode_lockfile(sync(list(reversed(scorers)), settings))
    assert first == second
    # Through httpx's client (every origin mapped to itself) rather than straight to the
    # plain transport: the same entries, reasons included.
    origins = (("127.0.0.1", server.port), ("localhost", other_server.port), ("127.0.0.1", refused))
    itself = {(host, port): ("127.0.0.1", port) for host, port in origins}
    assert encode_lockfile(sync(scorers, settings, connect_to=itself)) == first
    lock = Lockfile.model_validate_json(first)
    assert list(lock.scorers) == sorted(s.metadata.name for s in scorers)
    assert {n for n, e in lock.scorers.items() if e.health == "Active"} == {"ok", "health"}
    assert all(e.reason for e in lock.scorers.values() if e.health == "Inactive")


def test_progress_is_called_once_per_refreshed_scorer(server: LoopbackServer) -> None:
    url = server.route("/config", json_body(CONFIG))
    seen: list[str] = []
    sync(
        [scorer(f"s{i}", url) for i in range(5)],
        progress=lambda name, entry: seen.append(f"{name}={entry.health}"),
        only=frozenset({"s1", "s3"}),
    )
    assert sorted(seen) == ["s1=Active", "s3=Active"]


def test_format_progress() -> None:
    spec = scorer("x", "http://a/config").spec
    active = make_entry(spec, healthy=True)
    inactive = make_entry(spec, healthy=False, reason="GET http://a/config: HTTP 500")
    assert format_progress("sample-scorer", active, 3, 12) == "[ 3/12] sample-scorer  Active"
    assert (
        format_progress("other", inactive, 12, 12)
        == "[12/12] other  Inactive: GET http://a/config: HTTP 500"
    )


# --------------------------------------------------------------- concurrency


def test_one_hang_delays_no_fast_scorer(server: LoopbackServer) -> None:
    server.route("/hang", hang())
    server.route("/config", json_body(CONFIG, delay=0.05))
    fast = [scorer(f"fast-{i:02}", server.url(f"/config?n={i}")) for i in range(20)]
    settings = SyncSettings(timeoutSeconds=2, concurrency=4)
    # Named to sort first, so the hang holds a slot while all the fast ones run.
    lock = sync([scorer("a-hang", server.url("/hang")), *fast], settings)
    assert lock.scorers["a-hang"].health == "Inactive"
    assert lock.scorers["a-hang"].reason == f"GET {server.url('/hang')}: timed out after 2 s"
    assert all(lock.scorers[s.metadata.name].health == "Active" for s in fast)


@pytest.mark.parametrize("concurrency", [1, 3, 8])
def test_in_flight_requests_never_exceed_concurrency(
    server: LoopbackServer, concurrency: int
) -> None:
    server.route("/config", json_body(CONFIG, delay=0.05))
    scorers = [scorer(f"s{i:02}", server.url(f"/config?n={i}")) for i in range(16)]
    lock = sync(scorers, SyncSettings(concurrency=concurrency))
    assert all(e.health == "Active" for e in lock.scorers.values())
    assert 1 <= server.max_in_flight <= concurrency
    if concurrency > 1:
        assert server.max_in_flight > 1  # they did overlap


# ------------------------------------------------------ injected transport


def test_injected_mock_transport_needs_no_network() -> None:
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(str(request.url))
        return httpx.Response(200, json={"name": "x"})

    lock = sync(
        [scorer("m", "http://scorer.invalid/config")], transport=httpx.MockTransport(answer)
    )
    assert lock.scorers["m"].health == "Active"
    assert calls == ["http://scorer.invalid/config"]


class _FailingFirst(httpx.AsyncBaseTransport):
    """Raises ``error`` on the first ``failures`` requests, then answers CONFIG."""

    def __init__(self, error: Exception, failures: int) -> None:
        self.error = error
        self.failures = failures
        self.calls = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return httpx.Response(200, json=CONFIG)


@pytest.mark.parametrize(
    ("error", "failures", "health", "calls", "reason"),
    [
        (httpx.ConnectTimeout("slow SYN"), 2, "Active", 3, ""),
        (httpx.ConnectTimeout("slow SYN"), 3, "Inactive", 3, "timed out after 5 s"),
        (httpx.ConnectError("[Errno 111] Connection refused"), 1, "Active", 2, ""),
        (httpx.ReadError("reset"), 3, "Inactive", 3, "connection reset"),
        (
            httpx.UnsupportedProtocol("ftp"),
            1,
            "Inactive",
            1,
            "only http and https URLs are allowed",
        ),
    ],
    ids=[
        "connect-timeout-then-ok",
        "connect-timeout-always",
        "refused-then-ok",
        "reset",
        "no-retry",
    ],
)
def test_retry_policy_on_transport_errors(
    error: Exception, failures: int, health: str, calls: int, reason: str
) -> None:
    transport = _FailingFirst(error, failures)
    url = "http://scorer.invalid/config"
    entry = one(url, transport=transport)
    assert entry.health == health
    assert entry.reason == (f"GET {url}: {reason}" if reason else "")
    assert transport.calls == calls


def test_sync_leaves_httpx_s_command_line_out() -> None:
    # dsf_compile/sync/__init__.py: click, rich and pygments are not a sync's to load.
    probe = (
        "import sys, dsf_compile.sync.fetch, httpx; "
        "print(sys.modules.get('httpx._main', 'missing') is None, "
        "[name for name in ('click', 'rich', 'pygments') if name in sys.modules])"
    )
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=root
    )
    assert done.stdout.split(None, 1) == ["True", "[]\n"]
