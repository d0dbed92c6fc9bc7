"""``sync`` and ``sync --clusters``: the lockfile refreshed from the scorers, the inventory from the hub.

The network is reached through :mod:`dsf_compile.sync.fetch` (the scorers) and
:mod:`dsf_compile.edges.hub` (the hub's ManagedClusters); both files are written through
:mod:`dsf_compile.edges.journal`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.errors import (
    InputError,
    MassRemovalError,
    SyncError,
    UnreachableFleetError,
    UnreadableInventoryError,
)
from dsf_compile.pipeline.inputs import load_inputs, load_settings, without_cyclic_gc
from dsf_compile.sync.lock import (
    LOCKFILE_SCOPE,
    LockEntry,
    Lockfile,
    check_lockfile_target,
    read_lockfile,
    write_lockfile,
)
from dsf_contract.problem import Problem

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.edges.hub import HubAccess
    from dsf_compile.inputs.inventory import ManagedCluster
    from dsf_compile.inputs.located import Located
    from dsf_compile.inputs.validate import Inputs
    from dsf_compile.sync.clusters import Discovery
    from dsf_compile.sync.fetch import Fetched


@dataclass(frozen=True)
class SyncResult:
    """What ``sync`` learned: the Inactive scorers it refreshed, and the lockfile's state."""

    inactive: tuple[str, ...]
    active: int
    lockfile_changed: bool
    warnings: tuple[Problem, ...]
    recovered: str = ""  # what a killed sync left and this one removed, for the user


def sync_fleet(
    root: Path,
    *,
    names: Sequence[str],
    resolve: Sequence[str],
    progress: Callable[[str, LockEntry, int, int], None] | None = None,
    allow_mass_failure: bool = False,
) -> SyncResult:
    """``sync``: refresh the lockfile; ``progress(name, entry, done, total)`` after each scorer.

    Raises :class:`UnreachableFleetError`, writing nothing, when too many scorers Active in
    the lockfile could not be reached (:mod:`dsf_compile.sync.guard`), unless
    ``allow_mass_failure``.
    """
    from dsf_compile.edges.journal import vet_journal
    from dsf_compile.sync.guard import unreachable_fleet

    inputs = load_inputs(root)
    blocked = check_lockfile_target(root)
    if blocked:  # found before any request: sync could not record what it learns
        raise InputError(blocked)
    vet_journal(root.resolve(), "", LOCKFILE_SCOPE)  # a planted journal: before any request
    previous, problems = read_lockfile(root)
    # a broken lockfile is replaced by a fresh sync, but say so
    warnings = [Problem(p.path, p.line, p.column, p.field, p.message, "warning") for p in problems]
    only = frozenset(names) if names else None
    fetched = _fetch(inputs, previous, names, resolve, progress)
    lock = fetched.lock
    fraction = inputs.settings.sync.maxUnreachableFraction
    refreshed = only if only is not None else lock.scorers.keys()
    lost, counted_active = unreachable_fleet(previous, refreshed, fetched.unreachable, fraction)
    if lost and not allow_mass_failure:
        problems = [_scorer_problem(inputs, lock, name, "not reached") for name in lost]
        raise UnreachableFleetError(problems, len(lost), counted_active, fraction)
    written = write_lockfile(root, lock)
    inactive = tuple(
        sorted(
            n
            for n, e in lock.scorers.items()
            if e.health == "Inactive" and (only is None or n in only)
        )
    )
    warnings += [_scorer_problem(inputs, lock, name, "Inactive", "warning") for name in inactive]
    active = sum(1 for e in lock.scorers.values() if e.health == "Active")
    return SyncResult(inactive, active, bool(written.written), tuple(warnings), written.recovered)


