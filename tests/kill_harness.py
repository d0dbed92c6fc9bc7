"""Killing a real ``dsf-compile`` command at many moments, and what the next run must find.

The moments are a seeded spread over a run of the same command measured on this machine,
in the same test or benchmark (from the interpreter's start, measured by a ``--help``,
to the end of the measured run): never a sleep tuned to one machine. Each kill is a
``SIGKILL`` of the command's own process, as CI timeouts, the OOM killer and cancelled
workflows do it. Used by ``tests/test_crash.py`` and ``bench/crash_bench.py``.
"""

from __future__ import annotations

import io
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.sync_servers import LoopbackServer

REPO_ROOT = Path(__file__).resolve().parent.parent
#: dsf's temporary files and its journal: never left after a command that succeeded.
DEBRIS = re.compile(r"(?:^|/)(?:\..+\.[0-9a-f]{12}\.dsf-(?:tmp|old)|\.dsf-journal)\Z", re.DOTALL)

Files = dict[str, bytes]


def command(root: Path, *argv: str) -> list[str]:
    """``python -m dsf_compile --root ROOT ARGV…``, as a user runs it."""
    return [sys.executable, "-m", "dsf_compile", "--root", str(root), *argv]


@dataclass(frozen=True)
class Ran:
    returncode: int
    stderr: str


def run(root: Path, *argv: str) -> Ran:
    """The command, to its end, in this process (the same code as the command line runs;
    only the killed runs need a process of their own)."""
    from dsf_compile.commands.cli import run as cli_run

    out, err = io.StringIO(), io.StringIO()
    code = cli_run(["--root", str(root), *argv], out, err)
    return Ran(code, err.getvalue())


def files_under(root: Path, outputs: Sequence[str]) -> Files:
    """Every file under ``outputs`` (files or folders of ``root``), hidden ones included."""
    found: Files = {}
    for output in outputs:
        base = root / output
        if base.is_file():
            found[output] = base.read_bytes()
        for parent, _, names in os.walk(base):
            for name in names:
                path = Path(parent, name)
                found[str(path.relative_to(root))] = path.read_bytes()
    return found


def debris(files: Files) -> list[str]:
    """The temporary files and journals of dsf's among ``files``."""
    return sorted(p for p in files if DEBRIS.search(p))


def without_debris(files: Files) -> Files:
    return {p: data for p, data in files.items() if not DEBRIS.search(p)}


def timed(argv: list[str]) -> float:
    """Seconds one run of ``argv`` takes, start to end (it must succeed)."""
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, timeout=600)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    return elapsed


def moments(seed: int, kills: int, start: float, end: float) -> list[float]:
    """``kills`` moments spread over [start, end]: one at a seeded random place in each of
    ``kills`` equal slices, so that every part of the run is hit."""
    rng = random.Random(seed)
    width = (end - start) / kills
    return [start + width * (i + rng.random()) for i in range(kills)]


def kill_at(argv: list[str], delay: float) -> int:
    """Start ``argv``, ``SIGKILL`` it ``delay`` seconds later; its exit status (-9 when the
    kill came first, 0 when it had finished)."""
    process = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO_ROOT
    )
    try:
        process.wait(timeout=delay)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGKILL)
    return process.wait(timeout=60)


@dataclass
class Tally:
    """What the kills found: how many came before anything was written, left the new
    files, or left debris that the next run recovered."""

    killed: int = 0  # the kill came before the command's end
    failed: int = 0  # the command ended before the kill, and not with success
    untouched: int = 0  # no debris, the previous files
    finished: int = 0  # no debris, the new files
    recovered: int = 0  # debris the next run removed
    debris_files: list[int] = field(default_factory=list)

    def accounts_for(self, kills: int) -> bool:
        """Whether every kill ended one of the three ways, and no run the kill came too
        late for failed on its own (whatever the machine's speed)."""
        ended = self.untouched + self.finished + self.recovered
        return ended == kills and self.killed <= kills and self.failed == 0

    def line(self) -> str:
        spread = f"{min(self.debris_files)}-{max(self.debris_files)}" if self.debris_files else "-"
        return (
            f"{self.killed} killed mid-run, {self.failed} failed; "
            f"{self.untouched} left the previous files, "
            f"{self.finished} the new ones, {self.recovered} debris ({spread} files) "
            "that the next run recovered"
        )


@dataclass(frozen=True)
class Scenario:
    """A command over a prepared repository: its state before (``template``, copied for
    every kill), what it writes (``outputs``), the files before and after a full run."""

    argv: tuple[str, ...]
    template: Path
    outputs: tuple[str, ...]
    old: Files
    new: Files
    # more checks before the next run; True when they ran the command that recovered
    check: Callable[[Path, Files], bool] | None = None


def measure(scenario: Scenario, scratch: Path, repeat: int = 2) -> tuple[float, float]:
    """(interpreter start, one whole run) of the scenario's command, in seconds: the
    fastest of ``repeat`` runs (the first, on a cold cache, is often the slowest)."""
    start = min(timed([sys.executable, "-m", "dsf_compile", "--help"]) for _ in range(repeat))
    runs = []
    for n in range(repeat):
        root = scratch / f"measured{n}"
        shutil.copytree(scenario.template, root, symlinks=True)
        runs.append(timed(command(root, *scenario.argv)))
        assert without_debris(files_under(root, scenario.outputs)) == scenario.new
        shutil.rmtree(root)
    return start, min(runs)


