"""``sync`` sends its requests while it validates the rest of the fleet, and encodes each
scorer's entry as it comes.

The fetch starts in a thread of its own once the scorers and ``dsf.yaml``'s ``sync``
section validate on their own; the command's outcome is the one it had when it validated
everything first: the same problems and exit code for an invalid fleet (the requests
cancelled, nothing written, no thread left behind), the same refusals before any request,
each scorer fetched once and reported, in the command's own thread, as it finished.
"""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.pipeline.sync import sync_fleet
from dsf_compile.sync import background
from dsf_compile.sync.lock import (
    LOCKFILE,
    LockEntry,
    Lockfile,
    LockfileText,
    encode_lockfile,
    make_entry,
)
from dsf_contract.scoring_api import ScorerConfig
from tests.sync_fleet import CONFIG, SCORER_YAML, make_fleet, scorer
from tests.sync_servers import LoopbackServer, hang, json_body

#: A cluster file that reads as YAML but does not validate: a problem only the whole
#: fleet's validation finds, after the requests have started.
BAD_CLUSTER = """\
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
metadata:
  name: Not_A_Name
"""


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def as_validate_says(root: Path, err: str) -> bool:
    """``err`` is what ``validate`` prints for ``root``, and that sync wrote nothing."""
    said = cli(root, "validate")[2].splitlines()
    return err.splitlines() == [*said[:-1], f"{said[-1]}; nothing was written"]


def fails_as_invalid_before_any_request(
    root: Path, server: LoopbackServer, started: list[int]
) -> None:
    """``sync`` exits 1 with what ``validate`` says, and no fetch or request started."""
    code, _, err = cli(root, "sync")
    assert code == 1
    assert as_validate_says(root, err), err
    assert started == []
    assert server.requests == []


