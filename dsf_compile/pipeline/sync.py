"""``sync`` and ``sync --clusters``: the lockfile refreshed from the scorers, the inventory from the hub.

The network is reached through :mod:`dsf_compile.sync.fetch` (the scorers) and
:mod:`dsf_compile.edges.hub` (the hub's ManagedClusters); both files are written through
:mod:`dsf_compile.edges.journal`.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dsf_compile.errors import (
    InputError,
    MassRemovalError,
    SyncError,
    UnreachableFleetError,
    UnreadableInventoryError,
    UsageError,
)
from dsf_compile.pipeline.collector import without_cyclic_gc
from dsf_compile.sync.lock import (
    LOCKFILE_SCOPE,
    LockEntry,
    Lockfile,
    LockfileText,
    check_lockfile_target,
    load_writer,
    read_lockfile,
    write_lockfile,
)
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.edges.hub import HubAccess
    from dsf_compile.inputs.inventory import ManagedCluster
    from dsf_compile.inputs.load import InputFiles
    from dsf_compile.inputs.located import Located
    from dsf_compile.inputs.scorer import DynamicScorer
    from dsf_compile.inputs.sync_settings import SyncSettings
    from dsf_compile.inputs.validate import Inputs
    from dsf_compile.sync.background import BackgroundFetch
    from dsf_compile.sync.clusters import Discovery
    from dsf_compile.sync.fetch import Fetched
    from dsf_contract.bounded_yaml import Document


@frozen
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

    The requests start as soon as the files are read, when the scorers and the ``sync``
    settings validate on their own (:func:`_start_early`), and the rest of the fleet is
    validated while they are in flight: an invalid fleet still fails as it did, with the
    same problems, its requests cancelled and nothing written. Refusals that must come
    before any request (something else in the lockfile's place, a planted journal) keep
    every request from starting, and are raised where they were: after the validation.
    """
    # Nothing sync builds is garbage before it is written (the documents, the models, the
    # fetch's results), and its few cycles (a connection's stream objects, 7 per scorer)
    # wait for the collector's next run: a full collection here walked the whole fleet.
    with without_cyclic_gc():
        return _sync(root, names, resolve, progress, allow_mass_failure)


def _sync(
    root: Path,
    names: Sequence[str],
    resolve: Sequence[str],
    progress: Callable[[str, LockEntry, int, int], None] | None,
    allow_mass_failure: bool,
) -> SyncResult:
    """:func:`sync_fleet`'s steps, in the order its docstring gives."""
    from dsf_compile.inputs.load import read_inputs
    from dsf_compile.sync.guard import unreachable_fleet

    files = read_inputs(root)
    refusal = _refusal(root)
    # Only a partial sync's fetch needs the previous lockfile (it keeps the others' entries):
    # a whole sync reads it while its requests are in flight.
    partial = bool(names)
    previous, problems = _previous(root, refusal) if partial else (Lockfile(), [])
    early = None if refusal is not None else _start_early(files, previous, names, resolve)
    text = LockfileText()  # each entry encoded as it comes, while the others are awaited
    try:
        if not partial:
            previous, problems = _previous(root, refusal)
        inputs = _validate(files)
        if refusal is not None:
            raise refusal
        load_writer()
        fetched = _fetch(inputs, previous, names, resolve, progress, early, text)
    except BaseException:  # an invalid fleet, an interruption: no request left in flight
        if early is not None:
            early.fetch.cancel()
        raise
    # a broken lockfile is replaced by a fresh sync, but say so
    warnings = [Problem(p.path, p.line, p.column, p.field, p.message, "warning") for p in problems]
    only = frozenset(names) if names else None
    lock = fetched.lock
    fraction = inputs.settings.sync.maxUnreachableFraction
    refreshed = only if only is not None else lock.scorers.keys()
    lost, counted_active = unreachable_fleet(previous, refreshed, fetched.unreachable, fraction)
    if lost and not allow_mass_failure:
        problems = [_scorer_problem(inputs, lock, name, "not reached") for name in lost]
        raise UnreachableFleetError(problems, len(lost), counted_active, fraction)
    written = write_lockfile(root, lock, text)
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


def _refusal(root: Path) -> Exception | None:
    """What keeps sync from sending any request: something else in the lockfile's place
    (sync could not record what it learns), a planted journal; None when nothing does.
    Returned, not raised: an invalid fleet's problems come first, as they always did."""
    from dsf_compile.edges.journal import vet_journal

    blocked = check_lockfile_target(root)
    if blocked:
        return InputError(blocked)
    try:
        vet_journal(root.resolve(), "", LOCKFILE_SCOPE)
    except Exception as error:  # whatever it is, raised after the validation
        return error
    return None


def _previous(root: Path, refusal: Exception | None) -> tuple[Lockfile, list[Problem]]:
    """The lockfile sync refreshes, and its problems; not read when sync is refused."""
    return read_lockfile(root) if refusal is None else (Lockfile(), [])