def kill_and_recover(scenario: Scenario, scratch: Path, delays: Sequence[float]) -> Tally:
    """Kill the command at each delay, then check the tree and run it again.

    After a kill: with no debris, the files are the previous ones or the new ones, whole;
    with debris, the next run of the command recovers it (saying so) — either way that
    run succeeds and leaves exactly the new files, nothing else.
    """
    tally = Tally()
    for n, delay in enumerate(delays):
        root = scratch / f"kill{n}"
        shutil.copytree(scenario.template, root, symlinks=True)
        status = kill_at(command(root, *scenario.argv), delay)
        tally.killed += status == -signal.SIGKILL
        tally.failed += status not in (0, -signal.SIGKILL)
        after = files_under(root, scenario.outputs)
        left = debris(after)
        if status == 0:  # the kill came too late: the run must have left the new files
            assert after == scenario.new, f"kill {n} at {delay:.3f}s: exit 0, not the new files"
        if not left:
            assert after in (scenario.old, scenario.new), f"kill {n} at {delay:.3f}s: mixed"
            tally.untouched += after == scenario.old
            tally.finished += after == scenario.new and after != scenario.old
        recovered = scenario.check(root, after) if scenario.check is not None else False
        again = run(root, *scenario.argv)
        assert again.returncode == 0, again.stderr
        assert "Traceback" not in again.stderr
        assert files_under(root, scenario.outputs) == scenario.new, f"kill {n} at {delay:.3f}s"
        if left:
            assert recovered or "recovered" in again.stderr, again.stderr
            tally.recovered += 1
            tally.debris_files.append(len(left))
        shutil.rmtree(root)
    return tally


# ---------------------------------------------------------------- scenarios


def render_fleets(scratch: Path, clusters: int, scorers: int) -> tuple[Path, Path]:
    """Inputs before (``a``, three clusters more) and after (``b``: every Prometheus
    interval changed, so that most ManifestWorks are rewritten), each rendered."""
    from bench.render_bench import generate_fleet

    a, b = scratch / "a", scratch / "b"
    generate_fleet(a, clusters + 3, scorers)
    generate_fleet(b, clusters, scorers)
    scorers_file = b / "scorers" / "generated.yaml"
    scorers_file.write_text(scorers_file.read_text().replace("interval: 30", "interval: 31"))
    for root in (a, b):
        done = run(root, "render")
        assert done.returncode == 0, done.stderr
    return a, b


INPUTS = ("scorers", "clusters", "dsf.lock.json")


def use_inputs(root: Path, source: Path) -> None:
    for name in INPUTS:
        target = root / name
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        copy = shutil.copytree if (source / name).is_dir() else shutil.copy2
        copy(source / name, target)


def render_scenario(scratch: Path, clusters: int, scorers: int) -> Scenario:
    """``render`` of ``b``'s inputs over ``a``'s rendered tree (and ``a``'s no-op cache);
    before each next run: ``render --check`` and, every other kill, the way back to ``a``."""
    a, b = render_fleets(scratch, clusters, scorers)
    template = scratch / "template"
    template.mkdir()
    for name in ("rendered", ".dsf-cache"):
        shutil.copytree(a / name, template / name)
    use_inputs(template, b)
    outputs = ("rendered",)
    old, new = files_under(a, outputs), files_under(b, outputs)
    turns = iter(range(10**6))

    def check(root: Path, after: Files) -> bool:
        checked = run(root, "render", "--check")
        clean = after == new
        assert checked.returncode == (0 if clean else 1), checked.stderr
        if debris(after):
            assert "left by a killed dsf-compile" in checked.stderr, checked.stderr
            assert "'dsf-compile render' " in checked.stderr
        assert files_under(root, outputs) == after  # --check wrote nothing
        if next(turns) % 2:  # the way back: the previous inputs give the previous tree
            use_inputs(root, a)
            back = run(root, "render")
            assert back.returncode == 0, back.stderr
            assert files_under(root, outputs) == old
            use_inputs(root, b)
            assert ("recovered" in back.stderr) == bool(debris(after)), back.stderr
            return True
        return False

    return Scenario(("render",), template, outputs, old, new, check)


def scorer_config(interval: int) -> dict[str, object]:
    return {
        "source": {"type": "Prometheus", "path": "/api/v1/query_range", "params": {"range": 3600}},
        "scoring": {"path": "/scoring", "params": {"name": "crash_score", "interval": interval}},
    }


def sync_scenario(
    scratch: Path, server: LoopbackServer, scorers: int, delay: float = 0.0
) -> Scenario:
    """``sync`` of ``scorers`` Full scorers answering on loopback, whose /config changed
    since the lockfile was written (each answering after ``delay`` seconds)."""
    from tests.sync_fleet import SCORER_YAML
    from tests.sync_servers import json_body

    root = scratch / "before"
    (root / "scorers").mkdir(parents=True)
    (root / "clusters").mkdir()
    url = server.url("/config")
    for i in range(scorers):
        name = f"scorer-{i:03d}"
        (root / "scorers" / f"{name}.yaml").write_text(SCORER_YAML.format(name=name, url=url))
    outputs = ("dsf.lock.json",)
    server.route("/config", json_body(scorer_config(30)))
    assert run(root, "sync").returncode == 0
    old = files_under(root, outputs)
    server.route("/config", json_body(scorer_config(60), delay=delay))
    after = scratch / "after"
    shutil.copytree(root, after)
    assert run(after, "sync").returncode == 0
    new = files_under(after, outputs)
    assert new != old
    return Scenario(("sync",), root, outputs, old, new)
