"""Models + lockfile → the fleet's plan: resolved scorers and what each cluster runs.

Pure. Each scorer is resolved by :mod:`dsf_compile.resolve.scorer` (once per command,
through :class:`Resolutions`); here are the rules over the fleet: unique score names,
a lockfile entry for every synced scorer, masks naming published scores, and the
per-cluster plan ``render`` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from fnmatch import fnmatchcase

from dsf_compile.edges.untrusted import redact
from dsf_compile.errors import InputError, did_you_mean
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.selectors import is_glob
from dsf_compile.inputs.validate import Inputs
from dsf_compile.resolve.scorer import ResolvedScorer, field_at, resolve_scorer
from dsf_compile.sync.lock import Lockfile
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem
from dsf_contract.records import frozen
from dsf_contract.summary import sanitize_score_name


@frozen
class ClusterPlan:
    """One managed cluster and the names of the scorers it runs, in order."""

    name: str
    labels: dict[str, str]
    scorers: tuple[str, ...]


@frozen
class Plan:
    """Everything ``render`` needs: validated inputs, health, resolved scorers per cluster."""

    inputs: Inputs
    health: dict[str, str]
    resolved: dict[str, ResolvedScorer]
    clusters: tuple[ClusterPlan, ...]
    warnings: tuple[Problem, ...]


# ------------------------------------------------------------------ the fleet


def check_unique_scores(resolved: Sequence[ResolvedScorer]) -> list[Problem]:
    """Score names, and the AddOnPlacementScore names they sanitize to, must be unique."""
    problems = []
    by_score: dict[str, ResolvedScorer] = {}
    by_object: dict[str, ResolvedScorer] = {}
    for scorer in resolved:
        score, object_name = scorer.score_name, sanitize_score_name(scorer.score_name)
        pointer: Pointer = ("spec", "scoring", "params", "name")
        if score in by_score:
            problems.append(
                scorer.located.problem(
                    pointer,
                    f"score name {score!r} is also the score of scorer {by_score[score].name!r}",
                )
            )
        elif object_name in by_object:
            other = by_object[object_name]
            problems.append(
                scorer.located.problem(
                    pointer,
                    f"score name {score!r} and {other.score_name!r} (scorer {other.name!r}) both become "
                    f"AddOnPlacementScore {object_name!r}",
                )
            )
        by_score.setdefault(score, scorer)
        by_object.setdefault(object_name, scorer)
    return problems


class Resolutions:
    """Each scorer resolved at most once per command: against its synced ``/config`` when
    its spec says ``Full`` and the lockfile holds one, else against its spec alone.

    ``validate`` and ``render`` ask three times (the spec-only scorers, the scores the
    Placements may name, the plan); each asks this object, which resolves on first use.
    """

    def __init__(self, lock: Lockfile | None) -> None:
        self._lock = lock
        self._done: dict[str, tuple[ResolvedScorer | None, list[Problem]]] = {}

    def of(self, located: Located[DynamicScorer]) -> tuple[ResolvedScorer | None, list[Problem]]:
        """The scorer resolved, or None and the problems saying why not."""
        name = located.model.metadata.name
        if name not in self._done:
            entry = self._lock.scorers.get(name) if self._lock is not None else None
            full = located.model.spec.configSyncMode == "Full"
            config = entry.config if entry is not None and full else None
            self._done[name] = resolve_scorer(located, config)
        return self._done[name]


def check_spec_only_scorers(
    inputs: Inputs, resolutions: Resolutions | None = None
) -> list[Problem]:
    """What ``validate`` can tell without the lockfile: ``None`` scorers resolve from their spec alone."""
    resolutions = resolutions or Resolutions(None)
    resolved, problems = [], []
    for located in inputs.scorers:
        if located.model.spec.configSyncMode == "None":
            result, found = resolutions.of(located)
            problems += found
            if result is not None:
                resolved.append(result)
    problems += check_unique_scores(resolved)
    if not problems and all(s.model.spec.configSyncMode == "None" for s in inputs.scorers):
        # with no Full scorer, every score name is known before any sync
        problems += _masks_matching_no_score(inputs, {r.score_name for r in resolved})
    return problems


def check_synced_scorers(
    inputs: Inputs, lock: Lockfile | None, resolutions: Resolutions
) -> list[Problem]:
    """What ``validate`` can tell with the lockfile (None: there is none): every ``Full``
    scorer has an entry (``render`` needs its ``/config``), and with one every mask's
    ``scoreName`` is checked against the names the scorers publish."""
    problems = [
        _no_lock_entry(located)
        for located in inputs.scorers
        if located.model.spec.configSyncMode == "Full"
        and (lock is None or located.model.metadata.name not in lock.scorers)
    ]
    if problems or all(s.model.spec.configSyncMode == "None" for s in inputs.scorers):
        return problems  # the spec-only check has seen the masks
    known = _published_names(inputs, resolutions)
    return [] if known is None else _masks_matching_no_score(inputs, known)


def _published_names(inputs: Inputs, resolutions: Resolutions) -> set[str] | None:
    """Every scorer's score name, from its synced ``/config`` or its spec; None when one
    cannot be told (an Inactive ``Full`` scorer whose name only its ``/config`` knows)."""
    known = set()
    for located in inputs.scorers:
        result, _ = resolutions.of(located)
        name = (
            result.score_name
            if result
            else field_at(located.model.spec, "scoring", "params", "name")
        )
        if not name:
            return None
        known.add(name)
    return known


def _no_lock_entry(located: Located[DynamicScorer]) -> Problem:
    name = located.model.metadata.name
    return located.problem(
        ("metadata", "name"), f"no entry in dsf.lock.json: run 'dsf-compile sync {name}'"
    )


def _check_lock(inputs: Inputs, lock: Lockfile) -> tuple[list[Problem], list[Problem]]:
    errors, warnings = [], []
    for located in inputs.scorers:
        name, spec = located.model.metadata.name, located.model.spec
        entry = lock.scorers.get(name)
        if entry is None:
            errors.append(_no_lock_entry(located))
        elif entry.mode != spec.configSyncMode or entry.configURL != redact(spec.configURL):
            field = "configSyncMode" if entry.mode != spec.configSyncMode else "configURL"
            errors.append(
                located.problem(
                    ("spec", field), f"changed since the last sync: run 'dsf-compile sync {name}'"
                )
            )
        elif entry.health == "Inactive":
            keep = inputs.settings.render.keepInactive
            what = "kept (render.keepInactive)" if keep else "left out of every cluster"
            warnings.append(
                located.problem(
                    ("metadata", "name"), f"scorer is Inactive ({entry.reason}); {what}", "warning"
                )
            )
    defined = {s.model.metadata.name for s in inputs.scorers}
    for name in sorted(set(lock.scorers) - defined):
        warnings.append(
            Problem(
                "dsf.lock.json",
                0,
                0,
                f"scorers.{name}",
                "no scorer defines this entry: run 'dsf-compile sync'",
                "warning",
            )
        )
    return errors, warnings


def _masks_matching_no_score(inputs: Inputs, known: set[str]) -> list[Problem]:
    if inputs.config is None:
        return []
    return [
        inputs.config.problem(
            ("spec", "masks", index, "scoreName"),
            f"matches no score of any scorer (a typo?){did_you_mean(mask.scoreName, known)}",
        )
        for index, mask in enumerate(inputs.masks)
        if mask.scoreName not in known
        and not (is_glob(mask.scoreName) and any(fnmatchcase(s, mask.scoreName) for s in known))
    ]


def _check_mask_scores(inputs: Inputs, resolved: dict[str, ResolvedScorer]) -> list[Problem]:
    """Masks against every scorer's score name, Active or Inactive (masking a scorer that is down is fine)."""
    known = {r.score_name for r in resolved.values()}
    for located in inputs.scorers:
        if located.model.metadata.name in resolved:
            continue
        spec_name = field_at(located.model.spec, "scoring", "params", "name")
        if not spec_name:
            return []  # an Inactive Full scorer whose name only its /config knows
        known.add(spec_name)
    return _masks_matching_no_score(inputs, known)


