"""The optimizer's mixed-integer program as sparse arrays, solved exactly with HiGHS.

Variables, in this order: ``y[q]`` for the ``Q`` (cluster, configuration) pairs, then
``z[a, q]`` for the ``A`` workloads × ``Q`` pairs (``Q + a·Q + q``). Upstream's ``x[a, c]``
is substituted by its definition ``Σ_p z[a, c, p]``, and its links ``z ≤ x`` (``z ≥ 0``
gives it) and ``z ≥ x + y − 1`` (at most one ``y`` per cluster and ``z ≤ y`` give it) are
implied, so the rows are:

- at most one configuration per cluster: ``Σ_{q ∈ c} y[q] ≤ 1``;
- one cluster per workload: ``Σ_q z[a, q] = 1`` (or ``≤ 1`` when not every workload fits);
- ``z[a, q] ≤ y[q]``;
- capacity: ``Σ_a request(a) / supply(q) · z[a, q] ≤ y[q]``, only where the requests
  that may use ``q`` could exceed its supply (exactly computed; otherwise the row can
  never bind and is left out);
- when not every workload fits, the number placed: ``Σ z = k``;
- cuts added by :meth:`Model.solve_exactly` (below).

A ``z`` whose configuration supplies another kind, or less than the workload's request,
is fixed to 0 by its bound. Every row is built with numpy index arrays into one
``scipy.sparse`` matrix: no Python object per row.

Exactness. Quantities are fractions (``2n``, ``1Pi``, ``1e18``); HiGHS computes in
float64, treats coefficients below 10⁻⁹ as zero and refuses those above 10¹⁵. So each
capacity row is divided by its supply: coefficients in ``(0, 1]``, each within an ulp of
the exact ratio, far inside HiGHS's feasibility tolerance (10⁻⁷), so every exactly
fitting plan stays feasible; the errors the solver can make (a coefficient dropped as
too small, a row over-filled within its tolerance) only *loosen* the rows. A plan the
solver returns is checked in exact arithmetic; an over-full configuration gets a cover cut (the largest of its workloads
up to the first that over-fills it may not all be there together — true of every exact
plan) and the model is solved again. The first plan that passes is exactly feasible and
optimal for a relaxation of the exact model, so it is the exact optimum.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from dsf_compile.errors import DsfError
from dsf_contract.records import frozen

SOLVER_HINT = "optimize needs the solver extra: pip install 'ocm-dynamic-scoring[optimize]'"
#: Cover cuts per solve; real instances need none or a few (quantities far apart).
MAX_ROUNDS = 200


class OptimizationError(Exception):
    """The model cannot be solved (a score missing, a bound passed)."""


class TimeLimitError(OptimizationError):
    """The solver did not prove an optimum before the time limit."""


class ModelTooLargeError(OptimizationError):
    """The model would have more ``z`` variables than :data:`.optimize.MAX_Z_VARIABLES`."""


class SolverMissingError(DsfError):
    """The optional solver extra is not installed."""


@frozen
class Pair:
    """A cluster and one configuration it may take, with what that configuration supplies."""

    cluster: str
    kind: str
    supply: Fraction


@dataclass
class Model:
    """One instance: the pairs and workloads in name order, with their requests and scores."""

    pairs: Sequence[Pair]
    kinds: Sequence[str]  # per workload
    requests: Sequence[Fraction]  # per workload
    scores: Any  # numpy int64 array, workloads × pairs
    deadline: float
    clock: Callable[[], float] = time.monotonic
    cuts: list[tuple[int, tuple[int, ...]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        np = _numpy()
        self.count = len(self.requests)
        self.width = len(self.pairs)
        # Per kind, the requests in increasing order and their running totals (exact):
        # the workloads that may use a pair are those of its kind up to its supply.
        rank = np.zeros(self.count, dtype=np.int64)
        ordered: dict[str, list[Fraction]] = {}
        for kind in sorted(set(self.kinds)):
            members = sorted(
                (a for a in range(self.count) if self.kinds[a] == kind),
                key=lambda a: self.requests[a],
            )
            rank[members] = np.arange(len(members))
            ordered[kind] = [self.requests[a] for a in members]
        running = {
            k: list(itertools.accumulate(v, initial=Fraction(0))) for k, v in ordered.items()
        }
        kind_ids = {kind: i for i, kind in enumerate(sorted(ordered))}
        workload_kind = np.array([kind_ids[k] for k in self.kinds], dtype=np.int64)
        pair_kind = np.array([kind_ids.get(p.kind, -1) for p in self.pairs], dtype=np.int64)
        fitting = np.zeros(self.width, dtype=np.int64)
        self.capacity_pairs: list[int] = []
        for q, pair in enumerate(self.pairs):
            fitting[q] = bisect.bisect_right(ordered.get(pair.kind, []), pair.supply)
            # a row only where the workloads that may use the pair could over-fill it
            if running.get(pair.kind, [Fraction(0)])[fitting[q]] > pair.supply:
                self.capacity_pairs.append(q)
        self.allowed = (workload_kind[:, None] == pair_kind[None, :]) & (
            rank[:, None] < fitting[None, :]
        )

    # ------------------------------------------------------------- the rows

    def _z(self, a: Any, q: Any) -> Any:
        return self.width + a * self.width + q

    def matrix(self, *, every: bool, placed: int | None) -> tuple[Any, Any, Any]:
        """The constraint matrix and its row bounds, as sparse arrays built from index arrays."""
        np = _numpy()
        from scipy.sparse import coo_array

        rows: list[Any] = []
        cols: list[Any] = []
        values: list[Any] = []
        lower: list[Any] = []
        upper: list[Any] = []
        next_row = 0

        def block(r: Any, c: Any, v: Any, low: Any, high: Any) -> None:
            nonlocal next_row
            rows.append(np.asarray(r, dtype=np.int64) + next_row)
            cols.append(np.asarray(c, dtype=np.int64))
            values.append(np.asarray(v, dtype=np.float64))
            lower.append(np.asarray(low, dtype=np.float64))
            upper.append(np.asarray(high, dtype=np.float64))
            next_row += len(lower[-1])

        clusters = sorted({p.cluster for p in self.pairs})
        cluster_index = {c: i for i, c in enumerate(clusters)}
        of_pair = np.array([cluster_index[p.cluster] for p in self.pairs], dtype=np.int64)
        n = len(clusters)
        block(of_pair, np.arange(self.width), np.ones(self.width), np.full(n, -np.inf), np.ones(n))

        a_index, q_index = np.nonzero(self.allowed)
        z_index = self._z(a_index, q_index)
        entries = len(z_index)
        one_each = np.ones(self.count)
        block(a_index, z_index, np.ones(entries), one_each if every else 0 * one_each, one_each)
        # z ≤ y: one row per allowed z
        block(
            np.repeat(np.arange(entries), 2),
            np.column_stack([z_index, q_index]).ravel(),
            np.tile([1.0, -1.0], entries),
            np.full(entries, -np.inf),
            np.zeros(entries),
        )
        self._capacity_rows(block)
        if placed is not None:
            block(np.zeros(entries), z_index, np.ones(entries), [placed], [placed])
        for q, members in self.cuts:
            m = len(members)
            block(np.zeros(m), self._z(np.array(members), q), np.ones(m), [-np.inf], [m - 1])

        matrix = coo_array(
            (np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))),
            shape=(next_row, self.width * (1 + self.count)),
        ).tocsr()
        return matrix, np.concatenate(lower), np.concatenate(upper)

    def _capacity_rows(self, block: Callable[[Any, Any, Any, Any, Any], None]) -> None:
        np = _numpy()
        if not self.capacity_pairs:
            return
        pairs = np.array(self.capacity_pairs, dtype=np.int64)
        requests = np.array([float(r) for r in self.requests])
        supplies = np.array([float(self.pairs[q].supply) for q in self.capacity_pairs])
        allowed = self.allowed[:, pairs]  # workloads × capacity rows
        a_index, row_index = np.nonzero(allowed)
        count = len(pairs)
        block(
            np.concatenate([row_index, np.arange(count)]),
            np.concatenate([self._z(a_index, pairs[row_index]), pairs]),
            np.concatenate([requests[a_index] / supplies[row_index], -np.ones(count)]),
            np.full(count, -np.inf),
            np.zeros(count),
        )

    # ------------------------------------------------------------- solving

    def objective(self, *, maximize: bool) -> Any:
        """Minimized by the solver: the scores (negated to maximize) and the tie-break bonus."""
        np = _numpy()
        a, q = np.indices((self.count, self.width))
        # see dsf_compile.placement.optimize: (A − i)·(Q − q)·u, below 1/2 in every plan
        unit = 1.0 / (2 * self.count**2 * self.width + 2)
        bonus = ((self.count - a) * (self.width - q) * unit).ravel()
        score = self.scores.ravel().astype(np.float64)
        z_costs = -(score + bonus) if maximize else score - bonus
        return np.concatenate([np.zeros(self.width), z_costs])

    def count_objective(self) -> Any:
        """Minimized by the solver: minus the number of workloads placed."""
        np = _numpy()
        return np.concatenate([np.zeros(self.width), -np.ones(self.count * self.width)])

    def solve_exactly(
        self, objective: Any, *, every: bool, placed: int | None = None
    ) -> dict[int, int] | None:
        """Workload → pair of the optimum, exactly feasible; None when no plan exists."""
        for _ in range(MAX_ROUNDS):
            solution = self._solve(objective, every=every, placed=placed)
            if solution is None:
                return None
            assignment = self._decode(solution)
            cuts = self._over_full(assignment)
            if not cuts:
                return assignment
            self.cuts += cuts
        raise OptimizationError(
            f"the solver's plans still over-fill a configuration after {MAX_ROUNDS} rounds "
            "of exact checks (requests and supplies too far apart in magnitude)"
        )

    def _solve(self, objective: Any, *, every: bool, placed: int | None) -> Any | None:
        np = _numpy()
        from scipy.optimize import Bounds, LinearConstraint, milp

        remaining = self.deadline - self.clock()
        if remaining <= 0:
            raise TimeLimitError("no time left")
        matrix, lower, upper = self.matrix(every=every, placed=placed)
        size = self.width * (1 + self.count)
        upper_bounds = np.concatenate([np.ones(self.width), self.allowed.ravel().astype(float)])
        result: Any = milp(
            objective,
            integrality=np.ones(size),
            bounds=Bounds(np.zeros(size), upper_bounds),
            constraints=LinearConstraint(matrix, lower, upper),
            # No presolve: on this model HiGHS's presolve fills the matrix in (+3.9 M
            # nonzeros at 250,000 z) and does not look at the time limit meanwhile (a 20 s
            # limit ended after 123 s); without it every instance measured solved faster
            # (200 × 200 × 2: 26 s instead of 29-73 s).
            options={"mip_rel_gap": 0.0, "presolve": False, "time_limit": remaining},
        )
        if result.status == 2:
            return None
        if result.status == 1:
            raise TimeLimitError(str(result.message))
        if result.status != 0 or result.x is None:
            raise OptimizationError(f"the solver stopped without an optimum: {result.message}")
        return result.x

    def _decode(self, solution: Any) -> dict[int, int]:
        np = _numpy()
        chosen = np.asarray(solution) > 0.5
        taken = chosen[: self.width]
        z = chosen[self.width :].reshape(self.count, self.width)
        assignment: dict[int, int] = {}
        for a, q in zip(*np.nonzero(z), strict=True):
            if a in assignment or not taken[q] or not self.allowed[a, q]:
                raise OptimizationError("the solver returned an inconsistent plan")
            assignment[int(a)] = int(q)
        return assignment

    def _over_full(self, assignment: dict[int, int]) -> list[tuple[int, tuple[int, ...]]]:
        """A cover cut for every pair whose workloads exceed its supply (exact arithmetic)."""
        on: dict[int, list[int]] = {}
        for a, q in sorted(assignment.items()):
            on.setdefault(q, []).append(a)
        cuts = []
        for q, members in sorted(on.items()):
            supply = self.pairs[q].supply
            largest = sorted(members, key=lambda a: (-self.requests[a], a))
            totals = list(itertools.accumulate(self.requests[a] for a in largest))
            if totals[-1] > supply:
                first_over = bisect.bisect_right(totals, supply)
                cuts.append((q, tuple(sorted(largest[: first_over + 1]))))
        return cuts


def _numpy() -> Any:
    try:
        import numpy
        import scipy.optimize  # noqa: F401  (the solver: fail here, before any work)
    except ImportError as err:  # the solver is an optional extra
        raise SolverMissingError(SOLVER_HINT) from err
    return numpy
