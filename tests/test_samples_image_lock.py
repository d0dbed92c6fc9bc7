"""The samples' image holds exactly the artifacts that were tested, as the agent's does
(``tests/agent/test_agent_image_lock.py``): ``samples/requirements.lock`` pins what the
samples import and everything that pulls in, at the versions the tests run with, by
SHA-256; ``samples/build-image.sh`` downloads them with ``pip --require-hashes`` and refuses
a wheel a pip source substitutes before anything is built, and the build installs them
with ``--require-hashes`` again, so a wheel tampered with in the build context is refused
by the build itself.

The refusals of the download run the script's first step only (``--context-only``)
against a pip source of this test's own (``PIP_NO_INDEX``, ``PIP_FIND_LINKS``): the
genuine wheels, downloaded once with the lock's digests, with ``idna`` replaced. The
build's own refusal runs podman on the Debian base the agent's image test makes.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from importlib.metadata import requires, version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.fleet_repo import REPO_ROOT
from tests.image_locks import evil_wheel, lock_entries, normalize, pip
from tests.podman_images import debian_base

pytestmark = pytest.mark.integration

SCRIPT = REPO_ROOT / "samples" / "build-image.sh"
LOCK = REPO_ROOT / "samples" / "requirements.lock"
CONTEXT = REPO_ROOT / "build" / "samples-image"
#: What the samples import beyond the standard library (their image's reason to exist).
IMPORTED = ("numpy", "httpx", "jinja2")
VICTIM = "idna"


def closure(names: tuple[str, ...]) -> dict[str, str]:
    """Normalized name -> installed version of ``names`` and all they require here (on this
    Python, the image's minor version: ``build-image.sh`` checks it)."""
    found: dict[str, str] = {}
    todo = list(names)
    while todo:
        name = normalize(todo.pop())
        if name in found:
            continue
        found[name] = version(name)
        for text in requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return found


def test_the_lock_pins_what_the_samples_import_at_the_tested_versions() -> None:
    locked = lock_entries(LOCK)
    assert {name: v for name, (v, _) in locked.items()} == closure(IMPORTED)
    assert all(digests for _, digests in locked.values())
    pinned = (REPO_ROOT / "samples" / "requirements.in").read_text().split()
    assert {normalize(p.split("==")[0]): p.split("==")[1] for p in pinned} == closure(IMPORTED)


@pytest.fixture(scope="module")
def genuine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The lock's wheels, as a pip source."""
    folder = tmp_path_factory.mktemp("genuine")
    pip(
        "download", "--no-deps", "--require-hashes", "--only-binary", ":all:",
        "--dest", str(folder), "--requirement", str(LOCK),
    )  # fmt: skip
    return folder


def build(
    source: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``build-image.sh ARGS`` with ``source`` as the only pip source."""
    environ = {
        **(env or os.environ),
        "PYTHON": sys.executable,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(source),
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_CONSTRAINT": "",
    }
    return subprocess.run(
        [str(SCRIPT), *args], env=environ, capture_output=True, text=True, timeout=900
    )


def source_with(genuine: Path, folder: Path) -> tuple[Path, Path]:
    shutil.copytree(genuine, folder)
    (wheel,) = folder.glob(f"{VICTIM}-*.whl")
    return folder, wheel


def tamper(wheel: Path) -> None:
    """One module more in ``wheel``, under the same name and version."""
    with zipfile.ZipFile(wheel, "a") as archive:
        archive.writestr(f"{VICTIM}/evil.py", "print('owned')\n")


def test_the_genuine_wheels_make_a_build_context(genuine: Path, tmp_path: Path) -> None:
    done = build(source_with(genuine, tmp_path / "source")[0], "--context-only")
    assert done.returncode == 0, done.stderr
    assert "build context ready" in done.stdout
    (wheel,) = (CONTEXT / "deps").glob(f"{VICTIM}-*.whl")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert f"sha256:{digest}  deps/{wheel.name}" in done.stdout  # digests printed
    assert (CONTEXT / "requirements.lock").read_bytes() == LOCK.read_bytes()
    wheels = {normalize(p.name.split("-")[0]) for p in (CONTEXT / "deps").glob("*.whl")}
    assert wheels == set(lock_entries(LOCK))  # the lock's wheels, nothing resolved beside


def test_other_bytes_under_the_same_name_are_refused(genuine: Path, tmp_path: Path) -> None:
    source, wheel = source_with(genuine, tmp_path / "source")
    tamper(wheel)
    done = build(source, "--context-only")
    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr, done.stderr
    assert wheel.name in done.stderr
    assert "build context ready" not in done.stdout


def test_a_substituted_version_is_refused(genuine: Path, tmp_path: Path) -> None:
    source, wheel = source_with(genuine, tmp_path / "source")
    evil_wheel(wheel, source)
    wheel.unlink()
    done = build(source, "--context-only")
    assert done.returncode != 0
    assert "DO NOT MATCH THE HASHES" in done.stderr or "No matching distribution" in done.stderr
    assert "build context ready" not in done.stdout


def test_the_build_refuses_a_wheel_tampered_with_in_its_context(
    genuine: Path,
    podman_env: dict[str, str],
    tmp_path: Path,
) -> None:
    base = debian_base(podman_env)
    done = build(source_with(genuine, tmp_path / "source")[0], "--context-only")
    assert done.returncode == 0, done.stderr
    (wheel,) = (CONTEXT / "deps").glob(f"{VICTIM}-*.whl")
    tamper(wheel)  # after the download's check: only the build's own can see it
    tag = f"localhost/dsf-samples-tampered:{os.getpid()}"
    built = subprocess.run(
        ["podman", "build", "--network", "none", "--build-arg", f"BASE_IMAGE={base}",
         "--file", str(REPO_ROOT / "samples" / "Containerfile"), "--tag", tag, str(CONTEXT)],
        env=podman_env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    exists = subprocess.run(["podman", "image", "exists", tag], env=podman_env, timeout=60)
    if exists.returncode == 0:
        subprocess.run(["podman", "rmi", "--force", tag], env=podman_env, timeout=120)
    assert built.returncode != 0
    assert "DO NOT MATCH THE HASHES" in built.stdout + built.stderr
    assert exists.returncode != 0
