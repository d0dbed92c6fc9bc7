"""The unreachable-fleet guard of ``sync`` (``docs/gitops.md``, "Bootstrap").

Real scorers on loopback (:mod:`tests.sync_servers`); a scorer is made unreachable the way
a runner outside the fleet's network meets it: its name resolves (``--resolve``) to a
port where nothing listens (connection refused), its server never answers (timeout), or
its name does not resolve at all.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.sync.guard import unreachable_fleet
from dsf_compile.sync.lock import LOCKFILE, Lockfile, make_entry
from tests import sync_fleet
from tests.fleet_repo import REPO_ROOT
from tests.sync_fleet import CONFIG, scorer
from tests.sync_servers import LoopbackServer, free_port, hang, json_body, respond

NAMES = ("s1", "s2", "s3", "s4", "s5")
SETTINGS = "sync:\n  timeoutSeconds: 2\n  retries: 0\n"


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        srv.route("/config", json_body(CONFIG))
        yield srv


def make_fleet(root: Path, names: tuple[str, ...] = NAMES, settings: str = SETTINGS) -> Path:
    # the URLs name the fleet's hosts; --resolve says where they are this time
    sync_fleet.make_fleet(
        root, {name: f"http://{name}.fleet.example:8000/config" for name in names}
    )
    (root / "clusters").mkdir()
    (root / "dsf.yaml").write_text(settings)
    return root


def resolve(live: int, down: tuple[str, ...] = (), names: tuple[str, ...] = NAMES) -> list[str]:
    """``--resolve`` flags: the ``down`` scorers to a port nobody listens on, the rest live."""
    dead = free_port()
    return [
        f"--resolve={name}.fleet.example:8000:127.0.0.1:{dead if name in down else live}"
        for name in names
    ]


def sync(root: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "sync", *argv], out, err)
    return code, err.getvalue()


@pytest.fixture
def synced(tmp_path: Path, server: LoopbackServer) -> Path:
    """A fleet whose five scorers are Active in its lockfile."""
    root = make_fleet(tmp_path / "fleet")
    code, err = sync(root, *resolve(server.port))
    assert code == 0 and "5 Active, 0 Inactive" in err, err
    return root


def health(root: Path) -> dict[str, str]:
    lock = Lockfile.model_validate_json((root / LOCKFILE).read_text(encoding="utf-8"))
    return {name: entry.health for name, entry in lock.scorers.items()}


def test_a_runner_that_reaches_no_scorer_writes_nothing_and_exits_1(
    synced: Path, server: LoopbackServer
) -> None:
    # Issue 17 row 14, as the scheduled job runs it: a subprocess, every scorer refused.
    before = (synced / LOCKFILE).read_bytes()
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    env.pop("GITHUB_ACTIONS", None)
    command = [sys.executable, "-m", "dsf_compile", "--root", str(synced), "sync"]
    done = subprocess.run(
        [*command, *resolve(server.port, down=NAMES)],
        capture_output=True,
        text=True,
        timeout=120,  # a hang guard, not a measure
        env=env,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert (synced / LOCKFILE).read_bytes() == before
    lines = done.stderr.splitlines()
    assert lines[:5] == [
        f"scorers/{name}.yaml:7:3: error: spec.configURL: not reached: "
        f"GET http://{name}.fleet.example:8000/config: connection refused"
        for name in NAMES
    ]
    assert lines[5:] == [
        "dsf-compile: error: 5 of the 5 scorer(s) Active in dsf.lock.json could not be "
        "reached: this machine does not seem to reach the scorers; dsf.lock.json was not "
        "changed (run sync where they are reachable, or pass --allow-mass-failure to record "
        "them Inactive; sync.maxUnreachableFraction is 0.5)"
    ]
    assert "Traceback" not in done.stderr


def test_allow_mass_failure_records_them_inactive_once(
    synced: Path, server: LoopbackServer
) -> None:
    code, err = sync(synced, "--allow-mass-failure", *resolve(server.port, down=NAMES))
    assert code == 0, err
    assert "0 Active, 5 Inactive; dsf.lock.json updated" in err
    assert set(health(synced).values()) == {"Inactive"}
    # once: the next sync is guarded again, and with nothing Active there is nothing to lose
    code, err = sync(synced, *resolve(server.port, down=NAMES))
    assert code == 0 and "0 Active, 5 Inactive; dsf.lock.json unchanged" in err


def test_one_scorer_down_while_the_others_answer_goes_inactive(
    synced: Path, server: LoopbackServer
) -> None:
    code, err = sync(synced, *resolve(server.port, down=("s3",)))
    assert code == 0, err
    assert health(synced) == {n: "Inactive" if n == "s3" else "Active" for n in NAMES}


@pytest.mark.parametrize(
    ("fraction", "tripped"),
    [("0.5", True), ("0.6", False), ("0", True), ("1", False)],
)
def test_the_fraction_is_a_setting(
    synced: Path, server: LoopbackServer, fraction: str, tripped: bool
) -> None:
    (synced / "dsf.yaml").write_text(SETTINGS + f"  maxUnreachableFraction: {fraction}\n")
    before = (synced / LOCKFILE).read_bytes()
    code, err = sync(synced, *resolve(server.port, down=("s1", "s2", "s3")))  # 3 of 5
    assert code == (1 if tripped else 0), err
    assert ((synced / LOCKFILE).read_bytes() == before) is tripped
    if tripped:
        assert "3 of the 5 scorer(s) Active in dsf.lock.json could not be reached" in err


def test_http_errors_are_answers_not_unreachability(synced: Path, server: LoopbackServer) -> None:
    server.route("/config", respond(500, b"down for maintenance"))
    code, err = sync(synced, *resolve(server.port))
    assert code == 0, err
    assert set(health(synced).values()) == {"Inactive"}


def test_a_timeout_counts_as_unreachable(synced: Path, server: LoopbackServer) -> None:
    server.route("/config", hang())
    code, err = sync(synced, *resolve(server.port))
    assert code == 1
    assert "timed out after 2 s" in err and "does not seem to reach the scorers" in err
    assert set(health(synced).values()) == {"Active"}


def test_a_name_that_does_not_resolve_counts_as_unreachable(
    synced: Path, server: LoopbackServer
) -> None:
    # no --resolve: the names are under example (RFC 2606), which no resolver answers for;
    # a machine without DNS times out instead, which counts the same
    code, err = sync(synced)
    assert code == 1, err
    assert "does not seem to reach the scorers" in err
    assert set(health(synced).values()) == {"Active"}


def test_sync_of_named_scorers_counts_only_those(synced: Path, server: LoopbackServer) -> None:
    # one named, unreachable: one of one; the others were not contacted and say nothing
    code, err = sync(synced, "s1", *resolve(server.port, down=("s1",)))
    assert code == 1 and "1 of the 1 scorer(s) Active" in err
    # two named, one unreachable: half, not more than half
    code, err = sync(synced, "s1", "s2", *resolve(server.port, down=("s1",)))
    assert code == 0, err
    assert health(synced) == {n: "Inactive" if n == "s1" else "Active" for n in NAMES}


def entries(**health: str) -> Lockfile:
    spec = scorer("x", "http://x.example/config").spec
    return Lockfile(
        scorers={
            name: make_entry(
                spec, healthy=state == "Active", reason="" if state == "Active" else "r"
            )
            for name, state in health.items()
        }
    )


@pytest.mark.parametrize(
    ("previous", "unreachable", "fraction", "lost"),
    [
        (entries(a="Active"), {"a"}, 0.5, ("a",)),  # one Active scorer: nothing tells them apart
        (entries(a="Active", b="Active"), {"a"}, 0.5, ()),  # half is not more than half
        (entries(a="Active", b="Active"), {"a", "b"}, 0.5, ("a", "b")),
        (entries(a="Inactive", b="Inactive"), {"a", "b"}, 0.5, ()),  # nothing to lose
        (entries(a="Active", b="Inactive", c="Inactive"), {"b", "c"}, 0.5, ()),
        (entries(), {"new"}, 0.5, ()),  # a new scorer has no entry to lose
        (entries(a="Active"), {"a"}, 1.0, ()),  # 1 turns the guard off
        (entries(a="Active", b="Active", c="Active"), {"c"}, 0.0, ("c",)),  # 0: any loss
    ],
)
def test_the_guard_counts_active_scorers_lost_to_connection_failures(
    previous: Lockfile, unreachable: set[str], fraction: float, lost: tuple[str, ...]
) -> None:
    refreshed = set(previous.scorers) | unreachable
    assert unreachable_fleet(previous, refreshed, unreachable, fraction)[0] == lost


def test_the_fraction_is_validated(tmp_path: Path) -> None:
    root = make_fleet(tmp_path / "fleet", settings="sync:\n  maxUnreachableFraction: 1.5\n")
    out, err = io.StringIO(), io.StringIO()
    assert run(["--root", str(root), "validate"], out, err) == 1
    assert "dsf.yaml:2:3: error: sync.maxUnreachableFraction: must be <= 1.0" in err.getvalue()
