"""Untrusted inputs and answers (hardening): credentials, unencodable strings, hangs, bad files.

Scorers answer from loopback servers; FIFOs and links are real ones on ``tmp_path``;
conditions a root test run cannot create (permission denied, a full disk) are simulated
by making the one system call raise. Every case ends with a located error or one line,
never a traceback, and nothing secret in the lockfile or on the terminal.
"""

from __future__ import annotations

import asyncio
import errno
import io
import json
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsf_compile.commands.cli import run
from dsf_compile.commands.scorer_check import run_scorer_check
from dsf_compile.edges import replacement
from dsf_compile.edges.files import NotRegularFileError, read_regular_file
from dsf_compile.edges.untrusted import first_string_problem, redact, safe_message, string_problem
from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_compile.sync.fetch import format_progress, sync_lock
from dsf_compile.sync.lock import LOCKFILE, Lockfile, make_entry
from dsf_contract.bounded_json import load_json
from dsf_contract.escaping import terminal
from tests.sync_fleet import CONFIG, FAST, make_fleet, scorer
from tests.sync_servers import LoopbackServer, Request, json_body, redirect, respond

SECRET = "hunter2"


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def read_lock(root: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / LOCKFILE).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def with_config(**changes: Any) -> dict[str, Any]:
    config = json.loads(json.dumps(CONFIG))
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = config
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = value
    return config


# ----------------------------------------------- credentials from /config (item 4)


@pytest.mark.parametrize(
    "config",
    [
        with_config(source__host=f"http://user:{SECRET}@prometheus.monitoring.svc:9090"),
        with_config(scoring__host=f"http://user:{SECRET}@scorer.svc:8000"),
        # source.type None: source.host is never resolved, but it would still be recorded
        with_config(source={"type": "None", "host": f"https://admin:{SECRET}@internal"}),
        with_config(scoring__path=f"/scoring?token={SECRET}"),
        with_config(source__host=f"http://prometheus:9090/?access_token={SECRET}"),
        with_config(description=f"mirror at http://ops:{SECRET}@mirror.example"),
        with_config(scoring__host=f"ops:{SECRET}@scorer.svc:8000"),
    ],
    ids=[
        "source-host-userinfo",
        "scoring-host-userinfo",
        "source-type-none-host",
        "token-query",
        "access-token-query",
        "url-in-description",
        "bare-userinfo",
    ],
)
def test_config_with_credentials_is_inactive_and_never_recorded_or_printed(
    server: LoopbackServer, tmp_path: Path, config: dict[str, Any]
) -> None:
    root = make_fleet(
        tmp_path,
        {
            "bad": server.route("/bad/config", json_body(config)),
            "good": server.route("/good/config", json_body(CONFIG)),
        },
    )
    code, out, err = cli(root, "sync")
    assert code == 0, err
    text = (root / LOCKFILE).read_text(encoding="utf-8")
    assert SECRET not in text
    assert SECRET not in out + err
    scorers = read_lock(root)["scorers"]
    assert scorers["good"]["health"] == "Active"
    assert scorers["bad"]["health"] == "Inactive"
    assert "carries credentials" in scorers["bad"]["reason"]
    assert "config" not in scorers["bad"]
    assert "Inactive" in err and "carries credentials" in err


def test_a_config_url_with_a_token_is_not_requested_recorded_or_printed(
    server: LoopbackServer, tmp_path: Path
) -> None:
    server.route("/config", json_body(CONFIG))
    url = server.url(f"/config?api_key={SECRET}")
    entry = asyncio.run(sync_lock([scorer("s", url)], Lockfile(), FAST)).lock.scorers["s"]
    assert server.requests == []  # the secret was not handed to whoever answers
    assert entry.health == "Inactive"
    assert entry.configURL == server.url("/config?api_key=***")
    assert SECRET not in entry.reason and "carries credentials" in entry.reason


