"""The optimizer's solve time: 20 workloads × 50 clusters × 4 configurations.

The figure is ``dsf_compile.placement.optimize.solve`` (HiGHS through
``scipy.optimize.milp``); the in-run baselines are the same model given to PuLP with its
bundled CBC (upstream's choice) and, when installed, to HiGHS through ``highspy``'s
own modelling API. Every solver must reach the same optimum; times are the median of
three runs, model building included. Run: ``python bench/optimize_bench.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import random
import sys
import time
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import TypeVar

_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_ROOT))

from dsf_compile.placement.optimize import Configuration, Workload, solve  # noqa: E402

T = TypeVar("T")
DEVICES = ("all", "1g", "2g", "3g")


def instance(
    workloads: int, clusters: int, seed: int = 7
) -> tuple[list[Workload], dict[str, list[Configuration]], dict[tuple[str, str, str], int]]:
    rng = random.Random(seed)
    apps = [f"app{i:02d}" for i in range(workloads)]
    loads = [Workload(f"w-{a}", a, "slice", Fraction(rng.randint(1, 3))) for a in apps]
    layout = {"all": 1, "1g": 7, "2g": 3, "3g": 2}
    configs = {
        f"c{c:03d}": [
            Configuration(f"p-{d}-c{c:03d}", d, "slice", Fraction(layout[d] * 2)) for d in DEVICES
        ]
        for c in range(clusters)
    }
    scores = {(a, c, d): rng.randint(-100, 100) for a in apps for c in configs for d in DEVICES}
    return loads, configs, scores


def measure_large(workloads: int, clusters: int) -> float:
    """Seconds of one solve of a large instance (model building included), dsf only."""
    loads, configs, scores = instance(workloads, clusters)
    start = time.perf_counter()
    solve(loads, configs, scores, maximize=True)
    return time.perf_counter() - start


def pulp_objective(workloads, clusters, scores) -> float | None:
    try:
        import pulp
    except ImportError:
        return None
    model = pulp.LpProblem("dsf", pulp.LpMaximize)
    keys = [(w, c, p) for w in workloads for c in clusters for p in clusters[c]]
    z = {
        (w.name, c, p.policy): pulp.LpVariable(f"z_{i}", cat="Binary")
        for i, (w, c, p) in enumerate(keys)
    }
    x = {
        (w.name, c): pulp.LpVariable(f"x_{w.name}_{c}", cat="Binary")
        for w in workloads
        for c in clusters
    }
    y = {
        (c, p.policy): pulp.LpVariable(f"y_{p.policy}", cat="Binary")
        for c in clusters
        for p in clusters[c]
    }
    model += pulp.lpSum(scores[w.app, c, p.device] * z[w.name, c, p.policy] for w, c, p in keys)
    for c in clusters:
        model += pulp.lpSum(y[c, p.policy] for p in clusters[c]) <= 1
        for p in clusters[c]:
            model += (
                pulp.lpSum(float(w.amount) * z[w.name, c, p.policy] for w in workloads)
                <= float(p.amount) * y[c, p.policy]
            )
    for w in workloads:
        model += pulp.lpSum(x[w.name, c] for c in clusters) == 1
        for c in clusters:
            model += x[w.name, c] == pulp.lpSum(z[w.name, c, p.policy] for p in clusters[c])
            for p in clusters[c]:
                model += z[w.name, c, p.policy] <= y[c, p.policy]
                model += z[w.name, c, p.policy] >= x[w.name, c] + y[c, p.policy] - 1
    model.solve(pulp.PULP_CBC_CMD(msg=False))
    return float(pulp.value(model.objective))


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """File descriptor 1 goes to /dev/null meanwhile (what a C++ library prints, too)."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def highspy_objective(workloads, clusters, scores) -> float | None:
    """The same model through highspy's own modelling API (the HiGHS inside scipy, unwrapped)."""
    try:
        import highspy
    except ImportError:
        return None
    with _quiet_stdout():  # its constructor prints a banner on the process's own stdout
        h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    keys = [(w, c, p) for w in workloads for c in clusters for p in clusters[c]]
    z = {(w.name, c, p.policy): h.addBinary() for w, c, p in keys}
    x = {(w.name, c): h.addBinary() for w in workloads for c in clusters}
    y = {(c, p.policy): h.addBinary() for c in clusters for p in clusters[c]}
    for c in clusters:
        h.addConstr(h.qsum(y[c, p.policy] for p in clusters[c]) <= 1)
        for p in clusters[c]:
            h.addConstr(
                h.qsum(float(w.amount) * z[w.name, c, p.policy] for w in workloads)
                - float(p.amount) * y[c, p.policy]
                <= 0
            )
    for w in workloads:
        h.addConstr(h.qsum(x[w.name, c] for c in clusters) == 1)
        for c in clusters:
            h.addConstr(x[w.name, c] - h.qsum(z[w.name, c, p.policy] for p in clusters[c]) == 0)
            for p in clusters[c]:
                h.addConstr(z[w.name, c, p.policy] - x[w.name, c] <= 0)
                h.addConstr(z[w.name, c, p.policy] - y[c, p.policy] <= 0)
                h.addConstr(x[w.name, c] + y[c, p.policy] - z[w.name, c, p.policy] <= 1)
    h.maximize(h.qsum(scores[w.app, c, p.device] * z[w.name, c, p.policy] for w, c, p in keys))
    return float(h.getInfo().objective_function_value)


def timed(run: Callable[[], T]) -> tuple[float, T]:
    """The median of three runs' wall time, and the last run's answer."""
    times: list[float] = []
    for _ in range(3):
        started = time.perf_counter()
        answer = run()
        times.append(time.perf_counter() - started)
    return sorted(times)[1], answer


def measure(workload_count: int, cluster_count: int) -> dict[str, float]:
    """Median seconds of dsf's solve and of the baselines on one instance (nan when absent).

    Keys: ``dsf``, ``highspy``, ``cbc`` (seconds) and ``objective``; every solver must reach
    the same optimum.
    """
    workloads, clusters, scores = instance(workload_count, cluster_count)
    ours, plan = timed(lambda: solve(workloads, clusters, scores, maximize=True))
    figures = {"dsf": ours, "objective": float(plan.objective)}
    for key, baseline in (("highspy", highspy_objective), ("cbc", pulp_objective)):
        seconds, value = timed(functools.partial(baseline, workloads, clusters, scores))
        if value is not None:
            assert round(value) == plan.objective, (key, value, plan.objective)
        figures[key] = seconds if value is not None else float("nan")
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workloads", type=int, default=20)
    parser.add_argument("--clusters", type=int, default=50)
    args = parser.parse_args(argv)
    figures = measure(args.workloads, args.clusters)
    print(
        f"{args.workloads} workloads × {args.clusters} clusters × {len(DEVICES)} configurations "
        f"({args.workloads * args.clusters * len(DEVICES)} z variables); median of 3 runs"
    )
    print(f"{'solver':<44} {'seconds':>9} {'objective':>10} {'ratio':>7}")
    objective = int(figures["objective"])
    ours = figures["dsf"]
    print(f"{'scipy.optimize.milp (HiGHS), dsf':<44} {ours:>9.3f} {objective:>10} {1.0:>7.2f}")
    for label, key in (
        ("highspy, the same HiGHS without scipy", "highspy"),
        ("PuLP with bundled CBC (upstream)", "cbc"),
    ):
        seconds = figures[key]
        if seconds != seconds:
            print(f"{label:<44} not installed")
        else:
            print(f"{label:<44} {seconds:>9.3f} {objective:>10} {seconds / ours:>7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
