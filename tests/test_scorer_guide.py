"""docs/scorer-guide.md works: every ``bash`` block, in order, in a fresh clone of the repository.

The clone holds only committed files: commit a change of the guide or the samples before
running this test. ``dsf-compile`` and ``python3`` on the blocks' PATH are small shims for
the interpreter running the tests, with the clone first on ``PYTHONPATH``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet_repo import FLEET_FILES, copy_fleet

REPOSITORY = Path(__file__).resolve().parent.parent
GUIDE = REPOSITORY / "docs" / "scorer-guide.md"
BLOCK = re.compile(r"^```bash\n(.*?)^```$", re.MULTILINE | re.DOTALL)
# Variables of the test runner that would change what the blocks do.
CLEARED = (
    "SCORER_TOKEN",
    "DSF_SCORER_TOKEN",
    "MY_SCORER_TOKEN",
    "GITHUB_ACTIONS",
    "INFERENCE_ENDPOINT",
    "INFERENCE_TOKEN",
    "MODEL_NAME",
)


def bash_blocks(text: str) -> list[str]:
    """The guide's ```bash blocks, in order (``sh`` blocks need a cluster and are skipped)."""
    return BLOCK.findall(text)


def test_the_guide_has_runnable_blocks_and_is_linked() -> None:
    blocks = bash_blocks(GUIDE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    # Each block sets its own defaults, so it also runs alone in a fresh shell.
    for block in blocks:
        for variable in ("PORT", "RUN"):
            if f"${variable}" in block or f'"${variable}' in block:
                assert f"{variable}=${{" in block, block
    for readme in ("README.md", "samples/README.md"):
        assert "scorer-guide.md" in (REPOSITORY / readme).read_text(encoding="utf-8"), readme


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A fresh clone, and the environment the blocks run in; stops what they left running."""
    if not (REPOSITORY / ".git").exists():
        pytest.skip("not a Git checkout: nothing to clone")
    target = tmp_path / "clone"
    subprocess.run(
        ["git", "clone", "--quiet", "--no-hardlinks", str(REPOSITORY), str(target)],
        check=True,
        capture_output=True,
    )
    # The guide runs on the frozen example fleet, whatever fleet the clone's top level holds.
    for name in (*FLEET_FILES, "rendered"):
        path = target / name
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    copy_fleet(target)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    shim = bin_dir / "dsf-compile"
    shim.write_text(
        f'#!/bin/sh\nexec "{sys.executable}" -c '
        "'from dsf_compile.commands.cli import main; main()' \"$@\"\n",
        encoding="utf-8",
    )
    shim.chmod(0o755)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(target),
        SCORER_PORT=str(_free_port()),
        SCORER_RUN_DIR=str(run_dir),
    )
    try:
        yield target, env
    finally:
        # A block that failed half-way may leave its scorer running: stop it by its pid.
        # (The guide removes the pid file of a scorer it stopped, so no pid here is stale.)
        for pid_file in run_dir.glob("*.pid"):
            with contextlib.suppress(ProcessLookupError, ValueError):
                os.kill(int(pid_file.read_text().strip()), signal.SIGTERM)


@pytest.mark.integration
def test_every_bash_block_of_the_guide_succeeds_in_a_fresh_clone(
    clone: tuple[Path, dict[str, str]],
) -> None:
    root, env = clone
    # The clone's guide: what a reader of this commit gets.
    blocks = bash_blocks((root / "docs" / "scorer-guide.md").read_text(encoding="utf-8"))
    assert blocks
    for number, block in enumerate(blocks, start=1):
        result = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", block],
            cwd=root,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, (
            f"block {number} exited {result.returncode}:\n{block}\n"
            f"--- stdout\n{result.stdout[-3000:]}\n--- stderr\n{result.stderr[-3000:]}"
        )
    # What the guide claims it did: the new scorer is synced, Active and rendered.
    lock = json.loads((root / "dsf.lock.json").read_text(encoding="utf-8"))
    entry = lock["scorers"]["cpu-headroom-scorer"]
    assert (entry["health"], entry["config"]["scoring"]["params"]["name"]) == (
        "Active",
        "cpu_headroom_score",
    )
    assert (root / "rendered/hub/dynamicscorers/cpu-headroom-scorer.yaml").is_file()
    assert not list(Path(env["SCORER_RUN_DIR"]).glob("*.pid"))  # the guide stopped its scorers
