"""``python -m bench``: every benchmark, one table (the targets of ``docs/benchmarks.md``).

Each row: what, the workload, the figure, its in-run baseline or floor, the ratio, the
target and whether it is met. ``--quick`` runs everything at tiny sizes (the test suite
does, so the benchmarks cannot rot; its figures mean nothing); ``--only GROUP`` runs one
of render, sync, explain, optimize, agent, commands, shards, validate; ``--agent-image IMAGE``
adds the agent's load rows for its image, run by podman.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import multiprocessing
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))


GROUPS = (
    "render", "sync", "explain", "optimize", "agent", "commands", "shards", "validate", "backtest",
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    workload: str
    figure: str
    baseline: str
    ratio: float
    target: str
    met: bool | None


@dataclass(frozen=True)
class Sizes:
    render_clusters: tuple[int, ...]
    render_scorers: int
    render_repeat: int
    big_clusters: int
    big_scorers: int
    sync_scorers: int
    sync_delay: float
    explain: tuple[int, int]
    optimize: tuple[int, int]
    optimize_large: tuple[int, int]
    agent: tuple[int, float]
    #: clusters, Placements, days of history
    backtest: tuple[int, int, int] = (1000, 20, 7)


FULL = Sizes(
    (10, 100, 1000, 10_000), 50, 3, 10_000, 100, 200, 0.1, (1000, 100), (20, 50), (100, 100),
    (200, 30.0),
)  # fmt: skip
QUICK = Sizes((5, 10), 3, 1, 10, 3, 10, 0.01, (20, 5), (3, 4), (5, 10), (5, 2.0), (10, 3, 1))


def render_rows(sizes: Sizes) -> list[Row]:
    from bench.render_bench import FIRST_NO_OP, measure

    rows = []
    measured: list[tuple[int, dict[str, float]]] = []
    # one scratch folder for every size, removed at the end: see render_bench.best_of
    scratch = Path(tempfile.mkdtemp(prefix="dsf-bench-render-"))
    try:
        for clusters in sizes.render_clusters:
            scorers = sizes.big_scorers if clusters == sizes.big_clusters else sizes.render_scorers
            # one run of the biggest fleet: minutes, and its noise is small against its size
            repeat = 1 if clusters >= 10_000 else sizes.render_repeat
            measured.append((clusters, _in_child(measure, clusters, scorers, repeat, scratch)))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    for clusters, figures in measured:
        scorers = sizes.big_scorers if clusters == sizes.big_clusters else sizes.render_scorers
        floor, full = figures["floor"], figures["full render"]
        workload = f"{clusters} clusters × {scorers} scorers"
        # the floor's target is set for 1,000 clusters and more; below, the fixed part of a
        # whole command (interpreter, imports, the CRDs and the addon) dwarfs a floor of
        # milliseconds
        at_scale = clusters >= 1000
        rows.append(
            Row("render", "full render (command)", workload, f"{full:.3f} s", f"floor {floor:.3f} s",
                full / floor, "≤ 1.2× floor" if at_scale else "- (fixed costs dominate)",
                full <= 1.2 * floor if at_scale else None)
        )  # fmt: skip
        warm, layout = figures["full render in process"], figures["layout floor"]
        rows += [
            Row("render", "full render (in process, imports done)", workload, f"{warm:.3f} s",
                f"floor {floor:.3f} s", warm / floor, "- (what the compiler adds to its imports)",
                None),
            Row("render", "layout floor (render's files, bare loop)", workload, f"{layout:.3f} s",
                f"floor {floor:.3f} s", layout / floor, "- (what the layout costs the file system)",
                None),
        ]  # fmt: skip
        for what in (FIRST_NO_OP, "no-op render", "render --check"):
            # the target is set for the 1,000-cluster fleet; below, the interpreter's
            # start is most of a no-op and a full render of a few clusters is all fixed costs
            seconds = figures[what]
            rows.append(
                Row("render", f"{what} (command)", workload, f"{seconds:.3f} s", f"full {full:.3f} s",
                    seconds / full, "≤ 10 % of full" if at_scale else "- (interpreter start dominates)",
                    seconds <= 0.1 * full if at_scale else None)
            )  # fmt: skip
        peak, output = figures["full render peak MB"], figures["output MB"]
        rows.append(
            Row("render", "full render peak RSS", workload, f"{peak:.0f} MB",
                f"output {output:.1f} MB in {int(figures['files'])} files", peak / output,
                "grows no faster than the output", None)
        )  # fmt: skip
    for (small, a), (large, b) in itertools.pairwise(measured):
        output = b["output MB"] / a["output MB"]
        span = f"{small} → {large} clusters"
        time_growth = b["full render"] / a["full render"]
        rss_growth = b["full render peak MB"] / a["full render peak MB"]
        rows += [
            Row("render", "scaling: full render time", span, f"× {time_growth:.2f}",
                f"output × {output:.2f}", time_growth / output, "≤ 1.2 (near-linear)",
                time_growth / output <= 1.2),
            Row("render", "scaling: peak RSS", span, f"× {rss_growth:.2f}", f"output × {output:.2f}",
                rss_growth / output, "≤ 1 (no faster than the output)", rss_growth / output <= 1.0),
        ]  # fmt: skip
    return rows


def _in_child(function: Callable[..., dict[str, float]], *args: object) -> dict[str, float]:
    """Run ``function`` in a fresh process: its peak RSS is its own."""
    parent, child = multiprocessing.Pipe()
    process = multiprocessing.Process(target=_child, args=(child, function, args))
    process.start()
    figures: dict[str, float] = parent.recv()
    process.join()
    return figures


def _child(
    conn: object, function: Callable[..., dict[str, float]], args: tuple[object, ...]
) -> None:
    figures = dict(function(*args))
    figures["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    conn.send(figures)  # type: ignore[attr-defined]


def sync_rows(sizes: Sizes) -> list[Row]:
    from bench import sync_bench
    from dsf_compile.inputs.sync_settings import SyncSettings

    parent, child = multiprocessing.Pipe()
    server = multiprocessing.Process(
        target=sync_bench._serve, args=(sizes.sync_delay, child), daemon=True
    )
    server.start()
    try:
        base = f"http://127.0.0.1:{parent.recv()}"
        latency = asyncio.run(sync_bench._request_latency(f"{base}/config?n=single", 5))
        scorers = [
            sync_bench._scorer(f"s{i:04}", f"{base}/config?n={i}")
            for i in range(sizes.sync_scorers)
        ]
        sync_bench._run(scorers[:1], SyncSettings())
        fast = sync_bench._row("fast", scorers, SyncSettings(), 1)
        timeout = 2.0
        hang = sync_bench._row(
            "hang",
            [sync_bench._scorer("hang", f"{base}/hang"), *scorers[1:]],
            SyncSettings(timeoutSeconds=timeout),
            1,
        )
    finally:
        parent.send("stop")
        server.join(timeout=15)
    sequential = sizes.sync_scorers * latency
    workload = f"{sizes.sync_scorers} Full scorers × {sizes.sync_delay * 1000:g} ms"
    return [
        Row("sync", "sync", workload, f"{fast.wall:.3f} s", f"sequential {sequential:.2f} s",
            fast.wall / sequential, "≤ 0.6 s", fast.wall <= 0.6 and fast.inactive == 0),
        Row("sync", "one hanging scorer", f"{workload}, timeout {timeout:g} s", f"{hang.wall:.3f} s",
            f"timeout {timeout:g} s", hang.wall / timeout, "≤ timeout + 0.3 s, one Inactive",
            hang.wall <= timeout + 0.3 and hang.inactive == 1),
    ]  # fmt: skip


def explain_rows(sizes: Sizes) -> list[Row]:
    from bench.explain_bench import SCORES, measure

    clusters, placements = sizes.explain
    figures = measure(clusters, placements)
    total = figures["read"] + figures["schedule"]
    workload = f"{clusters} clusters × {placements} Placements × {SCORES} AddOn coordinates"
    cel = measure(clusters, placements, with_cel=True)
    cel_total = cel["read"] + cel["schedule"]
    return [
        Row("explain", "explain (read + schedule)", workload, f"{total:.3f} s",
            f"C loader {figures['floor']:.3f} s", total / figures["floor"], "a few × the load", None),
        Row("explain", "explain, a third with CEL", workload, f"{cel_total:.3f} s",
            f"read {cel['read']:.3f} s", cel_total / cel["read"], "≤ 2× reading the snapshot",
            cel_total <= 2 * cel["read"]),
        verify_row(placements),
    ]  # fmt: skip


def verify_row(placements: int) -> Row:
    """``explain --verify`` on a hub of ``placements`` × 1,000 PlacementDecisions (linear)."""
    from bench.hub_bench import measure_verify

    decisions = placements * 1000
    figures = measure_verify(placements, decisions)
    return Row(
        "explain", "explain --verify (index, replay, compare)",
        f"{placements} Placements × {decisions:,} PlacementDecisions",
        f"{figures['verify']:.3f} s", f"validating them {figures['read']:.3f} s",
        figures["verify"] / figures["read"], "≤ 1× validating the decisions",
        figures["verify"] <= figures["read"],
    )  # fmt: skip


def backtest_rows(sizes: Sizes) -> list[Row]:
    from bench.backtest_bench import measure

    clusters, placements, days = sizes.backtest
    with tempfile.TemporaryDirectory() as folder:
        f = measure(clusters, placements, days, Path(folder))
    workload = (
        f"{clusters} clusters × {placements} Placements × 5 scorers, {days} d at 5 m "
        f"({int(f['steps'])} steps, {f['bytes'] / 2**20:.0f} MiB)"
    )
    return [
        Row("backtest", "backtest --format json (whole command), CPU", workload,
            f"{f['cpu']:.3f} s (wall {f['wall']:.1f} s)",
            f"bare orjson parse {f['floor_cpu']:.3f} s (wall {f['floor']:.1f} s)",
            f["cpu"] / f["floor_cpu"], "≤ 5× the parse", f["cpu"] <= 5 * f["floor_cpu"]),
        Row("backtest", "backtest peak RSS", workload, f"{f['rss']:.0f} MiB", "-", 0.0,
            "≤ 1024 MiB", f["rss"] <= 1024),
    ]  # fmt: skip


def optimize_rows(sizes: Sizes) -> list[Row]:
    from bench.optimize_bench import DEVICES, measure, measure_large
    from dsf_compile.placement.optimize import DEFAULT_TIME_LIMIT

    workloads, clusters = sizes.optimize
    figures = measure(workloads, clusters)
    workload = f"{workloads} workloads × {clusters} clusters × {len(DEVICES)} configurations"
    cbc, highspy = figures["cbc"], figures["highspy"]
    big_workloads, big_clusters = sizes.optimize_large
    large = measure_large(big_workloads, big_clusters)
    big = (
        f"{big_workloads} workloads × {big_clusters} clusters × {len(DEVICES)} configurations "
        f"({big_workloads * big_clusters * len(DEVICES):,} z)"
    )
    return [
        Row("optimize", "solve, large (bounded)", big, f"{large:.3f} s",
            f"time limit {DEFAULT_TIME_LIMIT:g} s", large / DEFAULT_TIME_LIMIT,
            "within the default time limit", large <= DEFAULT_TIME_LIMIT),
        Row("optimize", "solve (HiGHS)", workload, f"{figures['dsf']:.3f} s",
            "PuLP/CBC n/a" if cbc != cbc else f"PuLP/CBC {cbc:.3f} s",
            figures["dsf"] / cbc if cbc == cbc else 0.0, "faster than CBC",
            None if cbc != cbc else figures["dsf"] <= cbc),
        Row("optimize", "solve (HiGHS via scipy)", workload, f"{figures['dsf']:.3f} s",
            "highspy n/a" if highspy != highspy else f"highspy {highspy:.3f} s",
            figures["dsf"] / highspy if highspy == highspy else 0.0, "no slower than highspy",
            None if highspy != highspy else figures["dsf"] <= highspy),
    ]  # fmt: skip


def agent_rows(sizes: Sizes) -> list[Row]:
    from bench.agent_bench import HUB_INTERVAL, flood_results

    scorers, seconds = sizes.agent
    rows = []
    workload = f"{scorers} scorers at 1 s for {seconds:g} s"
    for name, value, baseline, ratio, target in _agent_table(sizes):
        load = workload
        if name.startswith("2M-point"):
            load = "one answer of 2,000 series × 1,000 points"
        elif name.startswith("20 x 20 MB"):
            load = "20 scorers × 20 MB answers every 30 s, 512Mi limit"
        elif name.startswith("idle"):
            load = "no scorer"
        elif name.startswith("isolation"):
            load = (
                f"1 scorer × {flood_results(seconds):,} results beside "
                f"{max(2, scorers // 10)} healthy at 1 s"
            )
        elif name.startswith("hub:"):
            load = f"{max(2, scorers // 4)} scorers every {HUB_INTERVAL} s, unchanged scores"
        rows.append(
            Row("agent", name, load, value, baseline, float(ratio), target, _met(value, target))
        )
    return rows + health_rows(sizes)


def agent_image_rows(sizes: Sizes, image: str) -> list[Row]:
    """The load rows for the agent's image, run by podman as the rendered Deployment runs it."""
    scorers, seconds = sizes.agent
    workload = f"{scorers} scorers at 1 s for {seconds:g} s, the image {image} under podman"
    return [
        Row("agent", f"image: {name}", workload, value, baseline, float(ratio), target,
            _met(value, target))
        for name, value, baseline, ratio, target in _agent_table(sizes, "--image", image)
    ]  # fmt: skip


