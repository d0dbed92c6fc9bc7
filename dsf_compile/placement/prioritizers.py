"""Steps 4 and 5 of OCM's scheduler: prioritizer weights and every prioritizer's scores.

Follows ocm ``controllers/scheduling/schedule.go`` (``getWeights``, ``getPrioritizers``)
and ``plugins/{addon,balance,steady,resource}``. Where OCM computes in floating point and
truncates (Balance, ResourceAllocatable*), so does this module, with the same operations
in the same order, so that a score on the edge of an integer truncates the way the hub
truncates it. Pure.
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

from dsf_compile.inputs.placements import (
    Placement,
    ScoreCoordinate,
)
from dsf_compile.placement.decision_index import DecisionIndex
from dsf_compile.placement.decisions import Misconfigured
from dsf_compile.placement.state import Cluster, ScoreIndex, format_time
from dsf_contract.records import frozen
from dsf_contract.scores import CONDITION_TYPE

MAX_SCORE = 100
#: How many cluster names a warning lists before it says "and N more".
_NAMED_IN_WARNING = 5


@frozen
class PrioritizerResult:
    """One prioritizer whose weight is not 0: its score for every cluster left after step 3."""

    name: str
    weight: int
    scores: Mapping[str, int]


@frozen
class Prioritizer:
    """A configured prioritizer: its name, weight and score coordinate."""

    name: str
    weight: int
    coordinate: ScoreCoordinate


@frozen
class _Step:
    """What a built-in prioritizer reads: the clusters left after step 3 and the decisions."""

    left: Sequence[Cluster]
    names: Sequence[str]
    own: frozenset[str]
    placement: Placement
    decisions: DecisionIndex


class Reads(enum.Enum):
    """What a built-in prioritizer's scores depend on besides the clusters left: what a
    replay over time (``backtest``) must follow to know when they move."""

    #: The clusters alone: constant while the candidates are (ResourceAllocatable*).
    CLUSTERS = "clusters"
    #: The Placement's own decisions (Steady).
    OWN_DECISIONS = "own decisions"
    #: Every other Placement's decisions (Balance).
    OTHER_DECISIONS = "other decisions"


@frozen
class Builtin:
    """One of OCM's built-in prioritizers (ocm ``plugins/``)."""

    #: The weight Additive mode gives it when the Placement does not configure it (0: none).
    default_weight: int
    #: Its score for every cluster left, -100 to 100.
    score: Callable[[_Step], dict[str, int]]
    reads: Reads


def score_prioritizers(
    prioritizers: Sequence[Prioritizer],
    left: Sequence[Cluster],
    index: ScoreIndex,
    no_scores: bool,
    placement: Placement,
    decisions: DecisionIndex,
    at: datetime,
    warnings: list[str],
    momentary: list[str],
) -> list[PrioritizerResult]:
    """Steps 4 and 5: every prioritizer's score for the clusters left; warnings appended,
    and to ``momentary`` those true of this moment's scores only (none given, absent,
    expired), which a replay over time says per step."""
    names = [c.name for c in left]
    own = decisions.own_clusters(placement.metadata.namespace, placement.metadata.name)
    step = _Step(left, names, frozenset(own), placement, decisions)
    results: list[PrioritizerResult] = []
    addon_zero: dict[str, list[str]] = {}
    expired: set[tuple[str, str, datetime]] = set()
    used_resources: set[str] = set()
    for prioritizer in prioritizers:
        addon = prioritizer.coordinate.addOn
        if prioritizer.coordinate.type == "AddOn" and addon is not None:
            values, missing, stale = _addon_scores(
                left, index, addon.resourceName, addon.scoreName, at
            )
            if missing and not no_scores:
                addon_zero.setdefault(prioritizer.name, []).extend(missing)
            expired |= stale
            used_resources.add(addon.resourceName)
        else:
            values = BUILTINS[prioritizer.name].score(step)
        results.append(PrioritizerResult(prioritizer.name, prioritizer.weight, values))
    results.sort(key=lambda r: r.name)
    if no_scores and any(p.coordinate.type == "AddOn" for p in prioritizers):
        momentary.append("no AddOnPlacementScores were given: every AddOn score is 0")
    momentary += _zero_and_expired(addon_zero, expired)
    warnings += momentary
    warnings += _failing_scores(index, used_resources, set(names))
    twice = sorted(n for n, k in Counter(p.name for p in prioritizers).items() if k > 1)
    if twice:
        warnings.append(f"prioritizer configured more than once, OCM adds each: {', '.join(twice)}")
    return results


