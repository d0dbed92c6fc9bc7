"""The commands as pipelines of stages: load → validate → (sync) → resolve → render → write.

Each function here wires stages together and is where their I/O happens: reading the
repository, the network (through :mod:`dsf_compile.sync.fetch`), writing ``rendered/``.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dsf_compile.errors import (
    InputError,
    SyncError,
    UnreachableFleetError,
    UsageError,
    WriteError,
)
from dsf_compile.files import read_regular_file
from dsf_compile.inputs.load import MAX_FILE_BYTES, list_input_files, read_yaml_file
from dsf_compile.inputs.prerequisites import prerequisite_notes
from dsf_compile.inputs.schema import validate_model
from dsf_compile.inputs.validate import (
    Inputs,
    validate_documents,
    validate_settings,
)
from dsf_compile.resolve.summaries import (
    Plan,
    Resolutions,
    check_spec_only_scorers,
    check_synced_scorers,
    resolve_fleet,
)
from dsf_compile.suggest import did_you_mean
from dsf_compile.sync.lock import (
    LOCKFILE,
    LockEntry,
    Lockfile,
    check_lockfile_target,
    read_lockfile,
    write_lockfile,
)
from dsf_contract.bounded_yaml import Document
from dsf_contract.problem import Problem

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.hub_state import HubState
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
    from dsf_compile.inputs.settings import Settings
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.explain import DecisionChange
    from dsf_compile.placement.scheduler import PlacementResult, ScoreIndex
    from dsf_compile.placement.verify import Verification
    from dsf_compile.render.changes import Changes
    from dsf_compile.sync.clusters import Discovery

T = TypeVar("T")

SETTINGS_FILE = "dsf.yaml"


def _read_settings(root: Path) -> tuple[Settings, Document | None, list[Problem]]:
    problems: list[Problem] = []
    settings_document: Document | None = None
    if os.path.lexists(root / SETTINGS_FILE):  # a dangling link or a FIFO is reported, not skipped
        documents, found = read_yaml_file(root, SETTINGS_FILE)
        problems += found
        if len(documents) > 1:
            problems.append(Problem(SETTINGS_FILE, 1, 1, "", "must hold one YAML document"))
        settings_document = documents[0] if documents else None
    settings, found = validate_settings(settings_document)
    return settings, settings_document, problems + found


def load_settings(root: Path) -> Settings:
    """Only ``dsf.yaml`` (for a hub read before the rest is loaded); InputError on problems."""
    settings, _, problems = _read_settings(root)
    if problems:
        raise InputError(problems)
    return settings


@contextmanager
def _building_inputs() -> Iterator[None]:
    """No cyclic garbage collection while the inputs are read and validated.

    Loading allocates millions of small objects that all stay alive (documents, positions,
    models), and each of CPython's full collections walks every one of them: measured on
    20,000 clusters × 2,000 Placements, collections took 40 % of ``validate`` and made it
    grow faster than its input. What loading discards is freed by reference counting; the
    collector resumes for the rest of the command.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_inputs(root: Path) -> Inputs:
    """Read and validate ``dsf.yaml``, ``scorers/`` and ``clusters/``; raise InputError on problems."""
    with _building_inputs():
        return _load_inputs(root)


def _load_inputs(root: Path) -> Inputs:
    settings, settings_document, problems = _read_settings(root)
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
    if problems or errors:
        raise InputError([*problems, *errors, *inputs.warnings, *warnings])
    # what the hub needs for these kinds: said once the inputs are valid, not beside errors
    notes = prerequisite_notes(inputs.placement_objects)
    return replace(inputs, warnings=(*inputs.warnings, *warnings, *notes))


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
    from dsf_compile.placement.checks import check_placements, score_catalog
    from dsf_compile.placement.proposal import check_optimizations

    catalog = score_catalog(inputs, lock, resolutions)
    errors, warnings = check_placements(inputs, catalog, _now())
    return [*errors, *check_optimizations(inputs, catalog)], warnings


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
    from dsf_compile.render.manifests import render_manifests
    from dsf_compile.render.reshard import applied_paths, check_reshard
    from dsf_compile.render.tree import RENDERED
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
    changes = compare_tree(folder, files) if check else write_tree(folder, files)
    return RenderResult(len(files), len(plan.clusters), changes, (*plan.warnings, *notices))


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
    from dsf_compile.sync.fetch import parse_resolve_options, parse_resolve_setting, sync_lock
    from dsf_compile.sync.guard import unreachable_fleet

    inputs = load_inputs(root)
    blocked = check_lockfile_target(root)
    if blocked:  # found before any request: sync could not record what it learns
        raise InputError(blocked)
    previous, problems = read_lockfile(root)
    # a broken lockfile is replaced by a fresh sync, but say so
    warnings = [Problem(p.path, p.line, p.column, p.field, p.message, "warning") for p in problems]
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

    import asyncio

    fetched = asyncio.run(
        sync_lock(
            scorers,
            previous,
            inputs.settings.sync,
            only=only,
            connect_to=connect_to,
            progress=counted,
        )
    )
    lock = fetched.lock
    fraction = inputs.settings.sync.maxUnreachableFraction
    refreshed = only if only is not None else lock.scorers.keys()
    lost, counted_active = unreachable_fleet(previous, refreshed, fetched.unreachable, fraction)
    if lost and not allow_mass_failure:
        problems = [
            inputs.scorer(name).problem(
                ("spec", "configURL"), f"not reached: {lock.scorers[name].reason}"
            )
            for name in lost
        ]
        raise UnreachableFleetError(problems, len(lost), counted_active, fraction)
    written = write_lockfile(root, lock)
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
    return SyncResult(inactive, active, bool(written.written), tuple(warnings), written.recovered)


