"""A PlacementOptimization → the objects that carry out its optimal plan.

Pure. :func:`propose` reads the scores back through the dimension format, solves the
model (:mod:`dsf_compile.placement.optimize`) and returns the file ``optimize`` writes to
``placements/optimized/<namespace>-<name>.yaml``. It runs on an optimization the checks
of :mod:`.checks_optimization` passed (every Policy and workload there, every label).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from fractions import Fraction
from typing import Any, TypeVar

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.errors import InputError
from dsf_compile.inputs import names
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.optimization import (
    GENERATED_BY_LABEL,
    PlacementOptimization,
    item_pattern,
)
from dsf_compile.inputs.placements import (
    PLACEMENT_API_VERSION,
    POLICY_API_VERSION,
    AddOnPlacementScore,
    ManifestWorkReplicaSet,
    Policy,
)
from dsf_compile.inputs.quantity import quantity_value
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.checks_optimization import (
    DEMAND_LABELS,
    SUPPLY_LABELS,
    placement_object,
)
from dsf_compile.placement.optimize import (
    Configuration,
    ModelTooLargeError,
    OptimizationError,
    Solution,
    TimeLimitError,
    Workload,
    check_size,
    solve,
)
from dsf_contract.compliance import POLICY_GROUP
from dsf_contract.problem import Problem
from dsf_contract.records import frozen
from dsf_contract.scores import OCM_CLUSTER_GROUP


@frozen
class Proposal:
    """The file ``optimize`` writes for one PlacementOptimization, and what it says."""

    path: str
    text: str
    objective: int
    left_out: tuple[str, ...]  # target workloads that do not fit, in name order
    warnings: tuple[Problem, ...]  # one per workload left out, at its targetWorkloads entry


def propose(
    inputs: Inputs,
    located: Located[PlacementOptimization],
    scores: Sequence[AddOnPlacementScore],
    at: datetime,
    *,
    deadline: float | None = None,
    time_limit: float | None = None,
) -> Proposal:
    """The lexicographically optimal plan; InputError when there is none.

    ``deadline`` is the :func:`time.monotonic` instant the solver must finish by (the
    whole command's); ``time_limit`` the seconds it stands for, named in the error.
    """
    optimization = located.model
    spec = optimization.spec
    pairs = sum(len(c.availablePolicies) for c in spec.clusters)
    try:  # before anything is read or built
        check_size(len(spec.targetWorkloads), pairs)
    except ModelTooLargeError as err:
        raise InputError([located.problem(("spec", "targetWorkloads"), str(err))]) from None
    policies, clusters = _supply(inputs, optimization)
    references, workloads = _demand(inputs, optimization)
    plan = _solve(located, workloads, clusters, scores, at, deadline, time_limit)
    # The Placements select the claim the agents keep (dsf.yaml may rename it).
    claim = inputs.settings.agent.complianceClaim.claimName if spec.requireCompliance else None
    objects = _plan_objects(
        optimization, plan.configurations, plan.placements, policies, references, claim
    )
    text = "".join(("---\n" if i else "") + dump_yaml(obj) for i, obj in enumerate(objects))
    return Proposal(
        names.optimized_path(optimization.metadata.namespace, optimization.metadata.name),
        _header(optimization, plan) + text,
        plan.objective,
        plan.left_out,
        _left_out_warnings(located, plan.left_out, len(plan.placements)),
    )


def _supply(
    inputs: Inputs, optimization: PlacementOptimization
) -> tuple[dict[str, Policy], dict[str, list[Configuration]]]:
    """The Policies by name, and each cluster's configurations from their supply labels."""
    policies: dict[str, Policy] = {}
    clusters: dict[str, list[Configuration]] = {}
    for cluster in optimization.spec.clusters:
        for name in cluster.availablePolicies:
            policy, (device, kind, amount) = _labelled(
                inputs, optimization, Policy, name, SUPPLY_LABELS
            )
            policies[name] = policy
            clusters.setdefault(cluster.name, []).append(Configuration(name, device, kind, amount))
    return policies, clusters


def _demand(
    inputs: Inputs, optimization: PlacementOptimization
) -> tuple[dict[str, ManifestWorkReplicaSet], list[Workload]]:
    """The target workloads by name, and what each demands from its labels."""
    workloads: list[Workload] = []
    references: dict[str, ManifestWorkReplicaSet] = {}
    for name in optimization.spec.targetWorkloads:
        workload, (app, kind, amount) = _labelled(
            inputs, optimization, ManifestWorkReplicaSet, name, DEMAND_LABELS
        )
        references[name] = workload
        workloads.append(Workload(name, app, kind, amount))
    return references, workloads


#: The objects whose labels say what a plan supplies or demands.
_Labelled = TypeVar("_Labelled", Policy, ManifestWorkReplicaSet)


def _labelled(
    inputs: Inputs,
    optimization: PlacementOptimization,
    kind: type[_Labelled],
    name: str,
    keys: tuple[str, str, str],
) -> tuple[_Labelled, tuple[str, str, Fraction]]:
    """The object of ``placements/`` and its labels ``keys`` (the last one a quantity)."""
    found = placement_object(inputs, kind, optimization.metadata.namespace, name)
    assert found is not None  # the optimization checks ran first
    model: _Labelled = found.model
    labels = model.metadata.labels or {}
    first, second, amount = keys
    return model, (labels[first], labels[second], quantity_value(labels[amount]))


def _solve(
    located: Located[PlacementOptimization],
    workloads: Sequence[Workload],
    clusters: Mapping[str, Sequence[Configuration]],
    scores: Sequence[AddOnPlacementScore],
    at: datetime,
    deadline: float | None,
    time_limit: float | None,
) -> Solution:
    """The solver's plan; its failures as located problems."""
    spec = located.model.spec
    table = score_table(
        scores,
        spec.preference.addOnPlacementScore,
        spec.preference.scoreDimensionFormat,
        set(clusters),
        at,
    )
    try:
        return solve(
            workloads, clusters, table, maximize=spec.objective == "Maximize", deadline=deadline
        )
    except TimeLimitError:
        limit = f" of {time_limit:g} s" if time_limit is not None else ""
        raise InputError(
            [
                located.problem(
                    ("spec",),
                    f"the solver reached the time limit{limit} (--time-limit) before it proved "
                    "an optimal plan; give it more time or split the optimization",
                )
            ]
        ) from None
    except OptimizationError as err:
        hint = _score_hint(scores, spec.preference.addOnPlacementScore, set(clusters), at)
        raise InputError([located.problem(("spec",), f"{err}{hint}")]) from None


def _header(optimization: PlacementOptimization, plan: Solution) -> str:
    spec = optimization.spec
    header = (
        f"# Written by dsf-compile optimize from PlacementOptimization "
        f"{optimization.metadata.namespace}/{optimization.metadata.name} ({spec.objective} "
        f"{spec.preference.addOnPlacementScore}: {plan.objective}). Review it like code; run "
        "optimize again to refresh it.\n"
    )
    if plan.left_out:
        header += f"# Left out (they do not fit with the others): {', '.join(plan.left_out)}.\n"
    return header


#: Located warnings for workloads left out; past these, one more says how many remain.
LEFT_OUT_WARNINGS = 20


def _left_out_warnings(
    located: Located[PlacementOptimization], left_out: Sequence[str], placed: int
) -> tuple[Problem, ...]:
    """A warning at each left-out workload's ``spec.targetWorkloads`` entry (the first few)."""
    targets = located.model.spec.targetWorkloads
    position = {name: index for index, name in enumerate(targets)}
    warnings = [
        located.problem(
            ("spec", "targetWorkloads", position[name]),
            f"{name} is left out of the plan: {placed} of {len(targets)} workloads fit "
            "together, and this one is not among them",
            severity="warning",
        )
        for name in left_out[:LEFT_OUT_WARNINGS]
    ]
    if len(left_out) > LEFT_OUT_WARNINGS:
        warnings.append(
            located.problem(
                ("spec", "targetWorkloads"),
                f"and {len(left_out) - LEFT_OUT_WARNINGS} more workloads are left out (the plan "
                "file names them all)",
                severity="warning",
            )
        )
    return tuple(warnings)


def score_table(
    scores: Sequence[AddOnPlacementScore],
    resource_name: str,
    dimension_format: str,
    clusters: set[str],
    at: datetime,
) -> dict[tuple[str, str, str], int]:
    """``(app, cluster, device)`` → score, read back from the items through the dimension format."""
    pattern = item_pattern(dimension_format)
    table: dict[tuple[str, str, str], int] = {}
    for score in scores:
        cluster = score.metadata.namespace
        if score.metadata.name != resource_name or cluster not in clusters:
            continue
        until = score.status.validUntil
        if until is not None and at > until:
            continue  # expired: as good as missing
        for item in score.status.scores:
            found = pattern.fullmatch(item.name)
            if found is not None:
                table[found["app"], cluster, found["device"]] = item.value
    return table


def _score_hint(
    scores: Sequence[AddOnPlacementScore], resource_name: str, clusters: set[str], at: datetime
) -> str:
    """Why scores may be missing: a cluster without the AddOnPlacementScore, or with an expired one."""
    found = {s.metadata.namespace: s for s in scores if s.metadata.name == resource_name}
    absent = sorted(clusters - set(found))
    expired = sorted(
        c
        for c, s in found.items()
        if c in clusters and s.status.validUntil is not None and at > s.status.validUntil
    )
    hints = []
    if absent:
        hints.append(f"no AddOnPlacementScore {resource_name} on {', '.join(absent)}")
    if expired:
        moment = at.isoformat().replace("+00:00", "Z")
        hints.append(f"the scores of {', '.join(expired)} expired before {moment} (validUntil)")
    return f" ({'; '.join(hints)})" if hints else ""


def _plan_objects(
    optimization: PlacementOptimization,
    configurations: Mapping[str, str],
    placements: Mapping[str, str],
    policies: dict[str, Policy],
    workloads: dict[str, ManifestWorkReplicaSet],
    claim: str | None,
) -> list[dict[str, Any]]:
    labels = {GENERATED_BY_LABEL: "optimize"}
    objects: list[dict[str, Any]] = []
    for cluster, policy_name in sorted(configurations.items()):
        policy = policies[policy_name]
        placement_name = names.plan_object_name(optimization.metadata.name, cluster)
        objects.append(
            _placement(placement_name, policy.metadata.namespace, cluster, labels, claim=None)
        )
        objects.append(
            {
                "apiVersion": POLICY_API_VERSION,
                "kind": "PlacementBinding",
                "metadata": {
                    "name": placement_name,
                    "namespace": policy.metadata.namespace,
                    "labels": dict(labels),
                },
                "placementRef": {
                    "name": placement_name,
                    "kind": "Placement",
                    "apiGroup": OCM_CLUSTER_GROUP,
                },
                "subjects": [
                    {
                        "name": policy_name,
                        "kind": "Policy",
                        "apiGroup": POLICY_GROUP,
                    }
                ],
            }
        )
    for workload_name, cluster in sorted(placements.items()):
        workload = workloads[workload_name]
        objects.append(
            _placement(
                workload.spec.placementRefs[0].name,
                workload.metadata.namespace,
                cluster,
                labels,
                claim=claim,
            )
        )
    return objects


def _placement(
    name: str, namespace: str, cluster: str, labels: dict[str, str], *, claim: str | None
) -> dict[str, Any]:
    selector: dict[str, Any] = {"labelSelector": {"matchLabels": {"name": cluster}}}
    if claim is not None:
        selector["claimSelector"] = {
            "matchExpressions": [{"key": claim, "operator": "In", "values": ["compliant"]}]
        }
    return {
        "apiVersion": PLACEMENT_API_VERSION,
        "kind": "Placement",
        "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "numberOfClusters": 1,
            "predicates": [{"requiredClusterSelector": selector}],
        },
    }
