"""A journal names only what its command writes; debris is flagged; recovery names what it touched.

Issue 35 row 17: a committed ``.dsf-journal`` beside a planted ``*.dsf-tmp`` passed
``validate --strict`` and ``render --check``; the next ``sync`` "finished" it, deleting a
Placement and replacing the inventory, and said it removed 0 temporary files.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsf_compile.commands.cli import run as cli_run
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.replacement import replace_files
from dsf_compile.errors import InputError, SyncError
from tests import kill_harness as harness
from tests.fleet_repo import copy_fleet
from tests.sync_servers import LoopbackServer

HEX = "0123456789ab"
PLANTED_INVENTORY = "kind: ManagedCluster\nmetadata: {name: intruder}\n"


def cli(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cli_run(["--root", str(root), *argv], out, err)
    return code, out.getvalue(), err.getvalue()


def plant(root: Path) -> dict[str, bytes]:
    """The issue's plant: a committed journal at the top that removes a Placement and
    moves a staged inventory into place; returns every file as it was."""
    staged = root / "clusters" / f".inventory.yaml.{HEX}.dsf-tmp"
    staged.write_text(PLANTED_INVENTORY)
    journal = {
        "journal": 1,
        "state": "commit",
        "renames": [["clusters/inventory.yaml", staged.name, ""]],
        "removals": [["placements/green-batch.yaml", f".green-batch.yaml.{HEX}.dsf-old"]],
    }
    (root / ".dsf-journal").write_text(json.dumps(journal))
    return snapshot(root)


def snapshot(root: Path) -> dict[str, bytes]:
    return harness.files_under(root, ("clusters", "placements", "scorers", ".dsf-journal"))


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer() as srv:
        yield srv


def test_validate_and_check_flag_a_committed_journal_and_debris(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    assert cli(root, "render", "--check")[0] == 0  # the no-op cache vouches for it now
    before = plant(root)
    code, _, err = cli(root, "validate", "--strict")
    assert code == 1, err
    assert ".dsf-journal:0:0: error: " in err
    assert f"clusters/.inventory.yaml.{HEX}.dsf-tmp:0:0: error: " in err
    code, _, err = cli(root, "render", "--check")
    assert code != 0, err
    assert ".dsf-journal:0:0: error: " in err
    assert f"clusters/.inventory.yaml.{HEX}.dsf-tmp:0:0: error: " in err
    code, out, _ = cli(root, "validate", "--format", "json")
    problems = {p["path"] for p in json.loads(out)["problems"] if p["severity"] == "error"}
    assert {".dsf-journal", f"clusters/.inventory.yaml.{HEX}.dsf-tmp"} <= problems
    assert snapshot(root) == before


def test_debris_anywhere_is_flagged(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "docs" / "deep" / f".notes.md.{HEX}.dsf-old").write_text("x")
    (root / "schemas").mkdir()
    (root / "schemas" / ".dsf-journal").write_text("{}")
    code, _, err = cli(root, "validate")
    assert code == 1
    assert f"docs/deep/.notes.md.{HEX}.dsf-old:0:0: error: " in err
    assert "schemas/.dsf-journal:0:0: error: " in err


def test_sync_refuses_a_journal_naming_what_it_does_not_write(
    tmp_path: Path, server: LoopbackServer
) -> None:
    scenario = harness.sync_scenario(tmp_path, server, scorers=2)
    root = scenario.template
    (root / "placements").mkdir()
    (root / "placements" / "green-batch.yaml").write_text("# a Placement\n")
    (root / "clusters" / "inventory.yaml").write_text("# the inventory\n")
    before = plant(root)
    lockfile = (root / "dsf.lock.json").read_bytes()
    asked = server.hits("/config")
    code, _, err = cli(root, "sync", "--allow-mass-failure")
    assert code == 1, err
    assert server.hits("/config") == asked  # refused before any request
    assert err.splitlines() == [
        ".dsf-journal:1:1: error: removals[0]: names placements/green-batch.yaml, which "
        "'sync' never writes here (it writes dsf.lock.json): a journal dsf-compile did not "
        "write for this command; nothing was touched (remove .dsf-journal if no dsf-compile "
        "was killed here)",
        ".dsf-journal:1:1: error: renames[0]: names clusters/inventory.yaml, which 'sync' "
        "never writes here (it writes dsf.lock.json): a journal dsf-compile did not write "
        "for this command; nothing was touched (remove .dsf-journal if no dsf-compile was "
        "killed here)",
        "dsf-compile: 2 error(s); nothing was written",
    ]
    assert snapshot(root) == before
    assert (root / "dsf.lock.json").read_bytes() == lockfile


@pytest.mark.parametrize(
    ("folder", "owned", "planted"),
    [
        ("clusters", "discovered.yaml", "inventory.yaml"),
        ("schemas", "summaries.schema.json", "notes.txt"),
    ],
)
def test_each_command_recovers_only_its_own_files(
    tmp_path: Path, folder: str, owned: str, planted: str
) -> None:
    base = tmp_path / folder
    base.mkdir()
    (base / planted).write_text("keep\n")
    staged = f".{planted}.{HEX}.dsf-tmp"
    (base / staged).write_text("planted\n")
    journal = {"journal": 1, "state": "commit", "renames": [[planted, staged, ""]], "removals": []}
    (base / ".dsf-journal").write_text(json.dumps(journal))
    with pytest.raises(InputError) as raised:
        scope = Ownership.files("a command", [owned])
        replace_files(base, {owned: b"new\n"}, label=folder, error=SyncError, scope=scope)
    (problem,) = raised.value.problems
    assert (problem.path, problem.line, problem.field) == (
        f"{folder}/.dsf-journal",
        1,
        "renames[0]",
    )
    assert (base / planted).read_text() == "keep\n"
    assert (base / staged).exists() and (base / ".dsf-journal").exists()
    assert not (base / owned).exists()


def test_recovery_names_every_file_it_touched(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    assert cli(root, "render")[0] == 0
    hub = root / "rendered" / "hub"
    staged = f".kustomization.yaml.{HEX}.dsf-tmp"
    (hub / staged).write_bytes((hub / "kustomization.yaml").read_bytes() + b"# edited\n")
    swept = root / "rendered" / f".dsf-files.{HEX[::-1]}.dsf-old"
    swept.write_text("old record\n")
    journal = {
        "journal": 1,
        "state": "commit",
        "renames": [["hub/kustomization.yaml", staged, ""]],
        "removals": [],
    }
    (root / "rendered" / ".dsf-journal").write_text(json.dumps(journal))
    code, _, err = cli(root, "render")
    assert code == 0, err
    line = err.splitlines()[0]
    assert line.startswith("dsf-compile: recovered rendered/ after an interrupted dsf-compile: ")
    assert "put 1 file(s) in place (rendered/hub/kustomization.yaml)" in line
    assert f"removed 1 temporary file(s) of its own (rendered/{swept.name})" in line
    assert "removed its journal rendered/.dsf-journal" in line
    assert cli(root, "render", "--check")[0] == 0


def test_sync_still_removes_its_own_temporary_files_and_names_them(
    tmp_path: Path, server: LoopbackServer
) -> None:
    scenario = harness.sync_scenario(tmp_path, server, scorers=2)
    root = scenario.template
    own = root / f".dsf.lock.json.{HEX}.dsf-tmp"
    own.write_text("half")
    other = root / f".README.md.{HEX}.dsf-tmp"  # not sync's: left alone, validate flags it
    other.write_text("theirs")
    code, _, err = cli(root, "sync")
    assert code == 0, err
    assert (
        "dsf-compile: recovered the repository's folder after an interrupted dsf-compile: "
        f"removed 1 temporary file(s) of its own (.dsf.lock.json.{HEX}.dsf-tmp)\n"
    ) in err
    assert not own.exists() and other.read_text() == "theirs"


def test_the_journal_records_are_typed_and_written_as_before() -> None:
    """A plan's renames and removals are named records, written as the lists of three and
    two strings the recovery (and a journal of an earlier release) reads."""
    from dsf_compile.edges.journal import Plan, Removal, Rename
    from dsf_compile.edges.journal_scope import JournalState

    staged, old = f".a.yaml.{HEX}.dsf-tmp", f".a.yaml.{HEX}.dsf-old"
    plan = Plan((Rename("x/a.yaml", staged, old),), (Removal("x/b.yaml", old),))
    document = json.loads(plan.text())
    assert document == {
        "journal": 1,
        "state": "commit",
        "renames": [["x/a.yaml", staged, old]],
        "removals": [["x/b.yaml", old]],
    }
    assert document["state"] == JournalState.COMMIT
    assert plan.renames[0].backup == old and plan.removals[0].path == "x/b.yaml"
