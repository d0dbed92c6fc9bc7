"""Crash safety at scale: ``render`` and ``sync`` killed (SIGKILL) at many moments.

    python -m bench.crash_bench [--clusters 1000] [--scorers 50] [--kills 24]
        [--sync-scorers 100] [--sync-kills 12] [--seed 31]

``render``: a fleet of N clusters × S scorers rendered, then a change that rewrites most
ManifestWorks (and removes three clusters); the command is killed at ``--kills`` moments,
a seeded spread over a run of the same render measured first (from the interpreter's
start to its end). After each kill: ``render --check`` exits 0 only on exactly the new
tree and writes nothing; every other kill, the previous inputs render exactly the previous
tree (the way back); the next ``render`` leaves exactly the new tree, and no temporary
file or journal of dsf's. ``sync``: ``--sync-scorers`` Full scorers answering on loopback
after 100 ms, killed ``--sync-kills`` times; the lockfile is always whole, and the next
sync writes it with nothing beside it. Any failed check stops the run with an
AssertionError; the table shows where the kills landed (``tests/kill_harness.py``) and
what the recovering runs cost. Opt-in: minutes, not part of ``python -m bench``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from tests import kill_harness as harness  # noqa: E402 - after the sys.path set-up
from tests.sync_servers import LoopbackServer  # noqa: E402


def _row(what: str, workload: str, kills: int, run: tuple[float, float], tally: harness.Tally,
         spent: float) -> str:  # fmt: skip
    start, whole = run
    return (
        f"| {what} | {workload} | {kills} | {whole:.2f} s (start {start:.2f} s) | "
        f"{tally.killed} | {tally.untouched} | {tally.finished} | {tally.recovered} | "
        f"{_spread(tally.debris_files)} | {spent:.0f} s |"
    )


def _spread(values: list[int]) -> str:
    return f"{min(values)}-{max(values)}" if values else "-"


def _crash(scenario: harness.Scenario, scratch: Path, kills: int, seed: int) -> tuple[
    tuple[float, float], harness.Tally, float
]:  # fmt: skip
    measured = harness.measure(scenario, scratch)
    began = time.monotonic()
    delays = harness.moments(seed, kills, *measured)
    tally = harness.kill_and_recover(scenario, scratch, delays)
    return measured, tally, time.monotonic() - began


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--scorers", type=int, default=50)
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--sync-scorers", type=int, default=100)
    parser.add_argument("--sync-kills", type=int, default=12)
    parser.add_argument("--seed", type=int, default=31)
    args = parser.parse_args(argv)
    print(
        "| command | workload | kills | measured run | killed mid-run | previous files | "
        "new files | debris recovered | debris files | checks took |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    scratch = Path(tempfile.mkdtemp(prefix="dsf-bench-crash-"))
    try:
        render = harness.render_scenario(scratch / "render", args.clusters, args.scorers)
        run, tally, spent = _crash(render, scratch / "render", args.kills, args.seed)
        workload = f"{args.clusters} clusters × {args.scorers} scorers"
        print(_row("render", workload, args.kills, run, tally, spent), flush=True)
        with LoopbackServer() as server:
            sync = harness.sync_scenario(scratch / "sync", server, args.sync_scorers, 0.1)
            run, tally, spent = _crash(sync, scratch / "sync", args.sync_kills, args.seed)
        workload = f"{args.sync_scorers} Full scorers, 100 ms each"
        print(_row("sync", workload, args.sync_kills, run, tally, spent))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
