"""What ``validate`` checks in ``placements/``: the registry of the bad-input checks.

Pure. Each :class:`Check` is one entry: a name, what it checks in one line, and the
function that reports it (``docs/placements.md``). The errors say that an object ranks
by or names something that is not there (OCM would silently score every cluster 0 for
it, or report the Placement misconfigured); the warnings say that a Placement will not
select what its author probably expects. Every problem is located at the object's
field. They run in ``validate`` (and every command that loads the fleet's plan) after
the inputs are read and each scorer resolved, against the scores the fleet publishes
(:mod:`.published_scores`).

Adding a check is one function taking the object under check (:mod:`.check_subjects`)
and yielding its problems, and one entry below.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Generic, TypeVar

from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.check_subjects import (
    CheckedOptimization,
    CheckedPlacement,
    OptimizationFleet,
    PlacementFleet,
)
from dsf_compile.placement.checks_cel import cel_expressions
from dsf_compile.placement.checks_optimization import (
    demand,
    known_clusters,
    listed_once,
    published_score,
    score_format,
    supply,
    written_names,
)
from dsf_compile.placement.checks_scores import inactive_scorers, masked_scores, score_coordinates
from dsf_compile.placement.checks_selection import (
    cluster_set_bound,
    selects_clusters,
    tolerations,
)
from dsf_compile.placement.published_scores import ScoreCatalog
from dsf_contract.problem import Problem

Subject = TypeVar("Subject", CheckedPlacement, CheckedOptimization)


@dataclass(frozen=True)
class Check(Generic[Subject]):
    """One bad-input check: its name, what it checks, and what reports its problems."""

    name: str
    what: str
    run: Callable[[Subject], Iterable[Problem]]


#: What ``validate`` checks of each Placement, in the order it reports them.
PLACEMENT_CHECKS: tuple[Check[CheckedPlacement], ...] = (
    Check("score-coordinates", "each scoreCoordinate names a built-in prioritizer, or a published score and an item it gives", score_coordinates),
    Check("tolerations", "no toleration OCM's TaintToleration plugin calls misconfigured", tolerations),
    Check("cel", "CEL expressions compile, give a bool, read published scores, stay under OCM's cost limit", cel_expressions),
    Check("inactive-scorer", "warns of a score it ranks by whose scorer is Inactive in dsf.lock.json", inactive_scorers),
    Check("cluster-set-bound", "warns when no ManagedClusterSetBinding binds a cluster set to its namespace", cluster_set_bound),
    Check("selects-clusters", "warns when, scheduled on the inventory, it selects no cluster", selects_clusters),
    Check("masked-scores", "warns of a score it ranks by that a mask keeps off clusters it can select", masked_scores),
)  # fmt: skip

#: What ``validate`` checks of each PlacementOptimization (its problems come sorted).
OPTIMIZATION_CHECKS: tuple[Check[CheckedOptimization], ...] = (
    Check("score-format", "preference.scoreDimensionFormat names ${app} and ${device}", score_format),
    Check("published-score", "preference.addOnPlacementScore is a score a scorer publishes", published_score),
    Check("listed-once", "clusters, targetWorkloads and each cluster's availablePolicies list a name once", listed_once),
    Check("known-clusters", "every cluster is in the inventory (clusters/)", known_clusters),
    Check("supply", "every available Policy is in placements/ with its supply labels, a quantity ≥ 0", supply),
    Check("demand", "every target workload is a ManifestWorkReplicaSet in placements/ with its demand labels", demand),
    Check("written-names", "no object the plan writes is in another plan or another file of placements/", written_names),
)  # fmt: skip


def check_placements(
    inputs: Inputs, catalog: ScoreCatalog, at: datetime
) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` of every Placement of ``inputs`` against the published scores."""
    fleet = PlacementFleet(inputs, catalog, at)
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for located in inputs.placements:
        placement = CheckedPlacement(fleet, located)
        for check in PLACEMENT_CHECKS:
            for problem in check.run(placement):
                (errors if problem.severity == "error" else warnings).append(problem)
    return errors, warnings


def check_optimizations(inputs: Inputs, catalog: ScoreCatalog) -> list[Problem]:
    """Every PlacementOptimization of ``inputs`` against ``placements/``, the inventory and the scores."""
    fleet = OptimizationFleet(inputs, catalog)
    problems: set[Problem] = set()  # a Policy two clusters offer is checked twice
    # in order: the first plan to claim an object keeps it
    for located in inputs.optimizations:
        subject = CheckedOptimization(fleet, located)
        problems.update(p for check in OPTIMIZATION_CHECKS for p in check.run(subject))
    return sorted(problems)
