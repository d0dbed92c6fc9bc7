"""The commands as pipelines of stages: load → validate → (sync) → resolve → render → write.

Each function here wires stages together and is where their I/O happens: reading the
repository, the network (through :mod:`dsf_compile.sync.fetch`), writing ``rendered/``.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from dsf_compile.errors import InputError, Problem
from dsf_compile.inputs.load import Document, list_input_files, read_yaml_file
from dsf_compile.inputs.validate import Inputs, validate_documents, validate_settings
from dsf_compile.placement.checks import check_placements, score_catalog
from dsf_compile.render.manifests import render_manifests
from dsf_compile.render.write import RENDERED, Changes, compare_tree, write_tree
from dsf_compile.resolve.summaries import Plan, check_spec_only_scorers, resolve_fleet
from dsf_compile.sync.lock import (
    LOCKFILE,
    LockEntry,
    Lockfile,
    check_lockfile_target,
    read_lockfile,
    write_lockfile,
)

SETTINGS_FILE = "dsf.yaml"


def load_inputs(root: Path) -> Inputs:
    """Read and validate ``dsf.yaml``, ``scorers/`` and ``clusters/``; raise InputError on problems."""
    problems: list[Problem] = []
    settings_document: Document | None = None
    if os.path.lexists(root / SETTINGS_FILE):  # a dangling link or a FIFO is reported, not skipped
        documents, found = read_yaml_file(root, SETTINGS_FILE)
        problems += found
        if len(documents) > 1:
            problems.append(Problem(SETTINGS_FILE, 1, 1, "", "must hold one YAML document"))
        settings_document = documents[0] if documents else None
    settings, found = validate_settings(settings_document)
    problems += found
    documents = []
    for folder in ("scorers", "clusters", "placements"):
        files, found = list_input_files(root, folder)
        problems += found
        for relative in files:
            docs, found = read_yaml_file(root, relative)
            problems += found
            documents += docs
    if not (root / "scorers").is_dir() and not (root / "clusters").is_dir():
        problems.append(
            Problem(".", 0, 0, "", "no scorers/ or clusters/ folder here (use --root DIR)")
        )
    return validate_documents(documents, settings, problems, settings_document)


def validate_fleet(root: Path) -> Inputs:
    """``validate``: the inputs, the resolution of every scorer the lockfile is not needed
    for, and the Placements against the scores the fleet publishes (as far as the
    lockfile, when it is readable, tells)."""
    inputs = load_inputs(root)
    problems = check_spec_only_scorers(inputs)
    lock: Lockfile | None = None
    if os.path.lexists(root / LOCKFILE):
        lock, lock_problems = read_lockfile(root)
        lock = None if lock_problems else lock
    errors, warnings = check_placements(inputs, score_catalog(inputs, lock), _now())
    if problems or errors:
        raise InputError([*problems, *errors, *inputs.warnings, *warnings])
    return replace(inputs, warnings=(*inputs.warnings, *warnings))


def plan_fleet(root: Path) -> Plan:
    """Load, validate and resolve against the committed lockfile (no network)."""
    inputs = load_inputs(root)
    lock, problems = read_lockfile(root)
    if problems:
        raise InputError(problems)
    errors, warnings = check_placements(inputs, score_catalog(inputs, lock), _now())
    if errors:
        raise InputError([*errors, *inputs.warnings, *warnings])
    plan = resolve_fleet(inputs, lock)
    return replace(plan, warnings=(*plan.warnings, *warnings))


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class RenderResult:
    """What ``render`` wrote, or (``check``) what it would change."""

    files: int
    clusters: int
    changes: Changes
    warnings: tuple[Problem, ...]


def render_fleet(root: Path, *, check: bool = False) -> RenderResult:
    """``render``: write ``rendered/`` atomically and minimally; with ``check``, only compare."""
    plan = plan_fleet(root)
    try:
        files = render_manifests(plan)
    except InputError as error:
        raise InputError([*error.problems, *plan.warnings]) from None
    folder = root / RENDERED
    changes = compare_tree(folder, files) if check else write_tree(folder, files)
    return RenderResult(len(files), len(plan.clusters), changes, plan.warnings)


@dataclass(frozen=True)
class SyncResult:
    """What ``sync`` learned: the Inactive scorers it refreshed, and the lockfile's state."""

    inactive: tuple[str, ...]
    active: int
    lockfile_changed: bool
    warnings: tuple[Problem, ...]


def sync_fleet(
    root: Path,
    *,
    names: Sequence[str],
    resolve: Sequence[str],
    progress: Callable[[str, LockEntry, int, int], None] | None = None,
) -> SyncResult:
    """``sync``: refresh the lockfile; ``progress(name, entry, done, total)`` after each scorer."""
    from dsf_compile.sync.fetch import parse_connect_to, parse_resolve_setting, sync_lock

    inputs = load_inputs(root)
    blocked = check_lockfile_target(root)
    if blocked:  # found before any request: sync could not record what it learns
        raise InputError(blocked)
    previous, problems = read_lockfile(root)
    # a broken lockfile is replaced by a fresh sync, but say so
    warnings = [Problem(p.path, p.line, p.column, p.field, p.message, "warning") for p in problems]
    connect_to = parse_resolve_setting(inputs.settings.sync.resolve)
    connect_to.update(parse_connect_to(resolve))
    scorers = [s.model for s in inputs.scorers]
    only = frozenset(names) if names else None
    total = len(names) if names else len(scorers)
    done = 0

    def counted(name: str, entry: LockEntry) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(name, entry, done, total)

    lock = asyncio.run(
        sync_lock(
            scorers,
            previous,
            inputs.settings.sync,
            only=only,
            connect_to=connect_to,
            progress=counted,
        )
    )
    changed = write_lockfile(root, lock)
    inactive = tuple(
        sorted(
            n
            for n, e in lock.scorers.items()
            if e.health == "Inactive" and (only is None or n in only)
        )
    )
    warnings += [
        inputs.scorer(name).problem(
            ("spec", "configURL"), f"Inactive: {lock.scorers[name].reason}", "warning"
        )
        for name in inactive
    ]
    active = sum(1 for e in lock.scorers.values() if e.health == "Active")
    return SyncResult(inactive, active, changed, tuple(warnings))