def _agent_table(sizes: Sizes, *extra: str) -> list[list[str]]:
    """The rows of ``bench/agent_bench.py``'s table (measure, figure, baseline, ratio, target)."""
    scorers, seconds = sizes.agent
    result = subprocess.run(
        [sys.executable, str(_ROOT / "bench" / "agent_bench.py"),
         "--scorers", str(scorers), "--seconds", str(seconds), *extra],
        capture_output=True, text=True, timeout=900, check=True,
    )  # fmt: skip
    table = []
    for line in result.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("measure", "") and not set(cells[0]) <= {"-"}:
            table.append(cells)
    return table


def health_rows(sizes: Sizes) -> list[Row]:
    """Probes and SIGTERM beside 2,000 scorers on a hanging API (what the tests do not time)."""
    from bench.health_bench import rows

    quick = sizes is QUICK
    return [Row(*cells) for cells in rows(100 if quick else 2000, 3 if quick else 20)]


def _met(value: str, target: str) -> bool | None:
    """Whether ``value`` meets a target written ``<= 35 %``, ``>= 98 %`` or ``< 20 ms``."""
    parts = target.split()
    if len(parts) < 2 or parts[0] not in ("<=", ">=", "<", ">"):
        return None
    try:
        figure, limit = float(value), float(parts[1])
    except ValueError:
        return None
    return {
        "<=": figure <= limit,
        ">=": figure >= limit,
        "<": figure < limit,
        ">": figure > limit,
    }[parts[0]]