def _fetch(
    inputs: Inputs,
    previous: Lockfile,
    names: Sequence[str],
    resolve: Sequence[str],
    progress: Callable[[str, LockEntry, int, int], None] | None,
) -> Fetched:
    """Every scorer asked (only ``names`` when given), ``progress`` told after each."""
    import asyncio

    from dsf_compile.sync.fetch import parse_resolve_options, parse_resolve_setting, sync_lock

    connect_to = parse_resolve_setting(inputs.settings.sync.resolve)
    connect_to.update(parse_resolve_options(resolve))
    scorers = [s.model for s in inputs.scorers]
    only = frozenset(names) if names else None
    total = len(names) if names else len(scorers)
    done = 0

    def counted(name: str, entry: LockEntry) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(name, entry, done, total)

    # What the fetch builds stays alive until it is written; its few cycles (a connection's
    # stream objects, 7 per scorer) wait for the collector's next run after it.
    with without_cyclic_gc():
        return asyncio.run(
            sync_lock(
                scorers,
                previous,
                inputs.settings.sync,
                only=only,
                connect_to=connect_to,
                progress=counted,
            )
        )


def _scorer_problem(
    inputs: Inputs, lock: Lockfile, name: str, what: str, severity: str = "error"
) -> Problem:
    """``what`` of scorer ``name``, with the reason the lockfile records, at its configURL."""
    reason = lock.scorers[name].reason
    return inputs.scorer(name).problem(("spec", "configURL"), f"{what}: {reason}", severity)


def discover_clusters(
    root: Path, access: HubAccess, *, allow_mass_removal: bool = False
) -> Discovery:
    """``sync --clusters``: list the hub's ManagedClusters into ``clusters/discovered.yaml``.

    Writes the file (atomically) only when its bytes change; raises
    :class:`~dsf_compile.edges.hub.HubReadError` when the hub cannot be read or answers
    something ``validate`` would refuse, and :class:`MassRemovalError` when the hub's
    list would remove more of the file's clusters than ``sync.maxClusterRemovalFraction``
    allows (:mod:`dsf_compile.sync.guard`), unless ``allow_mass_removal``: in every case
    before anything is written.
    """
    from dsf_compile.edges.journal import vet_journal
    from dsf_compile.edges.journal_scope import Ownership
    from dsf_compile.edges.replacement import replace_files
    from dsf_compile.sync.clusters import (
        DISCOVERED_FILE,
        Discovery,
        check_discovered_target,
        encode_discovered,
        held_clusters,
        names_in,
        read_managed_clusters,
    )

    blocked = check_discovered_target(root)
    if blocked:
        raise InputError(blocked)
    folder, _, name = DISCOVERED_FILE.rpartition("/")
    scope = Ownership.files("sync --clusters", (name,))
    vet_journal(root / folder, folder, scope)  # a planted journal: before the hub is read
    settings = load_settings(root)
    text = encode_discovered(read_managed_clusters(access, settings.hub))
    # every form validate reads (a List too), with the loader itself: the guard counts
    # what the inventory holds, or refuses when it cannot tell
    then, unreadable = held_clusters(root)
    now = names_in(text)
    if not allow_mass_removal:
        if unreadable:
            raise UnreadableInventoryError(unreadable, DISCOVERED_FILE)
        _guard_removal(now, then, settings.sync.maxClusterRemovalFraction)
    # always: it also removes what a killed sync --clusters left beside the file
    written = replace_files(
        root / folder,
        {name: text.encode("utf-8")},
        label=folder,
        error=SyncError,
        scope=scope,
    )
    return Discovery(
        clusters=tuple(sorted(now)),
        added=tuple(sorted(now - then.keys())),
        removed=tuple(sorted(then.keys() - now)),
        changed=bool(written.written),
        recovered=written.recovered,
    )


#: Removed clusters named one per line when the guard trips; the count says the rest.
_NAMED_REMOVALS = 20


def _guard_removal(
    now: set[str], then: dict[str, Located[ManagedCluster]], fraction: float
) -> None:
    """Raise :class:`MassRemovalError` when the hub's list removes too much of the file."""
    from dsf_compile.sync.guard import mass_removal

    lost = mass_removal(then.keys(), now, fraction)
    if not lost:
        return
    problems = [
        then[name].problem(("metadata", "name"), f"{name}: not on the hub's list")
        for name in lost[:_NAMED_REMOVALS]
    ]
    if len(lost) > _NAMED_REMOVALS:
        more = len(lost) - _NAMED_REMOVALS
        problems.append(
            then[lost[_NAMED_REMOVALS]].problem(("metadata", "name"), f"and {more} more clusters")
        )
    raise MassRemovalError(problems, len(lost), len(then), len(now), fraction)
