"""Choosing configurations and placements together: upstream's mixed-integer program.

Pure but for the solver call. For workloads ``a``, clusters ``c`` and the configurations
(Policies) ``p`` each cluster may take, binary variables

- ``y[c, p]``: cluster ``c`` takes configuration ``p`` (at most one per cluster),
- ``x[a, c]``: workload ``a`` runs on cluster ``c`` (at most one cluster per workload),
- ``z[a, c, p]``: both, linked by ``z ≤ x``, ``z ≤ y``, ``z ≥ x + y − 1`` and
  ``x = Σ_p z``,

with capacity ``Σ_a request(a) · z[a, c, p] ≤ supply(p) · y[c, p]`` (a workload only uses a
configuration that supplies its kind of resource), and the objective ``Σ score(a, c,
device(p)) · z`` maximized or minimized. :mod:`dsf_compile.placement.optimize_model`
builds it as sparse arrays and solves it exactly (quantities are fractions).

Lexicographic: the plan places as many workloads as fit, then takes the best objective.
The model with every workload placed is solved first (the usual case, one solve); when
it has no plan, a first solve finds the largest number ``k`` that fits and a second the
best objective among the plans that place ``k``.

Ties are broken deterministically by a tiny perturbation. Number the ``A`` workloads
``i = 0 … A−1`` and the ``Q`` (cluster, configuration) pairs ``q = 0 … Q−1`` in name
order; ``z[i, q]`` gets the bonus ``(A − i) · (Q − q) · u`` with ``u = 1 / (2 · A² · Q + 2)``.
A plan sets at most ``A`` of the ``z``, so its bonuses add up to less than 1/2; scores
are integers, so two plans with different objectives differ by at least 1 and the
bonuses never change the optimum's value. Among equal optima the largest bonus wins: the
earliest clusters and configurations, and — a product, not a sum, so that swapping two
workloads' clusters changes it (the rearrangement inequality) — the earliest workload on
the earliest of them; the same plan on every run. Two plans' bonuses differ by a whole
multiple of ``u``, which stays above HiGHS's absolute gap tolerance (10⁻⁶) while
``A² · Q`` is below 500,000 (the 20 × 50 × 4 benchmark: 80,000), so the solver tells
them apart; past that the plan is still the same on every run (the model is built in
name order and HiGHS is deterministic), only no longer surely the earliest names.

Bounds: at most :data:`MAX_Z_VARIABLES` ``z`` variables, checked before anything is
built, and a deadline on the solver.

The solver is HiGHS through ``scipy.optimize.milp`` (``pip install 'ocm-dynamic-scoring[optimize]'``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from dsf_compile.placement.optimize_model import (
    SOLVER_HINT,
    Model,
    ModelTooLargeError,
    OptimizationError,
    Pair,
    SolverMissingError,
    TimeLimitError,
)
from dsf_contract.records import frozen

__all__ = [
    "DEFAULT_TIME_LIMIT",
    "MAX_Z_VARIABLES",
    "SOLVER_HINT",
    "Configuration",
    "ModelTooLargeError",
    "OptimizationError",
    "Solution",
    "SolverMissingError",
    "TimeLimitError",
    "Workload",
    "check_size",
    "solve",
]

#: The bound on the model's size: workloads × clusters × Policies (docs/optimize.md).
MAX_Z_VARIABLES = 250_000
#: Seconds the solver may take (``optimize --time-limit``).
DEFAULT_TIME_LIMIT = 60.0


@frozen
class Workload:
    """A ManifestWorkReplicaSet to place: its app (for the score item) and its demand."""

    name: str
    app: str
    kind: str
    amount: Fraction


@frozen
class Configuration:
    """A Policy a cluster may take: the device it sets up and what it supplies."""

    policy: str
    device: str
    kind: str
    amount: Fraction


@frozen
class Solution:
    """The solution: a configuration per used cluster, a cluster per placed workload."""

    objective: int
    configurations: Mapping[str, str]  # cluster -> policy
    placements: Mapping[str, str]  # workload -> cluster
    left_out: tuple[str, ...] = ()  # the workloads that do not fit, in name order


ScoreTable = Mapping[tuple[str, str, str], int]
"""``(app, cluster, device)`` → score."""


def check_size(workloads: int, pairs: int) -> None:
    """:class:`ModelTooLargeError` when ``workloads`` × ``pairs`` passes :data:`MAX_Z_VARIABLES`."""
    size = workloads * pairs
    if size > MAX_Z_VARIABLES:
        raise ModelTooLargeError(
            f"the model is too large: {workloads:,} workloads × {pairs:,} (cluster, Policy) "
            f"pairs = {size:,} z variables, {size - MAX_Z_VARIABLES:,} over the bound of "
            f"{MAX_Z_VARIABLES:,}"
        )


def solve(
    workloads: Sequence[Workload],
    clusters: Mapping[str, Sequence[Configuration]],
    scores: ScoreTable,
    *,
    maximize: bool,
    deadline: float | None = None,
) -> Solution:
    """The lexicographic optimum: most workloads placed, then the best objective.

    ``deadline`` is a :func:`time.monotonic` instant (default: :data:`DEFAULT_TIME_LIMIT`
    from now). Raises :class:`OptimizationError` when a score is missing,
    :class:`ModelTooLargeError` past the size bound and :class:`TimeLimitError` past the
    deadline.
    """
    check_size(len(workloads), sum(len(configs) for configs in clusters.values()))
    names = sorted(w.name for w in workloads)
    pairs = [(c, p) for c in sorted(clusters) for p in sorted(clusters[c], key=lambda p: p.policy)]
    _check_scores(sorted({w.app for w in workloads}), pairs, scores)
    if not names or not pairs:
        return Solution(0, {}, {}, tuple(names))
    by_name = {w.name: w for w in workloads}
    model = _model([by_name[a] for a in names], pairs, scores, deadline)
    assignment = _best_assignment(model, model.objective(maximize=maximize))
    value = sum(int(model.scores[a, q]) for a, q in assignment.items())
    # a configuration no workload uses is left out: the cluster keeps what it has
    configurations = {pairs[q][0]: pairs[q][1].policy for q in assignment.values()}
    placements = {names[a]: pairs[q][0] for a, q in assignment.items()}
    left_out = tuple(a for i, a in enumerate(names) if i not in assignment)
    return Solution(
        value, dict(sorted(configurations.items())), dict(sorted(placements.items())), left_out
    )


def _check_scores(
    apps: Sequence[str], pairs: Sequence[tuple[str, Configuration]], scores: ScoreTable
) -> None:
    """:class:`OptimizationError` naming the first (app, cluster, device) with no score."""
    missing = sorted(
        (app, c, p.device) for app in apps for c, p in pairs if (app, c, p.device) not in scores
    )
    if missing:
        shown = ", ".join(f"({app}, {c}, {device})" for app, c, device in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise OptimizationError(f"no score for (app, cluster, device) {shown}{more}")


def _model(
    placed: Sequence[Workload],
    pairs: Sequence[tuple[str, Configuration]],
    scores: ScoreTable,
    deadline: float | None,
) -> Model:
    """The MILP of ``placed`` (in name order) over the (cluster, configuration) ``pairs``."""
    import numpy as np  # the solver extra: optimize_model has checked it is there

    apps = sorted({w.app for w in placed})
    by_app = np.array([[scores[app, c, p.device] for c, p in pairs] for app in apps])
    app_row = {app: i for i, app in enumerate(apps)}
    return Model(
        pairs=[Pair(c, p.kind, p.amount) for c, p in pairs],
        kinds=[w.kind for w in placed],
        requests=[w.amount for w in placed],
        scores=by_app[[app_row[w.app] for w in placed]],
        deadline=time.monotonic() + DEFAULT_TIME_LIMIT if deadline is None else deadline,
    )


def _best_assignment(model: Model, objective: Any) -> dict[int, int]:
    """Every workload placed if that fits; else as many as fit, then the best objective."""
    assignment = model.solve_exactly(objective, every=True)
    if assignment is None:
        most = model.solve_exactly(model.count_objective(), every=False)
        placed = len(most or {})
        assignment = model.solve_exactly(objective, every=False, placed=placed) if placed else {}
    if assignment is None:  # cannot happen: the count solve found a plan of that size
        raise OptimizationError("the solver lost the plan it had found")
    return assignment