def _zero_and_expired(
    addon_zero: Mapping[str, list[str]], expired: set[tuple[str, str, datetime]]
) -> list[str]:
    """Warnings for AddOn scores that count 0: absent, or expired."""
    said = [
        f"{prioritizer_name}: no such score for {some_names(sorted(set(zero)))}: they score 0"
        for prioritizer_name, zero in sorted(addon_zero.items())
    ]
    said += [
        f"AddOnPlacementScore {score_namespace}/{score_name} expired at "
        f"{format_time(until)}: it scores 0"
        for score_namespace, score_name, until in sorted(expired)
    ]
    return said


def _failing_scores(index: ScoreIndex, resources: set[str], clusters: set[str]) -> list[str]:
    """The ``resources`` of ``clusters`` whose agent reports them failing (the
    ``ScoresAvailable`` condition is False)."""
    out = []
    for cluster, resource in index.failing:
        if resource not in resources or cluster not in clusters:
            continue
        found = index.objects.get((cluster, resource))
        for condition in found.status.conditions if found is not None else ():
            if condition.type == CONDITION_TYPE and condition.status == "False":
                since = (
                    f" since {format_time(condition.lastTransitionTime)}"
                    if condition.lastTransitionTime
                    else ""
                )
                out.append(
                    f"score {resource} failing on cluster {cluster}{since} ({condition.reason}): "
                    "its last good values are used until they expire"
                )
    return out


def prioritizer_misconfigured(prioritizers: Sequence[Prioritizer]) -> Misconfigured | None:
    """``getPrioritizers``: a built-in OCM does not implement (Spread) with a weight."""
    unknown = sorted(
        {p.name for p in prioritizers if p.coordinate.type == "BuiltIn"} - BUILTINS.keys()
    )
    # OCM walks a Go map, so which of several it names varies; the first by name here
    return Misconfigured("", f"incorrect builtin prioritizer: {unknown[0]}") if unknown else None


def configured_prioritizers(placement: Placement) -> list[Prioritizer]:
    """Step 4: the prioritizers whose weight is not 0, in configuration order.

    OCM keys weights by the score coordinate, whose ``addOn`` is a pointer: a built-in
    configuration overrides the default weight, but two configurations of the same
    AddOn score are two prioritizers, both counted.
    """
    policy = placement.spec.prioritizerPolicy
    weights: dict[tuple[str, str, int], tuple[int, ScoreCoordinate]] = {}
    if policy.mode == "Additive":
        for builtin, entry in BUILTINS.items():
            if entry.default_weight:
                weights["BuiltIn", builtin, -1] = (
                    entry.default_weight,
                    ScoreCoordinate(type="BuiltIn", builtIn=builtin),
                )
    for position, config in enumerate(placement.spec.prioritizerPolicy.configurations):
        coordinate = config.scoreCoordinate
        distinct = -1 if coordinate.addOn is None else position
        weights[coordinate.type, coordinate.builtIn or "", distinct] = (config.weight, coordinate)
    return [Prioritizer(c.name, w, c) for w, c in weights.values() if w != 0]