def explain_fleet(
    root: Path, names: Sequence[str], state: HubState, at: datetime
) -> list[PlacementResult]:
    """``explain``: OCM's scheduler replayed for the named Placements (all when none)."""
    from dsf_compile.placement.checks import inventory_clusters
    from dsf_compile.placement.scheduler import schedule

    inputs = load_inputs(root)
    wanted = set(placement_names(names, [_object_name(p.model) for p in inputs.placements]))
    placements = [p for p in inputs.placements if not wanted or _object_name(p.model) in wanted]
    clusters = inventory_clusters(inputs)
    bindings = [b.model for b in inputs.bindings] + list(state.bindings)
    scores = _indexed(state)
    decided = _decided(state)
    return [schedule(p.model, clusters, bindings, scores, decided, at) for p in placements]


def placement_names(asked: Sequence[str], known: Sequence[str]) -> list[str]:
    """``NAMESPACE/NAME`` of each Placement asked for: ``NAME`` alone is ``default/NAME``,
    or the one namespace holding it; a name that matches none is a :class:`UsageError`
    with a did-you-mean, one held by several namespaces too, naming them."""
    found, problems = [], []
    for name in asked:
        if "/" in name:
            candidates = [name] if name in known else []
        elif f"default/{name}" in known:
            candidates = [f"default/{name}"]
        else:
            candidates = [k for k in known if k.partition("/")[2] == name]
        if len(candidates) == 1:
            found.append(candidates[0])
        elif candidates:
            problems.append(f"{name} is in several namespaces: give one of {', '.join(candidates)}")
        else:
            hint = did_you_mean(
                name, known if "/" in name else {k.partition("/")[2] for k in known}
            )
            problems.append(f"no Placement {name} in placements/ (NAMESPACE/NAME){hint}")
    if problems:
        raise UsageError("; ".join(problems))
    return found


def _indexed(state: HubState) -> ScoreIndex:
    """The state's scores indexed once for every Placement scheduled against them."""
    from dsf_compile.placement.scheduler import ScoreIndex

    return ScoreIndex.of(state.scores)


def _decided(state: HubState) -> DecisionIndex:
    """The state's PlacementDecisions indexed once for every Placement scheduled against them."""
    from dsf_compile.placement.decision_index import DecisionIndex

    return DecisionIndex.of(state.decisions)


def _object_name(placement: Placement) -> str:
    return f"{placement.metadata.namespace}/{placement.metadata.name}"


def decision_changes(root: Path, state: HubState, at: datetime) -> list[DecisionChange]:
    """Replay the scheduler on the Placements of ``rendered/`` and of ``placements/``, same state.

    Placements added or removed by the change count too (no decisions on the missing side).
    """
    from dsf_compile.placement.checks import inventory_clusters
    from dsf_compile.placement.explain import DecisionChange
    from dsf_compile.placement.scheduler import schedule

    inputs = load_inputs(root)
    clusters = inventory_clusters(inputs)
    scores, decided = _indexed(state), _decided(state)
    old_placements, old_bindings = read_rendered_placements(root)
    new = {
        _object_name(p.model): schedule(
            p.model,
            clusters,
            [b.model for b in inputs.bindings] + list(state.bindings),
            scores,
            decided,
            at,
        )
        for p in inputs.placements
    }
    old = {
        _object_name(p): schedule(
            p, clusters, [*old_bindings, *state.bindings], scores, decided, at
        )
        for p in old_placements
    }
    changes = (
        DecisionChange.between(name, old.get(name), new.get(name))
        for name in sorted(set(old) | set(new))
    )
    return [change for change in changes if change.changed]


