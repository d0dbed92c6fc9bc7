"""``render`` and ``render --check``/``diff`` over the no-op cache (:mod:`dsf_compile.render.fastpath`).

The cache protocol in one place: ask the cache whether the last render still holds;
otherwise take the inputs' digest *before* rendering (an edit made meanwhile then counts
as a change), render, and record what was written (with what the render settled) or
what was checked clean.

Like the fast path, this module imports only the standard library, ``fastpath`` and the
collector's switch at the top: the pipeline, the models and PyYAML are imported only
when the cache cannot answer.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.pipeline.collector import loading
from dsf_compile.render import fastpath
from dsf_contract.records import frozen

if TYPE_CHECKING:
    from dsf_compile.inputs.validate import Inputs
    from dsf_compile.render.changes import Changes
    from dsf_compile.resolve.scorer import ResolvedScorer
    from dsf_contract.problem import Problem

#: What a render that the cache vouched for changed.
NOTHING_CHANGED = "0 added, 0 changed, 0 removed"


@frozen
class Rendered:
    """What ``render`` did: what it said, a summary of the changes, the temporary files it
    could not remove, and what it recovered of a killed render (one line, or empty)."""

    said: fastpath.Remembered
    summary: str
    leftovers: tuple[str, ...] = ()
    recovered: str = ""


@frozen
class Checked:
    """What ``render --check``/``diff`` found; ``changes`` is None when the cache vouched for
    ``rendered/`` (then it is up to date)."""

    warnings: tuple[Problem, ...]
    changes: Changes | None
    inputs: Inputs | None = None  # what was compared (None: the cache vouched)
    scorers: tuple[ResolvedScorer, ...] = ()  # each scorer as resolved for the comparison


def render(root: Path) -> Rendered:
    """``render``: nothing when the cache vouches for ``rendered/``, else write it and remember."""
    said = fastpath.unchanged(root)
    if said is not None:
        return Rendered(said, NOTHING_CHANGED)
    digest = fastpath.inputs_digest(root)  # before rendering: an edit meanwhile counts
    with loading():
        from dsf_compile.pipeline.render import render_fleet

    result = render_fleet(root)
    changes = result.changes
    said = fastpath.Remembered(result.files, result.clusters, result.warnings)
    if digest is not None:
        from dsf_compile.render.reshard import is_reshard_notice

        # a re-shard is news of this render only: a no-op render after it moves nothing
        lasting = tuple(w for w in result.warnings if not is_reshard_notice(w))
        written = {**changes.added, **{p: new for p, (_, new) in changes.changed.items()}}
        fastpath.remember(root, digest, replace(said, warnings=lasting), written, changes.settled)
    recovered = changes.recovery.line() if changes.recovery.found else ""
    return Rendered(said, changes.summary(), tuple(changes.leftovers), recovered)


def check(root: Path, *, use_cache: bool = True) -> Checked:
    """``render --check``/``diff``: compare ``rendered/`` with what the inputs give.

    ``use_cache=False`` always compares (the caller needs the plan's Placements too);
    a clean comparison is remembered either way.
    """
    said = fastpath.unchanged(root) if use_cache else None
    if said is not None:
        return Checked(said.warnings, None)
    digest = fastpath.inputs_digest(root)
    with loading():
        from dsf_compile.pipeline.render import render_fleet

    result = render_fleet(root, check=True)
    if result.changes.empty and digest is not None:
        said = fastpath.Remembered(result.files, result.clusters, result.warnings)
        fastpath.remember(root, digest, said)
    return Checked(result.warnings, result.changes, result.inputs, result.scorers)
