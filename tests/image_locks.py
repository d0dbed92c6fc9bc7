"""Hash-pinned requirements files and the pip sources the image-lock tests serve: a lock's
entries, pip as these tests run it, and a substituted wheel (``V+evil``) to be refused.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path


def normalize(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()


def lock_entries(path: Path) -> dict[str, tuple[str, set[str]]]:
    """Normalized name -> (version, digests) of a hash-pinned requirements file."""
    entries = {}
    for line in path.read_text().replace("\\\n", " ").splitlines():
        if line and not line.startswith((" ", "#")):
            requirement, *options = line.split()
            name, version = requirement.split("==")
            digests = {o.removeprefix("--hash=sha256:") for o in options if o.startswith("--hash")}
            entries[normalize(name)] = (version, digests)
    return entries


def pip(*args: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def evil_wheel(wheel: Path, folder: Path) -> Path:
    """The victim's wheel as ``V+evil``: its metadata says so too, and one module more
    that would run in the agent."""
    name, version = wheel.name.split("-")[:2]
    evil_version = f"{version}+evil"
    target = folder / wheel.name.replace(f"-{version}-", f"-{evil_version}-")
    old_info, new_info = f"{name}-{version}.dist-info/", f"{name}-{evil_version}.dist-info/"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(target, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == old_info + "METADATA":
                data = data.replace(
                    f"Version: {version}".encode(), f"Version: {evil_version}".encode()
                )
            dst.writestr(item.filename.replace(old_info, new_info), data)
        dst.writestr(f"{name}/evil.py", "print('owned')\n")
    return target