def read_rendered_placements(
    root: Path,
) -> tuple[list[Placement], list[ManagedClusterSetBinding]]:
    """The Placements and bindings as committed in ``rendered/hub/placements/``."""
    from dsf_compile.inputs.names import PLACEMENTS_FOLDER
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
    from dsf_compile.render.tree import RENDERED

    files, problems = list_input_files(root, f"{RENDERED}/{PLACEMENTS_FOLDER}")
    placements: list[Placement] = []
    bindings: list[ManagedClusterSetBinding] = []
    for relative in files:
        if relative.endswith("/kustomization.yaml"):
            continue
        documents, found = read_yaml_file(root, relative)
        problems += found
        for document in documents:
            kind = document.data.get("kind") if isinstance(document.data, dict) else None
            if kind == "Placement":
                placement, found = validate_model(Placement, document, document.data)
                placements += [placement] if placement is not None else []
            elif kind == "ManagedClusterSetBinding":
                binding, found = validate_model(ManagedClusterSetBinding, document, document.data)
                bindings += [binding] if binding is not None else []
            else:
                continue
            problems += found
    if problems:
        raise InputError(problems)
    return placements, bindings


@dataclass(frozen=True)
class Optimized:
    """One PlacementOptimization's plan, as written (or unchanged)."""

    path: str
    objective: int
    changed: bool
    left_out: tuple[str, ...] = ()  # target workloads that do not fit
    warnings: tuple[Problem, ...] = ()  # one per workload left out
    text: str = ""  # the plan file's content


def optimize_fleet(
    root: Path,
    state: HubState,
    at: datetime,
    time_limit: float | None = None,
    notice: Callable[[str], None] | None = None,
) -> list[Optimized]:
    """``optimize``: solve every PlacementOptimization and write its plan under ``placements/optimized/``.

    ``time_limit`` (seconds, default 60) bounds the solver over the whole
    command; past it, or past the size bound, an InputError and nothing is written.
    ``notice`` is told, in one line, what a killed ``optimize`` left and this one recovered.
    """
    import time

    from dsf_compile.inputs.names import OPTIMIZED_FOLDER
    from dsf_compile.journal import replace_files
    from dsf_compile.placement.optimize import DEFAULT_TIME_LIMIT
    from dsf_compile.placement.proposal import Proposal, propose

    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    inputs = validate_fleet(root)
    if not inputs.optimizations:
        raise UsageError("no PlacementOptimization in placements/")
    if state.scores is None:
        raise UsageError("optimize needs the scores: --scores PATH or --hub-kubeconfig PATH")
    # every plan is solved before any is written: a failing one leaves all files as they
    # were, and every failing one is reported
    deadline = time.monotonic() + limit
    plans: list[Proposal] = []
    problems: list[Problem] = []
    for located in inputs.optimizations:
        try:
            plans.append(
                propose(inputs, located, state.scores, at, deadline=deadline, time_limit=limit)
            )
        except InputError as error:
            problems += error.problems
    if problems:
        raise InputError(problems)
    # every plan in one update: all of them or none, also when the command is killed
    replaced = replace_files(
        root / OPTIMIZED_FOLDER,
        {plan.path.removeprefix(f"{OPTIMIZED_FOLDER}/"): plan.text.encode() for plan in plans},
        label=OPTIMIZED_FOLDER,
        error=WriteError,
    )
    if replaced.recovered and notice is not None:
        notice(replaced.recovered)
    changed = {f"{OPTIMIZED_FOLDER}/{p}" for p in replaced.written}
    return [
        Optimized(p.path, p.objective, p.path in changed, p.left_out, p.warnings, p.text)
        for p in plans
    ]