def _addon_scores(
    clusters: Sequence[Cluster],
    index: ScoreIndex,
    resource_name: str,
    score_name: str,
    at: datetime,
) -> tuple[dict[str, int], list[str], set[tuple[str, str, datetime]]]:
    values: dict[str, int] = {}
    missing: list[str] = []
    expired: set[tuple[str, str, datetime]] = set()
    table = index.addon_table(resource_name, score_name)
    for cluster in clusters:
        name = cluster.name
        values[name] = 0
        found = table.get(name)
        if found is None:
            missing.append(name)
            continue
        value, until = found  # the last item of that name, as in OCM's loop
        if until is not None and at > until:
            expired.add((name, resource_name, until))
        elif value is None:
            missing.append(name)
        else:
            values[name] = value
    return values, missing, expired


def steady_score(decided: bool) -> int:
    """Steady: the full score for a cluster this Placement already decided, else 0."""
    return MAX_SCORE if decided else 0


def _steady_scores(step: _Step) -> dict[str, int]:
    return {n: steady_score(n in step.own) for n in step.names}


def balance_score(count: int, most: int) -> int:
    """Balance for a cluster the other Placements decided ``count`` times, when the most
    decided cluster has ``most``: fewer decisions, a higher score."""
    if count == 0:
        return MAX_SCORE
    # float64 and truncation toward zero, as OCM computes it
    usage = float(count) / float(most)
    return 2 * int(float(MAX_SCORE) * (0.5 - usage))


def _balance_scores(step: _Step) -> dict[str, int]:
    placement = step.placement
    counts = step.decisions.others_counts(placement.metadata.namespace, placement.metadata.name)
    most = max(counts.values(), default=0)
    return {name: balance_score(counts.get(name, 0), most) for name in step.names}


def _resource_scores(resource: str) -> Callable[[_Step], dict[str, int]]:
    """ResourceAllocatable*: the allocatable ``resource``, scaled between the fleet's extremes."""
    return lambda step: _allocatable_scores(step.left, resource)


def _allocatable_scores(clusters: Sequence[Cluster], resource: str) -> dict[str, int]:
    # OCM reads quantities with AsApproximateFloat64 and computes in float64.
    reported = {
        c.name: float(c.allocatable[resource])
        for c in clusters
        if resource in c.allocatable and resource in c.capacity
    }
    values = {c.name: 0 for c in clusters}
    if not reported:
        return values
    low, high = min(reported.values()), max(reported.values())
    for name, allocatable in reported.items():
        if high - low != 0:
            ratio = (allocatable - low) / (high - low)
            values[name] = int((ratio - 0.5) * 2.0 * 100.0)
        else:
            values[name] = MAX_SCORE
    return values


#: OCM's built-in prioritizers: the only place their names are written. A built-in not
#: here makes OCM report the Placement misconfigured (``getPrioritizers``: Spread has no
#: prioritizer), and ``validate`` refuses it.
BUILTINS: Mapping[str, Builtin] = {
    "Balance": Builtin(1, _balance_scores, Reads.OTHER_DECISIONS),
    "Steady": Builtin(1, _steady_scores, Reads.OWN_DECISIONS),
    "ResourceAllocatableCPU": Builtin(0, _resource_scores("cpu"), Reads.CLUSTERS),
    "ResourceAllocatableMemory": Builtin(0, _resource_scores("memory"), Reads.CLUSTERS),
}
#: The prioritizer that keeps a Placement where it is (``backtest --steady`` sweeps its
#: weight, and its term is what ``meanLoss`` leaves out).
STEADY = next(name for name, b in BUILTINS.items() if b.reads is Reads.OWN_DECISIONS)


def reads_of(name: str) -> Reads | None:
    """What the built-in ``name`` reads (None: not a built-in OCM implements)."""
    builtin = BUILTINS.get(name)
    return None if builtin is None else builtin.reads


def some_names(names: Sequence[str]) -> str:
    """The first few names, then how many more."""
    shown = ", ".join(names[:_NAMED_IN_WARNING])
    more = len(names) - _NAMED_IN_WARNING
    return f"{shown} and {more} more" if more > 0 else shown
