"""Whole commands as a user types them: ``validate`` and ``sync``, with in-run baselines.

Each figure is the best of ``repeat`` runs of ``python -m dsf_compile …`` in a child
process (interpreter start, imports and all), with the package's bytecode compiled as an
install leaves it. The baselines run in the same session, the same way: a bare
interpreter (``python -c pass``) and ``dsf-compile --help`` (the interpreter plus the
command-line parser), so a loaded machine shows in both.

    PYTHONPATH=. python bench/command_bench.py [--scorers 200] [--delay 0.1] [--repeat 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
#: The example fleet as the tests hold it (the top-level fleet is a fork's to edit).
EXAMPLE_FLEET = REPO / "tests" / "fixtures" / "example-fleet"

from bench.render_bench import _env, compile_packages  # noqa: E402  (this checkout's compiler)


def command_seconds(argv: list[str], repeat: int, *, expect: int = 0) -> float:
    """The best wall time of ``repeat`` runs of ``argv`` (a whole command); checks its exit."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=_env(), check=False, timeout=600)
        seconds = time.perf_counter() - start
        if done.returncode != expect:
            raise SystemExit(
                f"{' '.join(argv)} exited {done.returncode}: {done.stderr.decode()[-2000:]}"
            )
        best = min(best, seconds)
    return best


COMPILER = [sys.executable, "-m", "dsf_compile"]
#: A ``python -m bench`` row: group, what, workload, figure, baseline, ratio, target, met.
RowCells = tuple[str, str, str, str, str, float, str, bool | None]


def baselines(repeat: int) -> dict[str, float]:
    """A bare interpreter and ``dsf-compile --help``, timed now."""
    return {
        "python -c pass": command_seconds([sys.executable, "-c", "pass"], repeat),
        "dsf-compile --help": command_seconds([*COMPILER, "--help"], repeat),
    }


def measure_validate(repeat: int) -> dict[str, float]:
    """``validate`` of the example fleet (:data:`EXAMPLE_FLEET`), whole command."""
    compile_packages()
    figures = baselines(repeat)
    figures["validate"] = command_seconds(
        [*COMPILER, "--root", str(EXAMPLE_FLEET), "validate"], repeat
    )
    return figures


def write_sync_fleet(root: Path, base_url: str, scorers: int) -> None:
    """``scorers`` Full scorers, one file each, all on the loopback server; one cluster.

    The settings are the defaults (``sync.concurrency`` among them), as a user has them.
    """
    (root / "scorers").mkdir(parents=True)
    (root / "clusters").mkdir()
    for i in range(scorers):
        name = f"s{i:04}"
        scorer = {
            "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
            "kind": "DynamicScorer",
            "metadata": {"name": name},
            "spec": {
                "description": "bench",
                "configURL": f"{base_url}/config?n={i}",
                "configSyncMode": "Full",
                "scoreDestination": "AddOnPlacementScore",
            },
        }
        (root / "scorers" / f"{name}.yaml").write_text(yaml.safe_dump(scorer, sort_keys=False))
    cluster = {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": "cluster-0000"},
    }
    (root / "clusters" / "inventory.yaml").write_text(yaml.safe_dump(cluster, sort_keys=False))


#: ``sync.timeoutSeconds`` of the hang case: one scorer never answers.
HANG_TIMEOUT = 2.0


def hang_first_scorer(root: Path, base_url: str) -> None:
    """The first scorer's ``/config`` accepts the request and never answers; ``dsf.yaml``
    sets :data:`HANG_TIMEOUT` as the budget."""
    first = root / "scorers" / "s0000.yaml"
    first.write_text(first.read_text().replace(f"{base_url}/config?n=0", f"{base_url}/hang"))
    (root / "dsf.yaml").write_text(f"sync:\n  timeoutSeconds: {HANG_TIMEOUT:g}\n")


def measure_sync(scorers: int, delay: float, repeat: int) -> dict[str, float]:
    """``sync`` of ``scorers`` Full scorers answering after ``delay``, whole command; then
    the same with one hanging scorer (``hang``, ``hang inactive``)."""
    from bench.sync_bench import _serve

    compile_packages()
    figures = baselines(repeat)
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(target=_serve, args=(delay, child), daemon=True)
    server.start()
    try:
        base = f"http://127.0.0.1:{parent.recv()}"
        with tempfile.TemporaryDirectory(prefix="dsf-bench-sync-") as tmp:
            root = Path(tmp)
            write_sync_fleet(root, base, scorers)
            figures["sync"] = command_seconds([*COMPILER, "--root", str(root), "sync"], repeat)
            lock = (root / "dsf.lock.json").read_text(encoding="utf-8")
            figures["active"] = lock.count('"health": "Active"')
            hang_first_scorer(root, base)
            figures["hang"] = command_seconds([*COMPILER, "--root", str(root), "sync"], repeat)
            lock = (root / "dsf.lock.json").read_text(encoding="utf-8")
            figures["hang inactive"] = lock.count('"health": "Inactive"')
    finally:
        parent.send("stop")
        server.join(timeout=15)
    return figures


#: The project's targets for the two commands, in seconds (docs/benchmarks.md).
VALIDATE_TARGET = 0.15
SYNC_TARGET = 0.6
#: What one hanging scorer may add to its timeout, in seconds.
HANG_EXTRA = 0.3


def command_rows(scorers: int, delay: float, quick: bool) -> list[RowCells]:
    """``python -m bench``'s rows: ``validate`` and ``sync`` as whole commands."""
    repeat = 1 if quick else 3
    validate = measure_validate(repeat)
    sync = measure_sync(scorers, delay, repeat)
    rows: list[RowCells] = []
    for what, workload, figures, target in (
        ("validate (command)", "the example fleet", validate, VALIDATE_TARGET),
        ("sync (command)", f"{scorers} Full scorers × {delay * 1000:g} ms", sync, SYNC_TARGET),
    ):
        name = what.split()[0]
        seconds, bare, help_ = (
            figures[name],
            figures["python -c pass"],
            figures["dsf-compile --help"],
        )
        rows.append(
            ("commands", f"{what}, best of {repeat}", workload, f"{seconds:.3f} s",
             f"python -c pass {bare:.3f} s, --help {help_:.3f} s", seconds / help_,
             f"≤ {target:g} s", None if quick else seconds <= target)
        )  # fmt: skip
    hang, limit = sync["hang"], HANG_TIMEOUT + HANG_EXTRA
    rows.append(
        ("commands", f"sync (command), one hanging scorer, best of {repeat}",
         f"{scorers} Full scorers × {delay * 1000:g} ms, timeout {HANG_TIMEOUT:g} s",
         f"{hang:.3f} s", f"timeout {HANG_TIMEOUT:g} s", hang / HANG_TIMEOUT,
         f"≤ timeout + {HANG_EXTRA:g} s, one Inactive",
         None if quick else hang <= limit and sync["hang inactive"] == 1)
    )  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorers", type=int, default=200)
    parser.add_argument("--delay", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    for what, figures in (
        ("validate (example fleet)", measure_validate(args.repeat)),
        (
            f"sync ({args.scorers} Full × {args.delay * 1000:g} ms)",
            measure_sync(args.scorers, args.delay, args.repeat),
        ),
    ):
        print(what)
        for name, value in figures.items():
            print(f"  {name:<20} {value:.3f}")


if __name__ == "__main__":
    main()