def fetch_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sync-fetch"]


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many fetches started before the fleet was validated."""
    count: list[int] = []
    start = background.BackgroundFetch.__init__

    def counted(self: background.BackgroundFetch, fetch: Any) -> None:
        count.append(1)
        start(self, fetch)

    monkeypatch.setattr(background.BackgroundFetch, "__init__", counted)
    return count


def fleet(root: Path, server: LoopbackServer, names: tuple[str, ...], path: str) -> Path:
    make_fleet(root, {name: server.url(path) for name in names})
    (root / "clusters").mkdir()
    return root


def test_each_scorer_is_fetched_once_and_reported_in_the_commands_thread(
    tmp_path: Path, server: LoopbackServer, started: list[int]
) -> None:
    server.route("/config", json_body(CONFIG))
    root = fleet(tmp_path, server, ("a", "b", "c"), "/config")
    seen: list[tuple[str, int, int, threading.Thread]] = []

    def progress(name: str, entry: LockEntry, done: int, total: int) -> None:
        seen.append((name, done, total, threading.current_thread()))

    synced = sync_fleet(root, names=(), resolve=(), progress=progress)
    assert started == [1]
    assert synced.active == 3 and synced.lockfile_changed
    assert sorted(name for name, *_ in seen) == ["a", "b", "c"]
    assert [(done, total) for _, done, total, _ in seen] == [(1, 3), (2, 3), (3, 3)]
    assert {thread for *_, thread in seen} == {threading.current_thread()}
    assert server.hits("/config") == 3
    assert fetch_threads() == []


def test_an_invalid_fleet_fails_as_validate_says_its_requests_cancelled(
    tmp_path: Path, server: LoopbackServer, started: list[int]
) -> None:
    server.route("/hang", hang())
    root = fleet(tmp_path, server, ("a", "b"), "/hang")
    (root / "dsf.yaml").write_text("sync:\n  timeoutSeconds: 600\n  retries: 0\n")
    (root / "clusters" / "inventory.yaml").write_text(BAD_CLUSTER)
    code, out, err = cli(root, "sync")
    assert started == [1]  # the requests were on their way
    assert code == 1
    assert as_validate_says(root, err), err
    assert "clusters/inventory.yaml:4:3: error: metadata.name" in err
    assert "Traceback" not in out + err
    assert not (root / LOCKFILE).exists()
    assert fetch_threads() == []


def test_a_failure_while_the_answers_come_cancels_the_requests_still_in_flight(
    tmp_path: Path, server: LoopbackServer
) -> None:
    server.route("/config", json_body(CONFIG))
    server.route("/hang", hang())
    root = fleet(tmp_path, server, ("a",), "/config")
    (root / "scorers" / "b.yaml").write_text(SCORER_YAML.format(name="b", url=server.url("/hang")))
    (root / "dsf.yaml").write_text("sync:\n  timeoutSeconds: 600\n  retries: 0\n")

    def progress(name: str, entry: LockEntry, done: int, total: int) -> None:
        raise BrokenPipeError(name)  # the terminal went away

    with pytest.raises(BrokenPipeError, match=r"^a$"):
        sync_fleet(root, names=(), resolve=(), progress=progress)
    assert not (root / LOCKFILE).exists()
    assert fetch_threads() == []


def test_an_invalid_fleet_comes_before_a_refusal_and_no_request_starts(
    tmp_path: Path, server: LoopbackServer, started: list[int]
) -> None:
    server.route("/config", json_body(CONFIG))
    root = fleet(tmp_path, server, ("a",), "/config")
    (root / LOCKFILE).mkdir()
    (root / "clusters" / "inventory.yaml").write_text(BAD_CLUSTER)
    fails_as_invalid_before_any_request(root, server, started)
    (root / "clusters" / "inventory.yaml").unlink()
    code, _, err = cli(root, "sync")
    assert (code, err.splitlines()[0]) == (
        1,
        "dsf.lock.json:0:0: error: must be a regular file (not a link, folder or FIFO): remove it",
    )
    assert server.requests == []


@pytest.mark.parametrize(
    "settings",
    [
        "sync:\n  concurrency: 0\n",
        "sync: [not, a, mapping]\n",
        "sync:\n  allowedHosts: ['*.svc']\n  unknownKey: 1\n",
        "[not, a, mapping]\n",
    ],
)
def test_a_sync_section_that_does_not_validate_starts_no_request(
    tmp_path: Path, server: LoopbackServer, started: list[int], settings: str
) -> None:
    server.route("/config", json_body(CONFIG))
    root = fleet(tmp_path, server, ("a",), "/config")
    (root / "dsf.yaml").write_text(settings)
    fails_as_invalid_before_any_request(root, server, started)


def test_a_scorer_that_does_not_validate_starts_no_request(
    tmp_path: Path, server: LoopbackServer, started: list[int]
) -> None:
    server.route("/config", json_body(CONFIG))
    root = fleet(tmp_path, server, ("a", "b"), "/config")
    bad = root / "scorers" / "b.yaml"
    bad.write_text(bad.read_text().replace("configSyncMode: Full", "configSyncMode: Sometimes"))
    fails_as_invalid_before_any_request(root, server, started)


def test_an_unknown_name_is_refused_as_before(
    tmp_path: Path, server: LoopbackServer, started: list[int]
) -> None:
    server.route("/config", json_body(CONFIG))
    root = fleet(tmp_path, server, ("a",), "/config")
    code, _, err = cli(root, "sync", "zzz")
    assert started == [1]
    assert code == 2
    assert "no such scorer: zzz" in err and "Traceback" not in err
    assert server.requests == []
    assert not (root / LOCKFILE).exists()
    assert fetch_threads() == []


# ------------------------------------------------- the lockfile's text, entry by entry


def whole_dump(lock: Lockfile) -> str:
    data = lock.model_dump(mode="json", exclude_none=True)
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def test_the_lockfile_text_of_its_entries_is_the_whole_files_dump() -> None:
    config = ScorerConfig.model_validate(CONFIG)
    entries = {
        "b-active": make_entry(
            scorer("b-active", "http://h/config").spec, healthy=True, config=config
        ),
        "a-inactive": make_entry(
            scorer("a-inactive", "http://h/c").spec, healthy=False, reason="GET …: «timed out»\t"
        ),
        "c-health": make_entry(scorer("c-health", "http://h/c", mode="None").spec, healthy=True),
    }
    lock = Lockfile(scorers=entries)
    assert encode_lockfile(lock) == whole_dump(lock)
    for added in ([], ["a-inactive"], list(entries)):
        text = LockfileText()
        for name in added:
            text.add(name, entries[name])
        assert encode_lockfile(lock, text) == whole_dump(lock)
    # an entry replaced since it was added is encoded again
    text = LockfileText()
    text.add("b-active", entries["a-inactive"])
    assert encode_lockfile(lock, text) == whole_dump(lock)
    text.add("gone", entries["a-inactive"])
    assert encode_lockfile(Lockfile(), text) == whole_dump(Lockfile())
