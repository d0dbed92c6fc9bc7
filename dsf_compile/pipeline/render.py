"""``render`` and ``render --check``: the plan rendered, written to ``rendered/`` or compared."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.errors import (
    InputError,
)
from dsf_compile.pipeline.collector import without_cyclic_gc
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.inputs.validate import Inputs
    from dsf_compile.render.changes import Changes
    from dsf_compile.resolve.scorer import ResolvedScorer


@frozen
class RenderResult:
    """What ``render`` wrote, or (``check``) what it would change."""

    files: int
    clusters: int
    changes: Changes
    warnings: tuple[Problem, ...]
    inputs: Inputs | None = None  # what was rendered, for a replay of the same inputs
    scorers: tuple[ResolvedScorer, ...] = ()  # each scorer as resolved for the render


def render_fleet(root: Path, *, check: bool = False) -> RenderResult:
    """``render``: write ``rendered/`` atomically and minimally; with ``check``, only compare."""
    with without_cyclic_gc():  # everything built here stays alive until it is written
        return _render_fleet(root, check)


def _render_fleet(root: Path, check: bool) -> RenderResult:
    from dsf_compile.edges.debris import debris_problems
    from dsf_compile.edges.tree import RENDERED
    from dsf_compile.render.manifests import render_manifests
    from dsf_compile.render.reshard import applied_paths, check_reshard
    from dsf_compile.render.write import compare_tree, write_tree

    plan = plan_fleet(root)
    try:
        files = render_manifests(plan)
    except InputError as error:
        raise InputError([*error.problems, *plan.warnings]) from None
    folder = root / RENDERED
    # before anything is written: a change of the shard count must not prune a cluster
    errors, notices = check_reshard(applied_paths(folder), files, plan.inputs)
    if errors:
        raise InputError([*errors, *plan.warnings])
    if check:  # a journal or a temporary file anywhere: each an error, located
        debris = debris_problems(root)
        if any(p.severity == "error" for p in debris):
            raise InputError([*debris, *plan.warnings])
    changes = compare_tree(folder, files) if check else write_tree(folder, files)
    warnings = (*plan.warnings, *notices)
    resolved = tuple(plan.resolved.values())
    return RenderResult(len(files), len(plan.clusters), changes, warnings, plan.inputs, resolved)
