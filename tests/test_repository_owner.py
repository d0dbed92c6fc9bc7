"""Which repository a command works on without ``--root``: git's ``safe.directory`` rule.

A folder owned by another user than the one running is never taken as the repository
while climbing: ``sync`` would fetch the URLs that user planted and ``render`` would write
into their folder. ``--root`` names it on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.fleet_repo import cli, copy_fleet

OTHER_UID = 12345


@pytest.fixture
def planted(tmp_path: Path) -> Path:
    """A fleet in a folder of another user, with a folder of ours inside it."""
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    fleet = copy_fleet(tmp_path / "theirs", with_rendered=False)
    (fleet / "mine").mkdir()
    os.chown(fleet, OTHER_UID, OTHER_UID)
    return fleet


def test_a_folder_of_another_user_is_not_the_repository(
    planted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(planted / "mine")
    for argv in (("render",), ("sync",), ("validate",)):
        code, out, err = cli(*argv)
        assert (code, out) == (2, ""), err
        assert err == (
            f"dsf-compile: error: {planted} looks like a dsf repository but is owned by "
            f"another user (uid {OTHER_UID}, not {os.geteuid()}): not taken without --root, "
            f"as git refuses such a folder (safe.directory); give --root {planted} if you "
            "trust it\n"
        )
    assert not (planted / "rendered").exists()
    assert not (planted / "mine" / "rendered").exists()


def test_the_folder_itself_of_another_user_is_refused_too(
    planted: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(planted)
    code, _, err = cli("render")
    assert code == 2
    assert "owned by another user" in err
    assert not (planted / "rendered").exists()


def test_root_names_it_on_purpose(planted: Path) -> None:
    code, _, err = cli("--root", str(planted), "validate")
    assert code == 0, err


def test_a_folder_of_ours_is_found_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = copy_fleet(tmp_path / "ours", with_rendered=False)
    monkeypatch.chdir(fleet / "scorers")
    assert cli("validate")[0] == 0


def test_a_dsf_yaml_of_another_user_in_a_folder_of_ours_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /tmp is root's; a dsf.yaml another user planted there must not make it a repository
    if os.geteuid() != 0:
        pytest.skip("giving a file to another user needs root")
    (tmp_path / "dsf.yaml").write_text("hubNamespace: theirs\n")
    os.chown(tmp_path / "dsf.yaml", OTHER_UID, OTHER_UID)
    (tmp_path / "mine").mkdir()
    monkeypatch.chdir(tmp_path / "mine")
    code, _, err = cli("validate")
    assert code == 2
    assert f"{tmp_path} looks like a dsf repository but has dsf.yaml which is owned by " in err
