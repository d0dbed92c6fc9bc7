"""``explain``, ``diff``'s decision changes, ``optimize`` and ``explain --verify``.

OCM's scheduler (:mod:`dsf_compile.placement`) replayed over the inputs and a hub's state
(:mod:`dsf_compile.hubread.state`); ``optimize`` writes its plans under
``placements/optimized/`` through :mod:`dsf_compile.edges.journal`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from dsf_compile.errors import (
    InputError,
    UsageError,
    WriteError,
    did_you_mean,
)
from dsf_compile.inputs.load import list_input_files, read_yaml_file
from dsf_compile.inputs.schema import validate_model
from dsf_compile.pipeline.inputs import load_inputs, load_settings, validate_fleet
from dsf_contract.problem import Problem
from dsf_contract.records import frozen

T = TypeVar("T")

if TYPE_CHECKING:  # imported where used: validate and sync load none of them
    from dsf_compile.edges.hub import HubAccess
    from dsf_compile.hubread.state import HubState
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
    from dsf_compile.inputs.validate import Inputs
    from dsf_compile.placement.decision_changes import DecisionChange
    from dsf_compile.placement.decision_index import DecisionIndex
    from dsf_compile.placement.scheduler import PlacementResult, ScoreIndex
    from dsf_compile.placement.verify import Verification
    from dsf_compile.resolve.scorer import ResolvedScorer
    from dsf_compile.resolve.summaries import Resolutions


def explain_fleet(
    root: Path,
    names: Sequence[str],
    state: HubState,
    at: datetime,
    *,
    inputs: Inputs | None = None,
) -> list[PlacementResult]:
    """``explain``: OCM's scheduler replayed for the named Placements (all when none).

    ``inputs``: the repository already loaded (``dsf-mcp`` validates it first), else loaded here.
    """
    from dsf_compile.placement.cluster_groups import inventory_clusters
    from dsf_compile.placement.scheduler import schedule

    inputs = inputs or load_inputs(root)
    wanted = set(placement_names(names, [_object_name(p.model) for p in inputs.placements]))
    placements = [p for p in inputs.placements if not wanted or _object_name(p.model) in wanted]
    clusters = inventory_clusters(inputs)
    bindings = [b.model for b in inputs.bindings] + list(state.bindings)
    scores = _indexed(state)
    decided = _decided(state)
    return [schedule(p.model, clusters, bindings, scores, decided, at) for p in placements]


def score_windows(scorers: Iterable[ResolvedScorer]) -> dict[str, int]:
    """AddOnPlacementScore name → how long its scores stay valid after a write (seconds)."""
    from dsf_contract.placement_scores import validity_seconds
    from dsf_contract.summary import sanitize_score_name

    return {
        sanitize_score_name(s.score_name): validity_seconds(s.summary.scoringInterval)
        for s in scorers
    }


def fleet_score_windows(
    root: Path, inputs: Inputs, resolutions: Resolutions | None = None
) -> dict[str, int]:
    """:func:`score_windows` of the fleet's scorers, each resolved once against the
    lockfile (``resolutions``: those a caller already made); a scorer that does not
    resolve (or no readable lockfile) has no window."""
    from dsf_compile.resolve.summaries import Resolutions
    from dsf_compile.sync.lock import LOCKFILE, read_lockfile

    if resolutions is None:
        lock = None
        if (root / LOCKFILE).is_file():
            lock, problems = read_lockfile(root)
            lock = None if problems else lock
        resolutions = Resolutions(lock)
    resolved = (resolutions.of(located)[0] for located in inputs.scorers)
    return score_windows(r for r in resolved if r is not None)


def snapshot_time(state: HubState, windows: Mapping[str, int]) -> datetime | None:
    """The moment a scores snapshot speaks of: its newest write (None: it cannot say)."""
    from dsf_compile.placement.state import snapshot_moment

    return snapshot_moment(state.scores or (), windows)


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


def decision_changes(
    root: Path, state: HubState, at: datetime, *, inputs: Inputs | None = None
) -> list[DecisionChange]:
    """Replay the scheduler on the Placements of ``rendered/`` and of ``placements/``, same state.

    Placements added or removed by the change count too (no decisions on the missing side);
    a Placement whose decisions stay is kept when its replay warned of something.
    ``inputs``: the repository already loaded (``diff`` renders first), else loaded here.
    """
    from dsf_compile.placement.cluster_groups import inventory_clusters
    from dsf_compile.placement.decision_changes import DecisionChange
    from dsf_compile.placement.scheduler import schedule

    inputs = inputs or load_inputs(root)
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
    return [change for change in changes if change.reported]


def read_rendered_placements(
    root: Path,
) -> tuple[list[Placement], list[ManagedClusterSetBinding]]:
    """The Placements and bindings as committed in ``rendered/hub/placements/``."""
    from dsf_compile.edges.tree import RENDERED
    from dsf_compile.inputs.names import PLACEMENTS_FOLDER
    from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement

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


@frozen
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
    *,
    inputs: Inputs | None = None,
) -> list[Optimized]:
    """``optimize``: solve every PlacementOptimization and write its plan under ``placements/optimized/``.

    ``time_limit`` (seconds, default 60) bounds the solver over the whole
    command; past it, or past the size bound, an InputError and nothing is written.
    ``notice`` is told, in one line, what a killed ``optimize`` left and this one recovered.
    ``inputs``: the repository already validated (``dsf-mcp`` does it first), else here.
    """
    import time

    from dsf_compile.edges.journal_scope import Ownership
    from dsf_compile.edges.replacement import replace_files
    from dsf_compile.inputs.names import OPTIMIZED_FOLDER
    from dsf_compile.placement.optimize import DEFAULT_TIME_LIMIT
    from dsf_compile.placement.proposal import Proposal, propose

    limit = DEFAULT_TIME_LIMIT if time_limit is None else time_limit
    inputs = inputs or validate_fleet(root)
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
        scope=Ownership.folder("optimize", OPTIMIZED_FOLDER),
    )
    if replaced.recovered and notice is not None:
        notice(replaced.recovered)
    changed = {f"{OPTIMIZED_FOLDER}/{p}" for p in replaced.written}
    return [
        Optimized(p.path, p.objective, p.path in changed, p.left_out, p.warnings, p.text)
        for p in plans
    ]


def verify_hub(root: Path, access: HubAccess, names: Sequence[str], at: datetime) -> Verification:
    """``explain --verify``: replay the hub's Placements on its own state, compare decisions.

    Every chosen Placement gets a typed verdict (compared and agreeing or differing, not
    simulated, unreadable); a name given that the hub does not list is a usage error.
    """
    from dsf_compile.hubread.state import read_hub_replay
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

    state, objects = read_hub_replay(access, load_settings(root).hub)
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