def _validate(files: InputFiles) -> Inputs:
    """The whole fleet validated, as every command does (its modules imported only now,
    while the requests are in flight)."""
    from dsf_compile.pipeline.inputs import validate_inputs

    return validate_inputs(files)


@frozen
class _Early:
    """A fetch started before the fleet was validated, and what it was started with."""

    scorers: tuple[DynamicScorer, ...]
    settings: SyncSettings
    fetch: BackgroundFetch

    def matches(self, inputs: Inputs) -> bool:
        """Whether the validated fleet asks for the same fetch (it does: the same documents,
        the same models; checked all the same, as the result is only used when it holds)."""
        return self.settings == inputs.settings.sync and self.scorers == tuple(
            s.model for s in inputs.scorers
        )


def _start_early(
    files: InputFiles, previous: Lockfile, names: Sequence[str], resolve: Sequence[str]
) -> _Early | None:
    """The fetch, started in a thread when every file was read without a problem, ``dsf.yaml``'s
    ``sync`` section and every document of ``scorers/`` validate on their own and the
    ``--resolve`` mappings parse; None otherwise (the fleet is then validated first, and
    fetched after, as before).

    Credentials written in Git (``precheck``) are left to the validation: a URL that
    carries them is refused by the fetch itself, without a request
    (:mod:`dsf_compile.sync.refresh`), and the fleet then fails as invalid."""
    from dsf_compile.sync.background import BackgroundFetch

    if files.problems or files.settings_problems:
        return None
    settings = _sync_settings(files.settings_document)
    scorers = _scorers(files.documents)
    if settings is None or scorers is None:
        return None
    try:
        call = _sync_lock_call(scorers, previous, settings, names, resolve)
    except (SyncError, UsageError):
        return None  # raised again, where it was, once the fleet is valid
    return _Early(scorers, settings, BackgroundFetch(call))


def _sync_settings(document: Document | None) -> SyncSettings | None:
    """``dsf.yaml``'s ``sync`` section as ``Settings.sync`` reads it; None on any problem."""
    from pydantic import ValidationError

    from dsf_compile.inputs.sync_settings import SyncSettings

    if document is None:
        return SyncSettings()
    data = document.data
    if document.reported or not isinstance(data, dict):
        return None
    try:
        return SyncSettings.model_validate(data["sync"]) if "sync" in data else SyncSettings()
    except ValidationError:
        return None


def _scorers(documents: Sequence[Document]) -> tuple[DynamicScorer, ...] | None:
    """Every DynamicScorer of ``scorers/``, sorted by name as the inputs hold them; None
    when a document there is not one, or has a problem of its own."""
    from pydantic import ValidationError

    from dsf_compile.inputs.scorer import DynamicScorer

    found = []
    for document in documents:
        if not document.path.startswith("scorers/"):
            continue
        data = document.data
        if document.reported or not isinstance(data, dict) or data.get("kind") != "DynamicScorer":
            return None
        try:
            found.append(DynamicScorer.model_validate(data))
        except ValidationError:
            return None
    return tuple(sorted(found, key=lambda scorer: scorer.metadata.name))


def _sync_lock_call(
    scorers: Sequence[DynamicScorer],
    previous: Lockfile,
    settings: SyncSettings,
    names: Sequence[str],
    resolve: Sequence[str],
) -> Callable[[Callable[[str, LockEntry], None]], Coroutine[Any, Any, Fetched]]:
    """The fetch of ``scorers``, to be run given where each scorer is reported; the
    ``--resolve`` mappings parsed here (:class:`SyncError`, :class:`UsageError`)."""
    from dsf_compile.sync.fetch import parse_resolve_options, parse_resolve_setting, sync_lock

    connect_to = parse_resolve_setting(settings.resolve)
    connect_to.update(parse_resolve_options(resolve))
    only = frozenset(names) if names else None

    def call(progress: Callable[[str, LockEntry], None]) -> Coroutine[Any, Any, Fetched]:
        return sync_lock(
            scorers, previous, settings, only=only, connect_to=connect_to, progress=progress
        )

    return call


def _fetch(
    inputs: Inputs,
    previous: Lockfile,
    names: Sequence[str],
    resolve: Sequence[str],
    progress: Callable[[str, LockEntry, int, int], None] | None,
    early: _Early | None,
    text: LockfileText,
) -> Fetched:
    """Every scorer asked (only ``names`` when given), ``progress`` told after each and its
    entry encoded into ``text``: the fetch started early when it asked the validated fleet's
    scorers, a new one otherwise."""
    import asyncio

    scorers = [s.model for s in inputs.scorers]
    total = len(names) if names else len(scorers)
    done = 0

    def counted(name: str, entry: LockEntry) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(name, entry, done, total)
        text.add(name, entry)

    if early is not None and early.matches(inputs):
        return early.fetch.result(counted)
    if early is not None:
        early.fetch.cancel()
    call = _sync_lock_call(scorers, previous, inputs.settings.sync, names, resolve)
    return asyncio.run(call(counted))


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
    from dsf_compile.pipeline.inputs import load_settings

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