def discover_clusters(
    root: Path, kubeconfig: Path, *, allow_mass_removal: bool = False
) -> Discovery:
    """``sync --clusters``: list the hub's ManagedClusters into ``clusters/discovered.yaml``.

    Writes the file (atomically) only when its bytes change; raises
    :class:`~dsf_compile.hub.HubReadError` when the hub cannot be read or answers
    something ``validate`` would refuse, and :class:`MassRemovalError` when the hub's
    list would remove more of the file's clusters than ``sync.maxClusterRemovalFraction``
    allows (:mod:`dsf_compile.sync.guard`), unless ``allow_mass_removal``: in every case
    before anything is written.
    """
    from dsf_compile.journal import replace_files
    from dsf_compile.sync.clusters import (
        DISCOVERED_FILE,
        Discovery,
        check_discovered_target,
        encode_discovered,
        names_in,
        read_managed_clusters,
    )

    blocked = check_discovered_target(root)
    if blocked:
        raise InputError(blocked)
    settings = load_settings(root)
    text = encode_discovered(read_managed_clusters(kubeconfig, settings.hub))
    path = root / DISCOVERED_FILE
    try:  # from Git: a link or a FIFO in its place is refused, not followed or waited on
        before = read_regular_file(path, max_bytes=MAX_FILE_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        before = ""
    now, then = names_in(text), names_in(before) if before else {}
    if not allow_mass_removal:
        _guard_removal(now, then, settings.sync.maxClusterRemovalFraction)
    folder, _, name = DISCOVERED_FILE.rpartition("/")
    # always: it also removes what a killed sync --clusters left beside the file
    written = replace_files(
        root / folder, {name: text.encode("utf-8")}, label=folder, error=SyncError
    )
    return Discovery(
        clusters=tuple(sorted(now)),
        added=tuple(sorted(now.keys() - then.keys())),
        removed=tuple(sorted(then.keys() - now.keys())),
        changed=bool(written.written),
        recovered=written.recovered,
    )


#: Removed clusters named one per line when the guard trips; the count says the rest.
_NAMED_REMOVALS = 20


def _guard_removal(
    now: dict[str, tuple[int, int]], then: dict[str, tuple[int, int]], fraction: float
) -> None:
    """Raise :class:`MassRemovalError` when the hub's list removes too much of the file."""
    from dsf_compile.errors import MassRemovalError
    from dsf_compile.sync.clusters import DISCOVERED_FILE
    from dsf_compile.sync.guard import mass_removal

    lost = mass_removal(then.keys(), now.keys(), fraction)
    if not lost:
        return
    problems = [
        Problem(DISCOVERED_FILE, *then[name], "metadata.name", f"{name}: not on the hub's list")
        for name in lost[:_NAMED_REMOVALS]
    ]
    if len(lost) > _NAMED_REMOVALS:
        line, column = then[lost[_NAMED_REMOVALS]]
        more = len(lost) - _NAMED_REMOVALS
        problems.append(
            Problem(DISCOVERED_FILE, line, column, "metadata.name", f"and {more} more clusters")
        )
    raise MassRemovalError(problems, len(lost), len(then), len(now), fraction)


def verify_hub(root: Path, kubeconfig: str, names: Sequence[str], at: datetime) -> Verification:
    """``explain --verify``: replay the hub's Placements on its own state, compare decisions.

    Every chosen Placement gets a typed verdict (compared and agreeing or differing, not
    simulated, unreadable); a name given that the hub does not list is a usage error.
    """
    from dsf_compile.hub import open_hub
    from dsf_compile.hub_state import hub_objects, hub_state
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.scheduler import ScoreIndex, schedule
    from dsf_compile.placement.verify import (
        Outcome,
        Verdict,
        Verification,
        hub_cluster,
        hub_placement,
        set_members,
        verdict,
    )

    with open_hub(kubeconfig, load_settings(root).hub) as hub:  # one deadline for all six lists
        state = hub_state(hub)
        objects = hub_objects(hub)
    placements, broken = _readable(objects.placements, hub_placement, namespaced=True)
    clusters, broken_clusters = _readable(objects.clusters, hub_cluster, namespaced=False)
    wanted = set(names)
    chosen = [p for p in placements if not wanted or _object_name(p) in wanted]
    broken = [(name, why) for name, why in broken if not wanted or name in wanted]
    missing = sorted(wanted - {_object_name(p) for p in chosen} - {name for name, _ in broken})
    if missing:
        raise UsageError(f"no Placement {', '.join(missing)} on the hub (NAMESPACE/NAME)")
    members = set_members(objects.cluster_sets, clusters)
    # OCM's GetValidManagedClusterSetBindings: a binding of a set that does not exist is ignored
    bindings = [b for b in state.bindings if b.metadata.name in members]
    index = ScoreIndex.of(state.scores or ())
    decided = DecisionIndex.of(state.decisions)  # once: per Placement it was quadratic
    verdicts = [
        verdict(schedule(p, clusters, bindings, index, decided, at, set_members=members), decided)
        for p in sorted(chosen, key=_object_name)
    ]
    verdicts += [Verdict(name, Outcome.UNREADABLE, (why,)) for name, why in sorted(broken)]
    return Verification(tuple(verdicts), tuple(broken_clusters))


def _readable(
    items: Sequence[Any], parse: Callable[[Any], T], *, namespaced: bool
) -> tuple[list[T], list[tuple[str, str]]]:
    """The hub's objects the replay can read, and (name, why) for each other one."""
    from pydantic import ValidationError

    from dsf_compile.placement.verify import raw_name, unreadable_reason

    out, broken = [], []
    for item in items:
        if not isinstance(item, dict):  # the parsers read mappings; a hub may send anything
            broken.append((raw_name(item, namespaced=namespaced), "not an object"))
            continue
        try:
            out.append(parse(item))
        except (ValidationError, ValueError) as err:
            broken.append((raw_name(item, namespaced=namespaced), unreadable_reason(err)))
    return out, broken
