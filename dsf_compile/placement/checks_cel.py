"""The check of a Placement's CEL expressions, compiled and tried on the inventory.

Pure. An expression that does not compile, cannot give a bool, reads a score nobody
publishes, has a constant ``matches`` pattern that does not compile, or costs more than
OCM's limit whatever the cluster is an error; one that costs more on some cluster, or
that cannot be checked here, a warning. Registered in :mod:`.checks`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from dsf_compile.inputs.located import Located
from dsf_compile.inputs.placements import Placement
from dsf_compile.placement.check_subjects import CheckedPlacement
from dsf_compile.placement.published_scores import unknown_score
from dsf_compile.placement.scheduler import Cluster, compile_cached
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem

if TYPE_CHECKING:  # the CEL engine is loaded by compile_cached, for a fleet's first expression
    from dsf_compile.placement.cel import CelExpression

#: How many inventory clusters an expression is tried on to learn its result type.
_TRIED_CLUSTERS = 64
_CEL_TYPES = {int: "int", float: "double", str: "string", bytes: "bytes", list: "list"}
_CEL_TYPES.update({dict: "map", type(None): "null_type"})


def cel_expressions(placement: CheckedPlacement) -> Iterator[Problem]:
    """CEL expressions that do not compile, cannot be boolean, or read unpublished scores."""
    located = placement.located
    for pointer, source in _expressions(located.model):
        compiled = compile_cached(source)
        if compiled.error is not None:
            yield located.problem(
                pointer,
                f"{compiled.error.splitlines()[0]} (OCM reports the Placement misconfigured)",
            )
            continue
        if compiled.unsupported is not None:
            yield located.problem(pointer, f"not checked: {compiled.unsupported}", "warning")
            continue
        from dsf_compile.placement.cel import score_names  # loaded by compile_cached

        catalog = placement.fleet.catalog
        for name in sorted(score_names(compiled)):
            if name not in catalog.scores and catalog.complete:
                yield located.problem(pointer, unknown_score(name, catalog))
        clusters = placement.fleet.groups.clusters
        yield from _evaluation_problems(compiled, clusters, located, pointer)


def _expressions(placement: Placement) -> Iterator[tuple[Pointer, str]]:
    """Each ``celExpressions`` entry of the Placement's predicates, at its field."""
    for p_index, predicate in enumerate(placement.spec.predicates):
        selector = predicate.requiredClusterSelector
        cel_selector = selector.celSelector if selector is not None else None
        sources = (cel_selector.celExpressions or ()) if cel_selector is not None else ()
        for e_index, source in enumerate(sources):
            pointer: Pointer = (
                "spec", "predicates", p_index, "requiredClusterSelector", "celSelector",
                "celExpressions", e_index,
            )  # fmt: skip
            yield pointer, source


def _evaluation_problems(
    compiled: CelExpression,
    clusters: Sequence[Cluster],
    located: Located[Placement],
    pointer: Pointer,
) -> list[Problem]:
    """What evaluating ``compiled`` tells: a bad constant ``matches`` pattern, a result
    that is not a bool, a cost past OCM's limit (an error when it is past whatever the
    cluster, else a warning naming the first cluster)."""
    from dsf_compile.placement.cel import bad_constant_patterns, is_constant

    found = [
        located.problem(
            pointer,
            f"matches: {problem} (OCM evaluates the pattern on each cluster and fails "
            "the expression there: every cluster that reaches it is dropped)",
        )
        for function, problem in bad_constant_patterns(compiled)
        if function == "matches"
    ]
    kind, over_limit = _tried(compiled, clusters)
    if kind is not None:
        message = f"evaluates to {kind}, not a bool: every cluster would fail it"
        found.append(located.problem(pointer, message))
    elif over_limit is not None:
        severity = "error" if is_constant(compiled) else "warning"
        found.append(located.problem(pointer, _over_limit(compiled, over_limit), severity))
    return found


def _over_limit(compiled: CelExpression, cluster: str) -> str:
    from dsf_compile.placement.cel import is_constant
    from dsf_compile.placement.cel_cost import LIMIT_MESSAGE, PER_CALL_LIMIT

    if is_constant(compiled):
        return (
            f"costs more than OCM's CEL cost limit ({PER_CALL_LIMIT}), whatever the cluster: "
            f"OCM fails it on every cluster ({LIMIT_MESSAGE})"
        )
    return (
        f"costs more than OCM's CEL cost limit ({PER_CALL_LIMIT}) on cluster {cluster!r}: "
        f"OCM drops such a cluster ({LIMIT_MESSAGE})"
    )


def _tried(compiled: CelExpression, clusters: Sequence[Cluster]) -> tuple[str | None, str | None]:
    """The type an expression gives instead of a bool, tried on the inventory (CEL's result
    type does not depend on the cluster; None when it gives a bool or only errors), and
    the first cluster on which it passes OCM's cost limit (trying stops there)."""
    from dsf_compile.placement.cel import CelEvaluationError, evaluate
    from dsf_compile.placement.cel_cost import LIMIT_MESSAGE

    for cluster in clusters[:_TRIED_CLUSTERS]:
        try:
            value = evaluate(compiled, cluster.cel_view(), lambda _c, _n: [])
        except CelEvaluationError as err:
            if str(err) == LIMIT_MESSAGE:
                return None, cluster.name
            continue
        return (None if isinstance(value, bool) else _CEL_TYPES.get(type(value), "dyn")), None
    return None, None