def test_redirect_locations_with_secrets_are_redacted(server: LoopbackServer) -> None:
    server.route("/config", redirect(f"/next?token={SECRET}"))
    server.route("/next", respond(500, b"no"))
    other = server.route("/cross", redirect(f"http://localhost:{server.port}/x?password={SECRET}"))
    lock = asyncio.run(
        sync_lock(
            [scorer("same", server.url("/config")), scorer("cross", other)],
            Lockfile(),
            SyncSettings(timeoutSeconds=5, retries=0),
        )
    ).lock
    same, cross = lock.scorers["same"], lock.scorers["cross"]
    assert same.reason == f"GET {server.url('/next?token=***')}: HTTP 500"
    assert cross.reason.endswith("/x?password=***) refused")
    assert SECRET not in same.reason + cross.reason


def test_progress_lines_are_redacted() -> None:
    entry = make_entry(
        scorer("s", "http://s.svc/config").spec,
        healthy=False,
        reason=f"GET http://u:{SECRET}@s.svc/config: HTTP 500",
    )
    assert SECRET not in format_progress("s", entry, 1, 1)


def test_a_hand_edited_lockfile_with_credentials_is_an_error_that_hides_them(
    fleet: Path,
) -> None:
    data = read_lock(fleet)
    config = data["scorers"]["sample-scorer"]["config"]
    config["scoring"]["host"] = f"http://user:{SECRET}@sample-scorer:8000"
    (fleet / LOCKFILE).write_text(json.dumps(data), encoding="utf-8")
    code, out, err = cli(fleet, "render")
    assert code == 1
    assert err.splitlines()[0] == (
        "dsf.lock.json:0:0: error: scorers.sample-scorer.config.scoring.host: carries "
        "credentials (a user name or password, or a secret query parameter); refused; run 'dsf-compile sync'"
    )
    assert SECRET not in out + err


# ------------------------------------------------ strings that cannot be kept (item 5)


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"name": "sur\\ud800"}', "name: is not valid Unicode (lone surrogate U+D800)"),
        (
            b'{"description": "red \\u001b[31m alert"}',
            "description: holds the control character U+001B",
        ),
        (
            b'{"scoring": {"params": {"name": "a\\u0000b"}}}',
            "scoring.params.name: holds the control character U+0000",
        ),
    ],
    ids=["lone-surrogate", "escape-sequence", "nul"],
)
def test_one_unencodable_config_leaves_the_others_synced(
    server: LoopbackServer, tmp_path: Path, body: bytes, reason: str
) -> None:
    root = make_fleet(
        tmp_path,
        {
            "bad": server.route("/bad/config", respond(200, body)),
            "good": server.route("/good/config", json_body(CONFIG)),
        },
    )
    code, _, err = cli(root, "sync")
    assert code == 0, err
    scorers = read_lock(root)["scorers"]
    assert scorers["good"]["health"] == "Active"
    assert scorers["bad"]["health"] == "Inactive"
    assert scorers["bad"]["reason"].endswith(f"invalid /config document: {reason}")
    assert "\x1b" not in err and "\x00" not in err and "Traceback" not in err


def test_multi_line_queries_are_kept(server: LoopbackServer) -> None:
    config = with_config(source__params__query="sum by (node) (\n\trate(x[1m])\n)")
    url = server.route("/config", json_body(config))
    entry = asyncio.run(sync_lock([scorer("s", url)], Lockfile(), FAST)).lock.scorers["s"]
    assert entry.health == "Active", entry.reason


# ----------------------------------------------------- tracebacks for bad inputs (item 8)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[" * 100_000, "nested deeper than 64 levels"),
        ('{"version": ' + "9" * 5000 + "}", "a number of 5000 digits"),
        (b'{"version": 1, "scorers": {"x\xff": 1}}', "not UTF-8 text"),
        ('{"version": NaN}', "NaN is not a JSON number"),
    ],
    ids=["deep", "huge-number", "not-utf8", "nan"],
)
def test_a_hostile_lockfile_is_a_located_error(
    fleet: Path, content: str | bytes, message: str
) -> None:
    file = fleet / LOCKFILE
    if isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_text(content, encoding="utf-8")
    code, _, err = cli(fleet, "render")
    assert code == 1, err
    assert err.startswith("dsf.lock.json:1:1: error: cannot read lockfile: ")
    assert message in err.splitlines()[0]
    assert "Traceback" not in err