def resolve_fleet(inputs: Inputs, lock: Lockfile, resolutions: Resolutions | None = None) -> Plan:
    """Resolve every scorer against the lockfile and plan each cluster's summaries."""
    resolutions = resolutions or Resolutions(lock)
    errors, warnings = _check_lock(inputs, lock)
    health: dict[str, str] = {}
    resolved: dict[str, ResolvedScorer] = {}
    keep_inactive = inputs.settings.render.keepInactive
    for located in inputs.scorers:
        name = located.model.metadata.name
        entry = lock.scorers.get(name)
        if entry is None:
            continue
        health[name] = entry.health
        if entry.health != "Active" and not keep_inactive:
            continue
        if entry.mode == located.model.spec.configSyncMode:
            result, problems = resolutions.of(located)
        else:  # an error already (_check_lock): resolved as the lockfile was synced
            result, problems = resolve_scorer(
                located, entry.config if entry.mode == "Full" else None
            )
        errors += problems
        if result is not None:
            resolved[name] = result
    errors += check_unique_scores(list(resolved.values()))
    errors += _check_mask_scores(inputs, resolved)
    if errors:
        raise InputError(errors + warnings)
    return Plan(inputs, health, resolved, plan_clusters(inputs, resolved), tuple(warnings))


def plan_clusters(inputs: Inputs, resolved: dict[str, ResolvedScorer]) -> tuple[ClusterPlan, ...]:
    """Per cluster, the resolved scorers that no mask keeps off it, ordered by scorer name."""
    names = sorted(resolved)
    masked: dict[str, set[str]] = {}
    by_score: dict[str, list[str]] = {}
    for n in names:
        by_score.setdefault(resolved[n].score_name, []).append(n)
    for mask in inputs.masks:
        pattern = mask.scoreName
        if is_glob(pattern):
            scorers = [n for n in names if fnmatchcase(resolved[n].score_name, pattern)]
        else:  # one lookup: a fleet may hold a mask per cluster and score
            scorers = by_score.get(pattern, [])
        if not scorers:
            continue
        for cluster in inputs.cluster_lookup.selected_by(mask):
            masked.setdefault(cluster.model.metadata.name, set()).update(scorers)
    plans = []
    for cluster in inputs.clusters:
        meta = cluster.model.metadata
        hidden = masked.get(meta.name, set())
        plans.append(
            ClusterPlan(meta.name, dict(meta.labels), tuple(n for n in names if n not in hidden))
        )
    return tuple(plans)
