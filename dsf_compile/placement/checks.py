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
from datetime import datetime
from typing import Generic, TypeVar

from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement import checks_cel, checks_optimization, checks_scores, checks_selection
from dsf_compile.placement.check_subjects import (
    CheckedOptimization,
    CheckedPlacement,
    OptimizationFleet,
    PlacementFleet,
)
from dsf_compile.placement.published_scores import ScoreCatalog
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

Subject = TypeVar("Subject", CheckedPlacement, CheckedOptimization)


@frozen
class Check(Generic[Subject]):
    """One bad-input check: its name, what it checks, and what reports its problems."""

    name: str
    what: str
    run: Callable[[Subject], Iterable[Problem]]


class PlacementCheck(Check[CheckedPlacement]):
    """A check run on each Placement; its problems are reported in the registry's order."""


class OptimizationCheck(Check[CheckedOptimization]):
    """A check run on each PlacementOptimization; their problems are reported sorted."""


#: What ``validate`` checks in ``placements/``.
CHECKS: tuple[PlacementCheck | OptimizationCheck, ...] = (
    PlacementCheck("score-coordinates", "each scoreCoordinate names a built-in prioritizer, or a published score and an item it gives", checks_scores.score_coordinates),
    PlacementCheck("tolerations", "no toleration OCM's TaintToleration plugin calls misconfigured", checks_selection.tolerations),
    PlacementCheck("cel", "CEL expressions compile, give a bool, read published scores, stay under OCM's cost limit", checks_cel.cel_expressions),
    PlacementCheck("inactive-scorer", "warns of a score it ranks by whose scorer is Inactive in dsf.lock.json", checks_scores.inactive_scorers),
    PlacementCheck("cluster-set-bound", "warns when no ManagedClusterSetBinding binds a cluster set to its namespace", checks_selection.cluster_set_bound),
    PlacementCheck("selects-clusters", "warns when, scheduled on the inventory, it selects no cluster", checks_selection.selects_clusters),
    PlacementCheck("masked-scores", "warns of a score it ranks by that a mask keeps off clusters it can select", checks_scores.masked_scores),
    OptimizationCheck("score-format", "preference.scoreDimensionFormat names ${app} and ${device}", checks_optimization.score_format),
    OptimizationCheck("published-score", "preference.addOnPlacementScore is a score a scorer publishes", checks_optimization.published_score),
    OptimizationCheck("listed-once", "clusters, targetWorkloads and each cluster's availablePolicies list a name once", checks_optimization.listed_once),
    OptimizationCheck("known-clusters", "every cluster is in the inventory (clusters/)", checks_optimization.known_clusters),
    OptimizationCheck("supply", "every available Policy is in placements/, labelled with its device, kind and amount (≥ 0)", checks_optimization.supply),
    OptimizationCheck("demand", "every target workload is a ManifestWorkReplicaSet in placements/, labelled with its app, kind and amount (≥ 0)", checks_optimization.demand),
    OptimizationCheck("written-names", "no object the plan writes is in another plan or another file of placements/", checks_optimization.written_names),
)  # fmt: skip


def check_placements(
    inputs: Inputs, catalog: ScoreCatalog, at: datetime
) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` of every Placement of ``inputs`` against the published scores."""
    fleet = PlacementFleet(inputs, catalog, at)
    errors: list[Problem] = []
    warnings: list[Problem] = []
    registered = [c for c in CHECKS if isinstance(c, PlacementCheck)]
    for located in inputs.placements:
        placement = CheckedPlacement(fleet, located)
        for check in registered:
            for problem in check.run(placement):
                (errors if problem.severity == "error" else warnings).append(problem)
    return errors, warnings


def check_optimizations(inputs: Inputs, catalog: ScoreCatalog) -> list[Problem]:
    """Every PlacementOptimization of ``inputs`` against ``placements/``, the inventory and the scores."""
    fleet = OptimizationFleet(inputs, catalog)
    problems: set[Problem] = set()  # a Policy two clusters offer is checked twice
    # in order: the first plan to claim an object keeps it
    registered = [c for c in CHECKS if isinstance(c, OptimizationCheck)]
    for located in inputs.optimizations:
        subject = CheckedOptimization(fleet, located)
        problems.update(p for check in registered for p in check.run(subject))
    return sorted(problems)