def test_an_unlistable_scorers_folder_is_a_located_error(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Path.iterdir

    def iterdir(self: Path) -> Iterator[Path]:
        if self.name == "scorers":
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    code, _, err = cli(fleet, "validate")
    assert code == 1
    assert err.splitlines()[0] == "scorers:0:0: error: cannot list the folder: Permission denied"


def test_an_unreadable_scorer_file_is_a_located_error(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.open

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith("sample-scorer.yaml"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)
    code, _, err = cli(fleet, "validate")
    assert code == 1
    assert (
        err.splitlines()[0]
        == "scorers/sample-scorer.yaml:0:0: error: cannot read file: Permission denied"
    )


@pytest.mark.parametrize("kind", ["fifo", "file", "dangling-link"])
def test_something_else_in_place_of_the_scorers_folder(fleet: Path, kind: str) -> None:
    folder = fleet / "scorers"
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()
    if kind == "fifo":
        os.mkfifo(folder)
    elif kind == "file":
        folder.write_text("not a folder\n")
    else:
        folder.symlink_to("nowhere")
    code, _, err = cli(fleet, "validate")
    assert code == 1
    assert err.splitlines()[0] == "scorers:0:0: error: must be a folder"


def test_sync_refuses_a_folder_in_place_of_the_lockfile_before_any_request(
    server: LoopbackServer, tmp_path: Path
) -> None:
    root = make_fleet(tmp_path, {"good": server.route("/config", json_body(CONFIG))})
    (root / LOCKFILE).mkdir()
    code, _, err = cli(root, "sync")
    assert code == 1
    assert err.splitlines()[0] == (
        "dsf.lock.json:0:0: error: must be a regular file (not a link, folder or FIFO): remove it"
    )
    assert server.requests == []


def test_sync_on_a_full_disk_is_one_line_and_keeps_the_old_lockfile(
    server: LoopbackServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = make_fleet(tmp_path, {"good": server.route("/config", json_body(CONFIG))})
    (root / LOCKFILE).write_text('{"version": 1, "scorers": {}}\n')

    def full(prefix: str, suffix: str, *, dir_fd: int) -> tuple[int, str]:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(replacement, "create_new", full)
    code, _, err = cli(root, "sync")
    assert code == 2
    assert err.splitlines()[-1] == (
        "dsf-compile: error: cannot write dsf.lock.json: No space left on device; "
        "the previous lockfile is unchanged"
    )
    assert "Traceback" not in err
    assert (root / LOCKFILE).read_text() == '{"version": 1, "scorers": {}}\n'


@pytest.fixture
def schemas(fleet: Path) -> Path:
    """The example fleet with its schemas/ written."""
    assert cli(fleet, "schemas")[0] == 0
    return fleet


def test_schemas_check_with_a_non_utf8_schema_is_stale(schemas: Path) -> None:
    fleet = schemas
    (fleet / "schemas/dsf-lock.schema.json").write_bytes(b"\xff\xfe not json")
    code, out, err = cli(fleet, "schemas", "--check")
    assert code == 1, err
    assert out == "schemas/dsf-lock.schema.json is stale; run 'dsf-compile schemas'\n"
    assert cli(fleet, "schemas")[0] == 0
    assert cli(fleet, "schemas", "--check")[0] == 0


@pytest.mark.parametrize("check", [True, False], ids=["check", "write"])
def test_schemas_with_a_folder_in_place_of_a_schema(schemas: Path, check: bool) -> None:
    fleet = schemas
    file = fleet / "schemas/dsf-lock.schema.json"
    file.unlink()
    file.mkdir()
    code, _, err = cli(fleet, "schemas", *(["--check"] if check else []))
    assert code == 1
    assert err.splitlines()[0] == (
        "schemas/dsf-lock.schema.json:0:0: error: is a folder; a regular file is expected"
    )


def test_schemas_when_schemas_is_a_file(schemas: Path) -> None:
    fleet = schemas
    folder = fleet / "schemas"
    for file in folder.iterdir():
        file.unlink()
    folder.rmdir()
    folder.write_text("oops\n")
    for argv in (("schemas",), ("schemas", "--check")):
        code, _, err = cli(fleet, *argv)
        assert code == 1
        assert err.splitlines()[0] == "schemas:0:0: error: must be a folder"


# ------------------------------------------------------------------ hangs (item 9)


def _finishes(target: Any, *args: Any) -> Any:
    """Run ``target`` in a thread; fail (instead of hanging the suite) if it blocks."""
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(target(*args)), daemon=True)
    thread.start()
    thread.join(timeout=60)  # generous: the bug is blocking forever
    assert not thread.is_alive(), "blocked (a FIFO opened for reading waits for a writer)"
    return result[0]


@pytest.mark.parametrize(
    ("name", "command", "expected"),
    [
        ("dsf.yaml", "validate", "dsf.yaml:0:0: error: file is a FIFO; a regular file is expected"),
        (
            LOCKFILE,
            "render",
            "dsf.lock.json:0:0: error: lockfile is a FIFO; a regular file is expected; run 'dsf-compile sync'",
        ),
    ],
)
def test_a_fifo_in_place_of_a_file_does_not_block(
    fleet: Path, name: str, command: str, expected: str
) -> None:
    (fleet / name).unlink()
    os.mkfifo(fleet / name)
    code, _, err = _finishes(cli, fleet, command)
    assert code == 1
    assert err.splitlines()[0] == expected


@pytest.mark.parametrize(
    ("name", "command", "expected"),
    [
        (
            "dsf.yaml",
            "validate",
            "dsf.yaml:0:0: error: file is a symbolic link; a regular file is expected",
        ),
        (
            LOCKFILE,
            "render",
            "dsf.lock.json:0:0: error: lockfile is a symbolic link; a regular file is expected; run 'dsf-compile sync'",
        ),
    ],
)
def test_a_link_in_place_of_a_file_is_not_followed(
    fleet: Path, name: str, command: str, expected: str
) -> None:
    target = fleet / f"elsewhere-{name}"
    (fleet / name).rename(target)
    (fleet / name).symlink_to(target.name)
    code, _, err = cli(fleet, command)
    assert code == 1
    assert err.splitlines()[0] == expected


def test_read_regular_file_refuses_without_following(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    refused = _finishes(_raising, read_regular_file, fifo)
    assert isinstance(refused, NotRegularFileError) and "is a FIFO" in str(refused)
    (tmp_path / "file").write_bytes(b"ok")
    (tmp_path / "link").symlink_to("file")
    with pytest.raises(NotRegularFileError, match="symbolic link"):
        read_regular_file(tmp_path / "link", max_bytes=10)
    with pytest.raises(NotRegularFileError, match="is a folder"):
        read_regular_file(tmp_path, max_bytes=10)
    assert read_regular_file(tmp_path / "file", max_bytes=2) == b"ok"


def _raising(function: Any, path: Path) -> Any:
    try:
        return function(path, max_bytes=10)
    except Exception as err:  # handed back to the test thread
        return err


def drip(count: int, interval: float) -> Any:
    """A 200 whose body arrives one byte every ``interval`` seconds."""

    async def handler(
        server: LoopbackServer, request: Request, writer: asyncio.StreamWriter
    ) -> None:
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {count}\r\nConnection: close\r\n\r\n"
        writer.write(head.encode())
        await writer.drain()
        for _ in range(count):
            await asyncio.sleep(interval)
            writer.write(b" ")
            await writer.drain()

    return handler


def test_scorer_check_timeout_covers_a_dripping_answer(server: LoopbackServer) -> None:
    # 60 bytes, 0.1 s apart: every read is well within 1 s, the whole answer is not.
    server.route("/healthz", drip(60, 0.1))
    out, err = io.StringIO(), io.StringIO()
    code = run(["scorer-check", server.url(""), "--timeout", "1"], out, err)
    assert code == 1
    healthz = next(line for line in out.getvalue().splitlines() if " healthz " in line)
    assert healthz.startswith("FAIL healthz")
    assert "no complete answer within 1 s" in healthz


def _mock(config_body: bytes) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/config":
            return httpx.Response(200, content=config_body)
        return httpx.Response(200, json={"results": []})

    return httpx.MockTransport(handler)


def test_scorer_check_deep_config_fails_cleanly() -> None:
    out = io.StringIO()
    ok = run_scorer_check(
        "http://scorer.invalid", token=None, timeout=1, out=out, transport=_mock(b"[" * 100_000)
    )
    assert not ok
    assert "FAIL config" in out.getvalue()
    assert "nested deeper than 64 levels" in out.getvalue()


def test_scorer_check_config_with_credentials_fails_and_hides_them() -> None:
    body = json.dumps({"scoring": {"host": f"http://u:{SECRET}@other.invalid"}}).encode()
    out = io.StringIO()
    assert not run_scorer_check(
        f"http://scorer.invalid/config?token={SECRET}",
        token=None,
        timeout=1,
        out=out,
        transport=_mock(body),
    )
    text = out.getvalue()
    assert "FAIL config" in text and "carries credentials" in text
    assert SECRET not in text


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "0", "soon", "1e9"])
def test_scorer_check_timeout_must_be_a_sane_number(value: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run(["scorer-check", "http://scorer.invalid", "--timeout", value], out, err)
    assert code == 2
    assert "dsf-compile: error: argument --timeout:" in err.getvalue()
    assert "Traceback" not in err.getvalue()
    assert out.getvalue() == ""


# ----------------------------------------------------------- the redaction function


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("GET http://u:p@h:80/c: HTTP 500", "GET http://***@h:80/c: HTTP 500"),
        ("https://token@h/", "https://***@h/"),
        ("u:p@h:9090", "***@h:9090"),
        ("http://h/c?a=1&token=x&b=2", "http://h/c?a=1&token=***&b=2"),
        ("http://h/c?Access_Token=x#f", "http://h/c?Access_Token=***#f"),
        ("http://h/c?api-key=x;password=y", "http://h/c?api-key=***;password=***"),
        (
            "mail ops@example.com about http://h/c?page=2",
            "mail ops@example.com about http://h/c?page=2",
        ),
    ],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text) == expected


