"""podman as the image tests run it, and the Debian base their images are built on.

podman runs with the test's own ``containers.conf`` (``CONTAINERS_CONF``): no default
ulimits (these machines cannot raise them) and ``runc``. The base image is Debian bookworm
made by ``mmdebstrap`` (python3 and python3-venv), cached as a tarball under
``~/.cache/dsf-test`` (``$XDG_CACHE_HOME``) and imported into podman once; a lock file
there makes a second test run on the machine wait for the first instead of importing the
same layers at the same time (podman's "Digest did not match"). The first run on a machine
makes the base (about a minute more). The ``podman_env`` fixture (``tests/conftest.py``)
is :func:`podman_environment` in a folder of the test's.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import pytest

BASE_IMAGE = "localhost/dsf-test-base:bookworm-python3"


def cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dsf-test"


def podman_environment(folder: Path) -> dict[str, str]:
    """The environment podman runs with here: its own ``containers.conf`` in ``folder``."""
    if shutil.which("podman") is None:
        pytest.skip("podman not installed (Debian packages podman and runc)")
    conf = folder / "containers.conf"
    engine = '[engine]\nruntime = "runc"\n' if shutil.which("runc") else ""
    conf.write_text(f"[containers]\ndefault_ulimits = []\n{engine}")
    # BUILDAH_LAYERS=false: podman build keeps no intermediate images (each run's wheels
    # differ, so a cache would only pile up on a machine CI reuses)
    return {**os.environ, "CONTAINERS_CONF": str(conf), "BUILDAH_LAYERS": "false"}


def podman(env: dict[str, str], *args: str, timeout: float = 600) -> str:
    done = subprocess.run(
        ["podman", *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"podman {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def container_logs(env: dict[str, str], name: str) -> str:
    """What the container wrote (the agent logs to stderr)."""
    done = subprocess.run(
        ["podman", "logs", name], env=env, capture_output=True, text=True, timeout=60
    )
    return done.stdout + done.stderr


def debian_base(env: dict[str, str]) -> str:
    """Debian bookworm with python3 and its venv module, made by mmdebstrap once; one test
    run at a time makes or imports it (the others wait on the lock, then find it)."""
    cache_dir().mkdir(parents=True, exist_ok=True)
    with (cache_dir() / "base.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        return _debian_base_locked(env)


def _debian_base_locked(env: dict[str, str]) -> str:
    exists = subprocess.run(["podman", "image", "exists", BASE_IMAGE], env=env, timeout=60)
    if exists.returncode == 0:
        return BASE_IMAGE
    tarball = cache_dir() / "debian-bookworm-python3.tar"
    if not tarball.is_file():
        if shutil.which("mmdebstrap") is None:
            pytest.skip("mmdebstrap not installed (Debian package mmdebstrap)")
        tarball.parent.mkdir(parents=True, exist_ok=True)
        # mmdebstrap picks the output's format by its extension
        partial = tarball.with_name(f"{tarball.stem}.{os.getpid()}.partial.tar")
        subprocess.run(
            ["mmdebstrap", "--variant=apt", "--include=python3,python3-venv", "--quiet",
             "bookworm", str(partial)],
            check=True, timeout=900,
        )  # fmt: skip
        if tarball.is_dir():  # left by an older, broken run
            shutil.rmtree(tarball)
        partial.replace(tarball)
    podman(env, "import", "--quiet", str(tarball), BASE_IMAGE)
    return BASE_IMAGE
