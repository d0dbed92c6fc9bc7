"""The first stages every command shares: ``dsf.yaml``, the inputs, ``validate`` and the plan.

Reads the repository (``dsf.yaml``, ``scorers/``, ``clusters/``, ``placements/``) and the
committed lockfile; no network, nothing written.
"""

from __future__ import annotations

import os
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.edges.debris import debris_problems
from dsf_compile.errors import (
    InputError,
)
from dsf_compile.inputs.load import InputFiles, read_inputs, read_settings_file
from dsf_compile.inputs.prerequisites import prerequisite_notes
from dsf_compile.inputs.validate import (
    Inputs,
    validate_documents,
    validate_settings,
)
from dsf_compile.pipeline.collector import without_cyclic_gc
from dsf_compile.resolve.summaries import (
    Plan,
    Resolutions,
    check_spec_only_scorers,
    check_synced_scorers,
    resolve_fleet,
)
from dsf_compile.sync.lock import (
    LOCKFILE,
    Lockfile,
    read_lockfile,
)
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.inputs.settings import Settings


def _read_settings(root: Path) -> tuple[Settings, list[Problem]]:
    document, problems = read_settings_file(root)
    settings, found = validate_settings(document)
    return settings, [*problems, *found]


def load_settings(root: Path) -> Settings:
    """Only ``dsf.yaml`` (for a hub read before the rest is loaded); InputError on problems."""
    settings, problems = _read_settings(root)
    if problems:
        raise InputError(problems)
    return settings


def load_inputs(root: Path) -> Inputs:
    """Read and validate ``dsf.yaml``, ``scorers/`` and ``clusters/``; raise InputError on problems."""
    with without_cyclic_gc():
        return _load_inputs(root)


def _load_inputs(root: Path) -> Inputs:
    return validate_inputs(read_inputs(root))


def validate_inputs(files: InputFiles) -> Inputs:
    """The inputs :func:`~dsf_compile.inputs.load.read_inputs` read, validated; InputError on
    problems."""
    settings, found = validate_settings(files.settings_document)
    problems = [*files.settings_problems, *found, *files.problems]
    return validate_documents(files.documents, settings, problems, files.settings_document)


@frozen
class Validated:
    """What ``validate`` read and resolved, for a caller that goes on from there (``dsf-mcp``):
    the inputs, the lockfile (None when there is none or it is unreadable) and each scorer
    resolved against it, so that nothing is loaded or resolved twice."""

    inputs: Inputs
    lock: Lockfile | None
    resolutions: Resolutions


def validate_fleet(root: Path) -> Inputs:
    """``validate``: the inputs, the resolution of every scorer the lockfile is not needed
    for, and the Placements against the scores the fleet publishes (as far as the
    lockfile, when it is readable, tells)."""
    return validated_fleet(root).inputs


def validated_fleet(root: Path) -> Validated:
    """:func:`validate_fleet`, with the lockfile and the resolutions it used."""
    inputs = load_inputs(root)
    lock: Lockfile | None = None
    lock_readable = True  # a broken lockfile is render's and sync's to report
    if os.path.lexists(root / LOCKFILE):
        lock, lock_problems = read_lockfile(root)
        lock, lock_readable = (None, False) if lock_problems else (lock, True)
    resolutions = Resolutions(lock)  # each scorer resolved once, whichever check asks first
    problems = check_spec_only_scorers(inputs, resolutions)
    if lock_readable and not problems:
        problems = check_synced_scorers(inputs, lock, resolutions)
    errors, warnings = _placement_problems(inputs, lock, resolutions)
    debris = debris_problems(root)  # never an input: committed or planted, flagged here
    errors += [p for p in debris if p.severity == "error"]
    warnings += [p for p in debris if p.severity != "error"]
    if problems or errors:
        raise InputError([*problems, *errors, *inputs.warnings, *warnings])
    # what the hub needs for these kinds: said once the inputs are valid, not beside errors
    notes = prerequisite_notes(inputs.placement_objects)
    valid = replace(inputs, warnings=(*inputs.warnings, *warnings, *notes))
    return Validated(valid, lock, resolutions)


def plan_fleet(root: Path) -> Plan:
    """Load, validate and resolve against the committed lockfile (no network)."""
    inputs = load_inputs(root)
    lock, problems = read_lockfile(root)
    if problems:
        raise InputError(problems)
    resolutions = Resolutions(lock)  # each scorer resolved once: the placement checks, the plan
    errors, warnings = _placement_problems(inputs, lock, resolutions)
    if errors:
        raise InputError([*errors, *inputs.warnings, *warnings])
    plan = resolve_fleet(inputs, lock, resolutions)
    return replace(plan, warnings=(*plan.warnings, *warnings))


def _placement_problems(
    inputs: Inputs, lock: Lockfile | None, resolutions: Resolutions
) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` of the Placements and PlacementOptimizations against the scores.

    A fleet without ``placements/`` loads nothing of the scheduler or its models.
    """
    if not inputs.placement_objects and not inputs.optimizations:
        return [], []
    from dsf_compile.placement.checks import check_optimizations, check_placements
    from dsf_compile.placement.published_scores import score_catalog

    catalog = score_catalog(inputs, lock, resolutions)
    errors, warnings = check_placements(inputs, catalog, _now())
    return [*errors, *check_optimizations(inputs, catalog)], warnings


def _now() -> datetime:
    return datetime.now(UTC)