def test_terminal_escapes_what_a_terminal_would_act_on() -> None:
    assert terminal("a\x1b[2Jb\u202ec\ud800d\x00") == "a\\x1b[2Jb\\u202ec\\ud800d\\x00"
    assert safe_message("ok: ünïcode ✓") == "ok: ünïcode ✓"


def test_string_problem_allows_text_and_refuses_the_rest() -> None:
    assert string_problem("line one\n\tline two") is None
    assert string_problem("\x85") == "holds the control character U+0085"


def test_load_json_bounds() -> None:
    assert load_json(b'{"a": [1, 2.5, "x"]}') == {"a": [1, 2.5, "x"]}
    assert load_json("[" * 64 + "]" * 64) is not None
    with pytest.raises(ValueError, match="deeper than 64"):
        load_json("[" * 65 + "]" * 65)
    # brackets inside strings do not count
    assert load_json(json.dumps({"q": "[" * 1000})) == {"q": "[" * 1000}
    with pytest.raises(ValueError, match="out of range"):
        load_json("1e400")


@pytest.mark.timeout(60)
def test_an_unclosed_string_of_escaped_quotes_is_refused_in_linear_time() -> None:
    # Retrying the string pattern from every escaped quote made this quadratic: 40,000
    # escapes took 22 s, these 400,000 would take half an hour; now well under a second.
    hostile = '["' + '\\"' * 400_000
    with pytest.raises(ValueError):
        load_json(hostile)
    assert load_json('{"a": "x\\"y]", "b": [[1]]}') == {"a": 'x"y]', "b": [[1]]}


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ({"a": ["x", {"b": 1.5, "c": None}], "d": True}, None),
        ({"a": ["x", {"b": "bad\x00"}]}, "a[1].b: holds the control character U+0000"),
        ({"a": {"bad\x01key": 1}}, "a.bad\x01key: holds the control character U+0001"),
        (
            [1, "http://u:p@h/"],
            "[1]: carries credentials (a user name or password, or a secret query parameter); "
            "refused",
        ),
        ("\ud800", "(document): is not valid Unicode (lone surrogate U+D800)"),
        ({"z": "ok", "a": "\x7f"}, "a: holds the control character U+007F"),
    ],
)
def test_first_string_problem_names_the_first_string_that_cannot_be_kept(
    value: Any, found: str | None
) -> None:
    assert first_string_problem(value) == found
