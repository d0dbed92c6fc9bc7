"""Crash safety: every command that writes files, killed at many moments (``SIGKILL`` on
the real command), leaves the previous files or the new ones, and the next run removes
whatever the killed one left, saying so (``dsf_compile.edges.journal``).

Two kinds of test: the real commands killed at a seeded spread of moments over a run of
the same command measured here (``tests/kill_harness.py``), and, in-process, a "kill"
(an exception nothing catches) at every single file operation of an update, so that
every step of the protocol is covered whatever the machine's speed.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run as cli_run
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.replacement import replace_files
from dsf_compile.errors import WriteError
from dsf_compile.render.write import compare_tree, write_tree
from tests import kill_harness as harness
from tests.file_faults import fail_at
from tests.fleet_repo import copy_fleet
from tests.sync_servers import LoopbackServer

SEED = 31
SCOPE = Ownership.files("schemas", [f"s{i}.json" for i in range(4)])
KILLS = 4


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def spread(scenario: harness.Scenario, scratch: Path, kills: int = KILLS) -> harness.Tally:
    """Kill the command at ``kills`` moments of its run; the tally accounts for each."""
    start, whole = harness.measure(scenario, scratch)
    delays = harness.moments(SEED, kills, start, whole)
    tally = harness.kill_and_recover(scenario, scratch, delays)
    assert tally.accounts_for(kills), tally.line()
    print(tally.line())
    return tally


# ---------------------------------------------------------------- render


def test_render_killed_at_many_moments(tmp_path: Path) -> None:
    scenario = harness.render_scenario(tmp_path, clusters=20, scorers=4)
    spread(scenario, tmp_path, kills=6)


# ---------------------------------------------------------------- schemas, optimize


def test_schemas_killed_at_many_moments(tmp_path: Path) -> None:
    before = copy_fleet(tmp_path / "before", with_rendered=False)
    assert cli(before, "schemas")[0] == 0
    new = harness.files_under(before, ("schemas",))
    for file in (before / "schemas").iterdir():  # every schema stale: all are rewritten
        file.write_text(file.read_text().replace('"type"', '"type" ', 1))
    old = harness.files_under(before, ("schemas",))
    scenario = harness.Scenario(("schemas",), before, ("schemas",), old, new)
    spread(scenario, tmp_path)


def test_optimize_killed_at_many_moments(tmp_path: Path) -> None:
    pytest.importorskip("scipy.optimize")
    before = copy_fleet(tmp_path / "before", with_rendered=False)
    outputs = ("placements/optimized",)
    new = harness.files_under(before, outputs)
    plan = before / "placements/optimized/default-gpu-apps.yaml"
    plan.write_text(plan.read_text().replace("objective", "objective-before", 1))
    old = harness.files_under(before, outputs)
    argv = ("optimize", "--scores", str(before / "snapshots"), "--at", "2026-11-22T10:00:00Z")
    scenario = harness.Scenario(argv, before, outputs, old, new)
    spread(scenario, tmp_path)


# ---------------------------------------------------------------- sync, sync --clusters


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def test_sync_killed_at_many_moments(tmp_path: Path, server: LoopbackServer) -> None:
    spread(harness.sync_scenario(tmp_path, server, scorers=20), tmp_path)


def test_sync_clusters_killed_at_many_moments(tmp_path: Path) -> None:
    from tests.hub_kube import HubKube

    hub = HubKube()
    hub.start()
    try:
        root = copy_fleet(tmp_path / "before", with_rendered=False)
        (root / "clusters" / "inventory.yaml").unlink()
        kubeconfig = tmp_path / "hub.kubeconfig"
        kubeconfig.write_text(hub.kubeconfig("HUB-TOKEN"), encoding="utf-8")
        for name in ("worker01", "worker02", "edge01"):
            hub.add_cluster(name, labels={"region": "eu-west", "gpu": "false"})
        argv = ("sync", "--clusters", "--hub-kubeconfig", str(kubeconfig))
        assert cli(root, *argv)[0] == 0
        outputs = ("clusters",)
        old = harness.files_under(root, outputs)
        hub.add_cluster("worker03", labels={"region": "us-east", "gpu": "false"})
        after = tmp_path / "after"
        shutil.copytree(root, after)
        assert cli(after, *argv)[0] == 0
        new = harness.files_under(after, outputs)
        assert new != old
        scenario = harness.Scenario(argv, root, outputs, old, new)
        spread(scenario, tmp_path)
    finally:
        hub.stop()


# ---------------------------------------------------------------- every step, in-process


class Killed(BaseException):
    """A kill: nothing catches it (no rollback runs), as nothing runs after SIGKILL."""


_STEPS = ("open", "replace", "rename", "link", "unlink", "mkdir", "rmdir", "fsync", "fdopen")


def _kill_at(monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, int]:
    """Make the ``n``-th file operation of the kinds in _STEPS a kill."""
    return fail_at(monkeypatch, n, Killed, _STEPS)


OLD = {"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "c.yaml": "c: 1\n", "d/x.yaml": "x: 1\n"}
NEW = {"a.yaml": "a: 2\n", "b.yaml": "b: 1\n", "e/new.yaml": "e: 2\n", "e/f/g.yaml": "g\n"}


def _tree(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): "dir" if p.is_dir() else p.read_text()
        for p in sorted(folder.rglob("*"))
    }


def test_render_killed_at_every_step_finishes_or_undoes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old_tree, new_tree = tmp_path / "old", tmp_path / "new"
    write_tree(old_tree, OLD)
    write_tree(new_tree, NEW)
    outcomes: dict[str, int] = {}
    n = 0
    while True:
        n += 1
        folder = tmp_path / f"run{n}"
        write_tree(folder, OLD)
        with monkeypatch.context() as patch:
            calls = _kill_at(patch, n)
            with contextlib.suppress(Killed):
                write_tree(folder, NEW)
        if calls["n"] < n:  # not killed: every step has been tried
            assert _tree(folder) == _tree(new_tree)
            break
        left = harness.debris({p: b"" for p in _tree(folder)})
        if not left:  # old or new, whole
            assert _tree(folder) in (_tree(old_tree), _tree(new_tree)), f"step {n}"
        checked = compare_tree(folder, NEW)
        assert checked.empty == (_tree(folder) == _tree(new_tree)), f"step {n}"
        if n % 2:  # the next render, with the new files
            changes = write_tree(folder, NEW)
            assert _tree(folder) == _tree(new_tree), f"step {n}"
        else:  # or the way back
            changes = write_tree(folder, OLD)
            assert _tree(folder) == _tree(old_tree), f"step {n}"
        action = changes.recovery.action or ("swept" if changes.recovery.removed else "none")
        assert bool(left) == changes.recovery.found, f"step {n}: {left}"
        outcomes[action] = outcomes.get(action, 0) + 1
    # every kind of kill happened: before the journal, while staging, while renaming
    assert {"none", "undone", "finished"} <= set(outcomes), outcomes


def test_several_files_killed_at_every_step_are_old_or_new(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = {f"s{i}.json": f"old {i}\n".encode() for i in range(4)}
    new = {f"s{i}.json": f"new {i}\n".encode() for i in range(4)}
    n = 0
    while True:
        n += 1
        folder = tmp_path / f"run{n}"
        replace_files(folder, old, label="schemas", error=WriteError, scope=SCOPE)
        with monkeypatch.context() as patch:
            calls = _kill_at(patch, n)
            with contextlib.suppress(Killed):
                replace_files(folder, new, label="schemas", error=WriteError, scope=SCOPE)
        if calls["n"] < n:
            break
        seen = {p.name: p.read_bytes() for p in folder.iterdir()}
        if not harness.debris(dict(seen)):
            assert seen in (old, new), f"step {n}"
        again = replace_files(folder, new, label="schemas", error=WriteError, scope=SCOPE)
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == new, f"step {n}"
        assert again.recovery.found == bool(harness.debris(dict(seen)))
    assert n > 10


# ---------------------------------------------------------------- what the user sees


def test_check_names_the_debris_and_writes_nothing_then_render_recovers(
    tmp_path: Path,
) -> None:
    root = copy_fleet(tmp_path / "fleet")
    assert cli(root, "render")[0] == 0  # the no-op cache vouches for this tree ...
    assert cli(root, "render", "--check")[0] == 0
    rendered = root / "rendered"  # ... but never for one with a journal
    staged = rendered / "hub" / ".kustomization.yaml.0123456789ab.dsf-tmp"
    staged.write_text("half\n")
    (rendered / ".dsf-journal").write_text('{"journal": 1, "state": "staging", "folders": []}\n')
    before = harness.files_under(root, ("rendered",))
    code, _, err = cli(root, "render", "--check")
    assert code == 2  # a tree a killed render left: nothing it can compare with
    # each one an error at its path (a record with --format json)
    assert [line.partition(": error: ")[0] for line in err.splitlines()[:2]] == [
        "rendered/.dsf-journal:0:0",
        "rendered/hub/.kustomization.yaml.0123456789ab.dsf-tmp:0:0",
    ]
    assert "'dsf-compile render' finishes or undoes its own" in err
    code, out, _ = cli(root, "render", "--check", "--format", "json")
    assert code == 2
    assert [p["path"] for p in json.loads(out)["problems"]] == [
        "rendered/.dsf-journal",
        "rendered/hub/.kustomization.yaml.0123456789ab.dsf-tmp",
    ]
    assert harness.files_under(root, ("rendered",)) == before
    code, _, err = cli(root, "render")
    assert code == 0, err
    assert err.splitlines()[0] == (
        "dsf-compile: recovered rendered/ after an interrupted dsf-compile: undid its update "
        "(it was killed while staging the new files, before any file was replaced); removed "
        "1 temporary file(s) of its own (rendered/hub/.kustomization.yaml.0123456789ab.dsf-tmp); "
        "removed its journal rendered/.dsf-journal"
    )
    assert not harness.debris(harness.files_under(root, ("rendered",)))
    assert cli(root, "render", "--check")[0] == 0


def test_a_planted_journal_is_not_trusted(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    rendered = root / "rendered"
    outside = tmp_path / "outside.yaml"
    outside.write_text("mine\n")
    planted = {
        "journal": 1,
        "state": "commit",
        "renames": [["../../outside.yaml", ".outside.yaml.0123456789ab.dsf-tmp", ""]],
        "removals": [["kustomization.yaml", "../x"]],
    }
    (rendered / ".dsf-journal").write_text(json.dumps(planted))
    before = harness.files_under(root, ("rendered",))
    # refused, located at each entry; nothing touched, the journal kept for a look
    code, _, err = cli(root, "render")
    assert code == 1, err
    assert err.splitlines()[:2] == [
        "rendered/.dsf-journal:1:1: error: removals[0]: its backup name is not one dsf gives "
        "kustomization.yaml: a journal dsf-compile did not write for this command; nothing "
        "was touched (remove rendered/.dsf-journal if no dsf-compile was killed here)",
        "rendered/.dsf-journal:1:1: error: renames[0]: names something that is not a path "
        "inside this folder: a journal dsf-compile did not write for this command; nothing "
        "was touched (remove rendered/.dsf-journal if no dsf-compile was killed here)",
    ]
    assert outside.read_text() == "mine\n"
    assert harness.files_under(root, ("rendered",)) == before
    # a journal that is not even JSON names nothing: undone, and said so
    (rendered / ".dsf-journal").write_text("{half")
    code, _, err = cli(root, "render")
    assert code == 0, err
    assert "undid its update (its journal is not one dsf wrote in full" in err
    assert cli(root, "render", "--check")[0] == 0


def test_sync_and_schemas_remove_what_a_killed_run_left(
    tmp_path: Path, server: LoopbackServer
) -> None:
    scenario = harness.sync_scenario(tmp_path, server, scorers=2)
    root = scenario.template
    planted = root / ".dsf.lock.json.0123456789ab.dsf-tmp"
    planted.write_text("half")
    code, _, err = cli(root, "sync")
    assert code == 0, err
    assert (
        "dsf-compile: recovered the repository's folder after an interrupted dsf-compile: "
        "removed 1 temporary file(s) of its own (.dsf.lock.json.0123456789ab.dsf-tmp)\n"
    ) in err
    assert not planted.exists()
    assert cli(root, "schemas")[0] == 0
    staged = root / "schemas" / ".summaries.schema.json.0123456789ab.dsf-old"
    staged.write_text("old")
    code, _, err = cli(root, "schemas")
    assert code == 0
    assert "recovered schemas/ after an interrupted dsf-compile: removed 1" in err
    assert not staged.exists()
