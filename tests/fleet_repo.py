"""Where the repository and its example fleet are, for the tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
#: A frozen copy of the example fleet (the README's tour): the tests read it, never the
#: fleet at the repository's top level, which a fork edits, grows or replaces.
EXAMPLE_FLEET = Path(__file__).resolve().parent / "fixtures" / "example-fleet"
SHARED = REPO_ROOT.parent / "shared"
#: The upstream OCM CRDs (.ci/ocm-crds.txt): the shared folder next to the repository, or
#: where DSF_OCM_CRDS points (the GitHub workflow downloads them with .ci/fetch-ocm-crds.sh).
OCM_CRDS = Path(os.environ.get("DSF_OCM_CRDS") or SHARED / "ocm-crds")
FLEET_FILES = ("scorers", "clusters", "placements", "snapshots", "dsf.yaml", "dsf.lock.json")
#: What the repository's top level holds of its fleet, which no test reads (conftest.py).
TOP_LEVEL_FLEET = (*FLEET_FILES, "rendered", ".dsf-cache")


def copy_fleet(target: Path, *, with_rendered: bool = True) -> Path:
    """A copy of the frozen example fleet (inputs, lockfile, and rendered/)."""
    for name in (*FLEET_FILES, "rendered") if with_rendered else FLEET_FILES:
        source = EXAMPLE_FLEET / name
        if source.is_dir():
            shutil.copytree(source, target / name)
        elif source.exists():
            shutil.copy2(source, target / name)
    return target


def without_example_image(fleet: Path) -> None:
    """Drop the example's ``agent.image``: its image then derives from the example URL."""
    settings = fleet / "dsf.yaml"
    text = settings.read_text(encoding="utf-8")
    assert text.count("  image: localhost/dsf-agent:") == 1
    settings.write_text(
        "".join(line for line in text.splitlines(True) if not line.startswith("  image: ")),
        encoding="utf-8",
    )


def run_command(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    """``python -m dsf_compile --root ROOT ARGV…`` as a user runs it; never a traceback."""
    result = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def imported_by(root: Path, *argv: str) -> tuple[set[str], str]:
    """The modules a whole ``dsf-compile`` command imports (it must succeed), and its stderr."""
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dsf_compile", "--root", str(root), *argv],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stderr.splitlines()
    return {line.split("|")[-1].strip() for line in lines if "|" in line}, result.stderr


def cli(*argv: str) -> tuple[int, str, str]:
    """``dsf-compile ARGV…`` in this process: its exit code, stdout and stderr."""
    import io

    from dsf_compile.commands.cli import run

    out, err = io.StringIO(), io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def tree(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` and its bytes (to show a command wrote nothing)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }
