"""Choosing configurations and placements together: upstream's mixed-integer program.

Pure but for the solver call. For workloads ``a``, clusters ``c`` and the configurations
(Policies) ``p`` each cluster may take, binary variables

- ``y[c, p]``: cluster ``c`` takes configuration ``p`` (at most one per cluster),
- ``x[a, c]``: workload ``a`` runs on cluster ``c`` (exactly one cluster per workload),
- ``z[a, c, p]``: both, linked by ``z ≤ x``, ``z ≤ y``, ``z ≥ x + y − 1`` and
  ``x = Σ_p z``,

with capacity ``Σ_a request(a) · z[a, c, p] ≤ supply(p) · y[c, p]`` (a workload only uses a
configuration that supplies its kind of resource), and the objective ``Σ score(a, c,
device(p)) · z`` maximized or minimized.

Ties are broken deterministically by a tiny perturbation. Number the ``A`` workloads
``i = 0 … A−1`` and the ``Q`` (cluster, configuration) pairs ``q = 0 … Q−1`` in name
order; ``z[i, q]`` gets the bonus ``(A − i) · (Q − q) · u`` with ``u = 1 / (2 · A² · Q + 2)``.
A plan sets exactly ``A`` of the ``z``, so its bonuses add up to less than 1/2; scores
are integers, so two plans with different objectives differ by at least 1 and the
bonuses never change the optimum's value. Among equal optima the largest bonus wins: the
earliest clusters and configurations, and — a product, not a sum, so that swapping two
workloads' clusters changes it (the rearrangement inequality) — the earliest workload on
the earliest of them; the same plan on every run. Two plans' bonuses differ by a whole
multiple of ``u``, which stays above HiGHS's absolute gap tolerance (10⁻⁶) while
``A² · Q`` is below 500,000 (the 20 × 50 × 4 benchmark: 80,000), so the solver tells
them apart.

The solver is HiGHS through ``scipy.optimize.milp`` (``pip install 'ocm-dynamic-scoring[optimize]'``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from dsf_compile.contract import PLACEHOLDER_RE
from dsf_compile.errors import DsfError

SOLVER_HINT = "optimize needs the solver extra: pip install 'ocm-dynamic-scoring[optimize]'"


class OptimizationError(Exception):
    """The model cannot be solved (infeasible, a score missing)."""


class SolverMissingError(DsfError):
    """The optional solver extra is not installed."""


@dataclass(frozen=True)
class Workload:
    """A ManifestWorkReplicaSet to place: its app (for the score item) and its demand."""

    name: str
    app: str
    kind: str
    amount: Fraction


@dataclass(frozen=True)
class Configuration:
    """A Policy a cluster may take: the device it sets up and what it supplies."""

    policy: str
    device: str
    kind: str
    amount: Fraction


@dataclass(frozen=True)
class Plan:
    """The solution: a configuration per used cluster and a cluster per workload."""

    objective: int
    configurations: Mapping[str, str]  # cluster -> policy
    placements: Mapping[str, str]  # workload -> cluster


ScoreTable = Mapping[tuple[str, str, str], int]
"""``(app, cluster, device)`` → score."""


def item_pattern(dimension_format: str) -> re.Pattern[str]:
    """Read an item name back through the dimension format: named groups ``app`` and ``device``."""
    parts = PLACEHOLDER_RE.split(dimension_format)
    out, seen = [], set()
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out.append(re.escape(part))
        elif part in ("app", "device") and part not in seen:
            seen.add(part)
            out.append(f"(?P<{part}>.*?)")
        else:
            out.append(".*?")
    return re.compile("".join(out), re.DOTALL)


def solve(
    workloads: Sequence[Workload],
    clusters: Mapping[str, Sequence[Configuration]],
    scores: ScoreTable,
    *,
    maximize: bool,
) -> Plan:
    """The optimal plan; :class:`OptimizationError` when a score is missing or none exists."""
    try:
        import numpy as np
        from scipy.optimize import Bounds, LinearConstraint, milp
        from scipy.sparse import coo_array
    except ImportError as err:  # the solver is an optional extra
        raise SolverMissingError(SOLVER_HINT) from err

    names = sorted(w.name for w in workloads)
    by_name = {w.name: w for w in workloads}
    cluster_names = sorted(clusters)
    configs = {c: sorted(clusters[c], key=lambda p: p.policy) for c in cluster_names}
    missing = sorted(
        (by_name[a].app, c, p.device)
        for a in names
        for c in cluster_names
        for p in configs[c]
        if (by_name[a].app, c, p.device) not in scores
    )
    if missing:
        shown = ", ".join(f"({app}, {c}, {device})" for app, c, device in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise OptimizationError(f"no score for (app, cluster, device) {shown}{more}")

    # variable indices, in sorted order
    y = {
        (c, p.policy): i
        for i, (c, p) in enumerate((c, p) for c in cluster_names for p in configs[c])
    }
    x = {
        (a, c): len(y) + i for i, (a, c) in enumerate((a, c) for a in names for c in cluster_names)
    }
    z_keys = [(a, c, p) for a in names for c in cluster_names for p in configs[c]]
    z = {(a, c, p.policy): len(y) + len(x) + i for i, (a, c, p) in enumerate(z_keys)}
    count = len(y) + len(x) + len(z)

    rows: list[dict[int, float]] = []
    lower: list[float] = []
    upper: list[float] = []

    def row(coefficients: dict[int, float], low: float, high: float) -> None:
        rows.append(coefficients)
        lower.append(low)
        upper.append(high)

    for c in cluster_names:  # one configuration per cluster
        row({y[c, p.policy]: 1.0 for p in configs[c]}, -math.inf, 1.0)
    for a in names:  # one cluster per workload
        row({x[a, c]: 1.0 for c in cluster_names}, 1.0, 1.0)
        for c in cluster_names:  # x = Σ_p z
            coefficients = {x[a, c]: 1.0}
            coefficients.update({z[a, c, p.policy]: -1.0 for p in configs[c]})
            row(coefficients, 0.0, 0.0)
            for p in configs[c]:
                k = z[a, c, p.policy]
                row({k: 1.0, x[a, c]: -1.0}, -math.inf, 0.0)  # z ≤ x
                row({k: 1.0, y[c, p.policy]: -1.0}, -math.inf, 0.0)  # z ≤ y
                row({x[a, c]: 1.0, y[c, p.policy]: 1.0, k: -1.0}, -math.inf, 1.0)  # z ≥ x + y − 1
    for c in cluster_names:  # capacity
        for p in configs[c]:
            coefficients = {y[c, p.policy]: -float(p.amount)}
            coefficients.update({z[a, c, p.policy]: float(by_name[a].amount) for a in names})
            row(coefficients, -math.inf, 0.0)

    objective = np.zeros(count)
    upper_bounds = np.ones(count)
    # a plan sets one z per workload: A bonuses of at most A · Q units each
    pairs = {key: q for q, key in enumerate(y)}  # (cluster, policy) in name order
    workload_rank = {a: i for i, a in enumerate(names)}
    bonus_unit = 1.0 / (2 * len(names) ** 2 * len(pairs) + 2)
    for a, c, p in z_keys:
        k = z[a, c, p.policy]
        score = scores[by_name[a].app, c, p.device]
        weight = (len(names) - workload_rank[a]) * (len(pairs) - pairs[c, p.policy])
        bonus = weight * bonus_unit
        objective[k] = -(score + bonus) if maximize else score - bonus
        if by_name[a].kind != p.kind:
            upper_bounds[k] = 0.0  # this configuration does not supply what the workload needs
    # sparse: a row touches at most a few variables, a dense matrix would be rows × count
    row_index, column_index, values = [], [], []
    for index, coefficients in enumerate(rows):
        for k, value in coefficients.items():
            row_index.append(index)
            column_index.append(k)
            values.append(value)
    matrix = coo_array((values, (row_index, column_index)), shape=(len(rows), count)).tocsr()
    result: Any = milp(
        objective,
        integrality=np.ones(count),
        bounds=Bounds(np.zeros(count), upper_bounds),
        constraints=LinearConstraint(matrix, np.array(lower), np.array(upper)),
        options={"mip_rel_gap": 0.0, "presolve": True},
    )
    if result.status == 2 or result.x is None:
        raise OptimizationError(
            "no plan fits: the workloads' requests exceed what the clusters' configurations supply"
        )
    if result.status != 0:
        raise OptimizationError(f"the solver stopped without an optimum: {result.message}")
    chosen = [round(v) == 1 for v in result.x]
    configurations = {c: policy for (c, policy), k in y.items() if chosen[k]}
    placements = {a: c for (a, c), k in x.items() if chosen[k]}
    value = 0
    for a, c, p in z_keys:
        if chosen[z[a, c, p.policy]]:
            value += scores[by_name[a].app, c, p.device]
    # a configuration no workload uses is left out: the cluster keeps what it has
    used = set(placements.values())
    configurations = {c: policy for c, policy in configurations.items() if c in used}
    return Plan(value, dict(sorted(configurations.items())), dict(sorted(placements.items())))
