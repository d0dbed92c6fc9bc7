"""The image holds exactly the artifacts that were tested: ``agent/requirements.lock``
pins the distributions the agent loads, at the versions the tests run with, by SHA-256;
``agent/build-image.sh`` downloads them with ``pip --require-hashes`` and refuses a wheel
a pip source substitutes (another version such as ``X==V+evil``, or other bytes under the
same name) before anything is built.

The refusals run the script's first step only (``--wheelhouse-only``) against a pip
source of this test's own (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``): the genuine wheels,
downloaded once with the lock's digests, with one of them replaced.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from agent_image.deps import runtime_distributions
from tests.fleet_repo import REPO_ROOT
from tests.image_locks import evil_wheel, lock_entries, normalize, pip

pytestmark = pytest.mark.integration

SCRIPT = REPO_ROOT / "agent" / "build-image.sh"
VICTIM = "httpx"


def test_the_lock_pins_what_the_agent_loads_at_the_tested_versions() -> None:
    locked = lock_entries(REPO_ROOT / "agent" / "requirements.lock")
    loaded = {normalize(name): version for name, version in runtime_distributions().items()}
    assert {name: version for name, (version, _) in locked.items()} == loaded
    assert all(digests for _, digests in locked.values())
    # the input the lock is compiled from says the same
    pinned = (REPO_ROOT / "agent" / "requirements.in").read_text().split()
    assert {normalize(p.split("==")[0]): p.split("==")[1] for p in pinned} == loaded


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lock's wheels (both locks) and the build backend, as a pip source."""
    folder = tmp_path_factory.mktemp("genuine")
    for lock in ("requirements.lock", "sbom-tools.lock"):
        pip(
            "download", "--no-deps", "--require-hashes", "--only-binary", ":all:",
            "--dest", str(folder), "--requirement", str(REPO_ROOT / "agent" / lock),
        )  # fmt: skip
    pip("download", "--no-deps", "--only-binary", ":all:", "--dest", str(folder), "setuptools")
    return folder


def build_wheelhouse(source: Path) -> subprocess.CompletedProcess[str]:
    """``build-image.sh --wheelhouse-only`` with ``source`` as the only pip source."""
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(source),
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_CONSTRAINT": "",
    }
    return subprocess.run(
        [str(SCRIPT), "--wheelhouse-only"], env=env, capture_output=True, text=True, timeout=600
    )


def source_with(genuine: Path, folder: Path) -> tuple[Path, Path]:
    """A copy of ``genuine`` and the victim's wheel in it."""
    shutil.copytree(genuine, folder)
    (wheel,) = folder.glob(f"{VICTIM}-*.whl")
    return folder, wheel


def test_the_genuine_wheels_make_a_wheelhouse(genuine: Path, tmp_path: Path) -> None:
    done = build_wheelhouse(source_with(genuine, tmp_path / "source")[0])
    assert done.returncode == 0, done.stderr
    assert "wheelhouse ready" in done.stdout
    (wheel,) = (REPO_ROOT / "build" / "agent-image" / "deps").glob(f"{VICTIM}-*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert f"sha256:{digest}  deps/{wheel.name}" in done.stdout  # digests printed


def test_a_substituted_version_is_refused(genuine: Path, tmp_path: Path) -> None:
    source, wheel = source_with(genuine, tmp_path / "source")
    evil_wheel(wheel, source)
    wheel.unlink()
    done = build_wheelhouse(source)
    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr, done.stderr
    assert "evil" in done.stderr  # the file pip refused (its URL quotes the "+")
    assert "wheelhouse ready" not in done.stdout


def test_other_bytes_under_the_same_name_are_refused(genuine: Path, tmp_path: Path) -> None:
    source, wheel = source_with(genuine, tmp_path / "source")
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{VICTIM}/evil.py", "print('owned')\n")
    done = build_wheelhouse(source)
    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr, done.stderr
    assert wheel.name in done.stderr
    assert "wheelhouse ready" not in done.stdout