def command_rows(sizes: Sizes) -> list[Row]:
    from bench.command_bench import command_rows as rows

    return [Row(*cells) for cells in rows(sizes.sync_scorers, sizes.sync_delay, sizes is QUICK)]


def shard_rows(sizes: Sizes) -> list[Row]:
    from bench.shard_bench import shard_rows as rows

    return [Row(*cells) for cells in rows(sizes.big_clusters, sizes.big_scorers, sizes is QUICK)]


def validate_rows(sizes: Sizes) -> list[Row]:
    from bench.validate_bench import rows

    return [Row("validate", *row) for row in rows(quick=sizes is QUICK)]


RUNNERS: dict[str, Callable[[Sizes], list[Row]]] = {
    "render": render_rows,
    "sync": sync_rows,
    "explain": explain_rows,
    "optimize": optimize_rows,
    "agent": agent_rows,
    "commands": command_rows,
    "shards": shard_rows,
    "validate": validate_rows,
    "backtest": backtest_rows,
}


def machine() -> str:
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    cores = multiprocessing.cpu_count()
    return f"{cores} cores, {model}, Python {platform.python_version()}, {platform.system()}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="tiny sizes (the test suite)")
    parser.add_argument("--only", choices=GROUPS, action="append", help="one group; repeatable")
    parser.add_argument(
        "--agent-image",
        metavar="IMAGE",
        help="the agent group also measures the load rows for IMAGE (agent/build-image.sh), "
        "run by podman as the rendered Deployment runs it",
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    started = time.perf_counter()
    rows: list[Row] = []
    for group in args.only or GROUPS:
        rows += RUNNERS[group](sizes)
        if group == "agent" and args.agent_image:
            rows += agent_image_rows(sizes, args.agent_image)
    print(f"machine: {machine()}")
    print("| group | what | workload | figure | baseline | ratio | target | met |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- | --- |")
    for row in rows:
        met = "-" if row.met is None else ("yes" if row.met else "NO")
        print(
            f"| {row.group} | {row.name} | {row.workload} | {row.figure} | {row.baseline} "
            f"| {row.ratio:.2f} | {row.target} | {met} |"
        )
    print(f"\n{len(rows)} rows in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
