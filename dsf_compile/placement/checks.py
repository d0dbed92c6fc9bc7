"""Placements against the fleet's scores (``docs/placements.md``).

Pure. The errors say that a Placement ranks by something no scorer publishes (OCM would
silently score every cluster 0 for it); the warnings say that it will not select what
its author probably expects (an Inactive scorer, a masked score, no cluster set bound,
no cluster selected). Both are located at the Placement's field.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from fnmatch import fnmatchcase
from typing import Any

from dsf_compile.inputs.located import Located
from dsf_compile.inputs.placements import CLUSTERSET_LABEL, Placement
from dsf_compile.inputs.selectors import is_glob
from dsf_compile.inputs.validate import Inputs
from dsf_compile.placement.cel import (
    CelEvaluationError,
    CelExpression,
    bad_constant_patterns,
    evaluate,
    is_constant,
)
from dsf_compile.placement.cel_cost import LIMIT_MESSAGE, PER_CALL_LIMIT
from dsf_compile.placement.prioritizers import BUILTINS
from dsf_compile.placement.scheduler import (
    Cluster,
    ScoreIndex,
    cel_view,
    cluster_from_inventory,
    compile_cached,
    schedule,
)
from dsf_compile.resolve.summaries import Resolutions
from dsf_compile.sync.lock import Lockfile
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem
from dsf_contract.scores import SCORE_KIND
from dsf_contract.summary import PLACEHOLDER_RE, sanitize_score_name

#: How many cluster names a warning lists.
_NAMED = 5


@dataclass(frozen=True)
class PublishedScore:
    """An AddOnPlacementScore the fleet publishes: its object name and where it comes from."""

    resource_name: str
    score_name: str
    scorer: str
    dimension_format: str
    health: str | None


@dataclass(frozen=True)
class ScoreCatalog:
    """Every published AddOnPlacementScore by name; ``complete`` when every name is known.

    A Full scorer whose score name only its ``/config`` knows, without a lock entry,
    leaves the catalog incomplete: an unknown name might be that one, so it is not an
    error then.
    """

    scores: Mapping[str, PublishedScore]
    complete: bool
    #: AddOnPlacementScore name → the scorer whose score it would be, for scorers with
    #: ``scoreDestination: None`` (their scores go to metrics only).
    metrics_only: Mapping[str, str] = field(default_factory=dict)


def score_catalog(
    inputs: Inputs, lock: Lockfile | None, resolutions: Resolutions | None = None
) -> ScoreCatalog:
    """The AddOnPlacementScores the scorers of ``inputs`` publish, as far as Git and the lockfile tell."""
    resolutions = resolutions or Resolutions(lock)
    scores: dict[str, PublishedScore] = {}
    metrics_only: dict[str, str] = {}
    complete = True
    for located in inputs.scorers:
        spec = located.model.spec
        publishes = spec.scoreDestination == SCORE_KIND
        name = located.model.metadata.name
        entry = lock.scorers.get(name) if lock is not None else None
        resolved, _ = resolutions.of(located)
        score_name = resolved.score_name if resolved is not None else None
        if score_name is None and spec.scoring and spec.scoring.params:
            score_name = spec.scoring.params.name
        if not score_name:
            complete = complete and not publishes
            continue
        resource = sanitize_score_name(score_name)
        if not publishes:
            metrics_only[resource] = name
            continue
        health = entry.health if entry is not None else None
        scores[resource] = PublishedScore(
            resource, score_name, name, spec.scoreDimensionFormat, health
        )
    return ScoreCatalog(scores, complete, metrics_only)


def inventory_clusters(inputs: Inputs) -> tuple[Cluster, ...]:
    """The inventory as the scheduler sees it."""
    return tuple(
        cluster_from_inventory(
            c.model.metadata.name,
            c.model.metadata.labels,
            c.model.spec,
            c.model.status,
            deleting=c.model.metadata.deletionTimestamp is not None,
            view=cel_view(_document_at(c.document.data, c.base)),
        )
        for c in inputs.clusters
    )


def _document_at(data: object, pointer: Pointer) -> dict[str, Any]:
    for part in pointer:
        data = data[part] if isinstance(data, dict | list) else None  # type: ignore[index]
    return data if isinstance(data, dict) else {}


def dimension_pattern(dimension_format: str) -> re.Pattern[str]:
    """The item names a ``scoreDimensionFormat`` can produce: each ``${…}`` any string."""
    parts = PLACEHOLDER_RE.split(dimension_format)
    # split() alternates literal text and placeholder names
    return re.compile(
        "".join(re.escape(part) if index % 2 == 0 else ".*" for index, part in enumerate(parts)),
        re.DOTALL,
    )


def check_placements(
    inputs: Inputs, catalog: ScoreCatalog, at: datetime
) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` of every Placement of ``inputs`` against the published scores."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    bindings = [b.model for b in inputs.bindings]
    bound = {b.metadata.namespace for b in bindings}
    groups = _ClusterGroups(inputs)
    # one index for every Placement: each cluster's CEL context is built once, and an
    # expression's result per cluster shared (validate gives no scores: every one absent)
    index = ScoreIndex.of(None)
    for located in inputs.placements:
        found_errors, used = _check_coordinates(located, catalog)
        errors += found_errors
        errors += _check_tolerations(located)
        found_errors, found_warnings = _check_cel(located, catalog, groups.clusters)
        errors += found_errors
        warnings += found_warnings
        # whatever the Placement selects, a score nobody publishes any more ranks nothing
        warnings += [
            located.problem(
                pointer,
                f"scorer {published.scorer!r} is Inactive in dsf.lock.json: "
                "this score is not being published",
                "warning",
            )
            for pointer, published in used
            if published.health == "Inactive"
        ]
        placement = located.model
        if placement.metadata.namespace not in bound:
            warnings.append(
                located.problem(
                    ("metadata", "namespace"),
                    f"no ManagedClusterSetBinding in placements/ binds a cluster set to namespace "
                    f"{placement.metadata.namespace!r}: on a hub without one it selects no cluster",
                    "warning",
                )
            )
            continue
        grouping = groups.for_placement(placement)
        representatives = [g.representative for g in grouping.groups]
        result = schedule(placement, representatives, bindings, index, (), at)
        misconfigured = any(
            c.type == "PlacementMisconfigured" and c.status == "True" for c in result.conditions
        )
        if not result.simulated or misconfigured:  # reported above as errors
            continue
        chosen = set(result.ranking)
        selected = {i for i, g in enumerate(grouping.groups) if g.representative.name in chosen}
        selectable = sum(len(grouping.groups[i].members) for i in selected)
        if not selectable:
            warnings.append(
                located.problem(("spec",), "selects no cluster of the inventory", "warning")
            )
            continue
        for pointer, published in used:
            count, names = groups.masked(grouping, selected, published.score_name)
            if count:
                shown = ", ".join(names) + (f" and {count - _NAMED} more" if count > _NAMED else "")
                warnings.append(
                    located.problem(
                        pointer,
                        f"score {published.score_name!r} is masked on {count} of the "
                        f"{selectable} clusters this Placement can select ({shown}): "
                        "they score 0 for it",
                        "warning",
                    )
                )
    return errors, warnings


@dataclass(frozen=True)
class _Group:
    """Clusters a Placement cannot tell apart: what decides whether it selects one decides for all."""

    representative: Cluster
    members: tuple[str, ...]  # sorted
    masks: tuple[int, ...]  # the broad masks (by index) that select these clusters


@dataclass(frozen=True)
class _Grouping:
    groups: list[_Group]
    group_of: dict[str, int]  # cluster name -> its group's index


class _ClusterGroups:
    """The inventory in groups of clusters that look alike to a Placement, for ``validate``.

    Scheduling every Placement against every cluster is Placements × clusters (10⁷ for
    1,000 × 10,000). Whether a Placement can select a cluster depends only on the labels
    and claims its cluster sets and selectors name, on the cluster's taints and on the
    rest of what the scheduler knows of it but its name and resources (which only rank).
    Clusters equal in all that, and selected by the same broad masks (a name glob or a
    selector), form one group, scheduled once through one representative; Placements that
    name the same keys share the grouping. A mask naming one cluster (upstream's form, as
    many as the clusters) is looked up per score instead of splitting the groups. The
    work is about Placements × (groups + such masks per score) plus clusters × distinct
    key sets. A Placement with a CEL expression (which may read anything) gets one group
    per cluster.
    """

    def __init__(self, inputs: Inputs) -> None:
        self.clusters = inventory_clusters(inputs)
        self.masks = inputs.masks
        selecting: dict[str, list[int]] = {}
        # the one-cluster masks: clusters by score name, and (score name glob, cluster) pairs
        self.narrow_by_score: dict[str, list[str]] = {}
        self.narrow_globs: list[tuple[str, str]] = []
        for i, mask in enumerate(self.masks):
            found = [c.model.metadata.name for c in inputs.cluster_lookup.selected_by(mask)]
            if mask.clusterName is not None and not is_glob(mask.clusterName):
                if is_glob(mask.scoreName):
                    self.narrow_globs += [(mask.scoreName, name) for name in found]
                else:
                    self.narrow_by_score.setdefault(mask.scoreName, []).extend(found)
                continue
            for name in found:
                selecting.setdefault(name, []).append(i)
        self.mask_sets = [tuple(selecting.get(c.name, ())) for c in self.clusters]
        self._groupings: dict[tuple[frozenset[str], frozenset[str]] | None, _Grouping] = {}
        self._narrowly_masked: dict[str, list[str]] = {}

    def for_placement(self, placement: Placement) -> _Grouping:
        keys = _keys_read(placement)
        if keys not in self._groupings:
            self._groupings[keys] = self._group(keys)
        return self._groupings[keys]

    def _group(self, keys: tuple[frozenset[str], frozenset[str]] | None) -> _Grouping:
        found: dict[object, list[int]] = {}
        for index, cluster in enumerate(self.clusters):
            signature = (
                (index,) if keys is None else (_signature(cluster, *keys), self.mask_sets[index])
            )
            found.setdefault(signature, []).append(index)
        groups = [
            _Group(
                self.clusters[indexes[0]],
                tuple(sorted(self.clusters[i].name for i in indexes)),
                self.mask_sets[indexes[0]],
            )
            for indexes in found.values()
        ]
        group_of = {name: i for i, g in enumerate(groups) for name in g.members}
        return _Grouping(groups, group_of)

    def masked(
        self, grouping: _Grouping, selected: set[int], score_name: str
    ) -> tuple[int, list[str]]:
        """How many clusters of the ``selected`` groups a mask keeps ``score_name`` off,
        and the first names of them (sorted)."""
        broad = {
            i
            for i in selected
            if any(
                fnmatchcase(score_name, self.masks[m].scoreName) for m in grouping.groups[i].masks
            )
        }
        count = sum(len(grouping.groups[i].members) for i in broad)
        # the first names of every group hold the first names of all of them
        names = [n for i in broad for n in grouping.groups[i].members[:_NAMED]]
        for name in self._narrow_for(score_name):
            group = grouping.group_of[name]
            if group in selected and group not in broad:
                count += 1
                names.append(name)
        return count, sorted(names)[:_NAMED]

    def _narrow_for(self, score_name: str) -> list[str]:
        """The clusters a one-cluster mask keeps ``score_name`` off (once per score)."""
        if score_name not in self._narrowly_masked:
            self._narrowly_masked[score_name] = sorted(
                {
                    *self.narrow_by_score.get(score_name, ()),
                    *(n for pattern, n in self.narrow_globs if fnmatchcase(score_name, pattern)),
                }
            )
        return self._narrowly_masked[score_name]


def _keys_read(placement: Placement) -> tuple[frozenset[str], frozenset[str]] | None:
    """The label and claim keys the Placement's cluster sets and predicates read; None for CEL."""
    labels, claims = {CLUSTERSET_LABEL}, set()
    for predicate in placement.spec.predicates:
        selector = predicate.requiredClusterSelector
        if selector is None:
            continue
        if selector.celSelector is not None and selector.celSelector.celExpressions:
            return None
        if selector.labelSelector is not None:
            labels |= set(selector.labelSelector.matchLabels or {})
            labels |= {e.key for e in selector.labelSelector.matchExpressions or ()}
        if selector.claimSelector is not None:
            claims |= {e.key for e in selector.claimSelector.matchExpressions or ()}
    return frozenset(labels), frozenset(claims)


#: What the scheduler knows of a cluster that only ranks it, or that only CEL reads (a
#: Placement with CEL gets a group per cluster): never part of a group's signature.
_RANKING_ONLY = frozenset({"name", "labels", "claims", "allocatable", "capacity", "view"})


def _signature(cluster: Cluster, labels: frozenset[str], claims: frozenset[str]) -> object:
    return (
        tuple(sorted((k, v) for k, v in cluster.labels.items() if k in labels)),
        tuple(sorted((k, v) for k, v in cluster.claims.items() if k in claims)),
        # every other field, whatever a later scheduler adds (a deletion time, ...)
        tuple(
            repr(getattr(cluster, f.name)) for f in fields(cluster) if f.name not in _RANKING_ONLY
        ),
    )


def _check_coordinates(
    located: Located[Placement], catalog: ScoreCatalog
) -> tuple[list[Problem], list[tuple[Pointer, PublishedScore]]]:
    errors: list[Problem] = []
    used: list[tuple[Pointer, PublishedScore]] = []
    configurations = located.model.spec.prioritizerPolicy.configurations
    for index, configuration in enumerate(configurations):
        coordinate = configuration.scoreCoordinate
        base: Pointer = ("spec", "prioritizerPolicy", "configurations", index, "scoreCoordinate")
        if coordinate.type == "BuiltIn":
            builtin = coordinate.builtIn or ""
            if builtin not in BUILTINS:
                errors.append(
                    located.problem(
                        (*base, "builtIn"),
                        f"{builtin!r} is not a built-in prioritizer{_did_you_mean(builtin, tuple(BUILTINS))}; "
                        f"OCM knows {', '.join(BUILTINS)}",
                    )
                )
            continue
        addon = coordinate.addOn
        if addon is None:  # refused by the model already
            continue
        published = catalog.scores.get(addon.resourceName)
        if published is None:
            if catalog.complete:
                errors.append(
                    located.problem(
                        (*base, "addOn", "resourceName"),
                        _unknown_score(addon.resourceName, catalog),
                    )
                )
            continue
        if not dimension_pattern(published.dimension_format).fullmatch(addon.scoreName):
            errors.append(
                located.problem(
                    (*base, "addOn", "scoreName"),
                    f"scorer {published.scorer!r} never produces an item {addon.scoreName!r}: "
                    f"its scoreDimensionFormat {published.dimension_format!r} gives items like "
                    f"{_example_item(published.dimension_format)!r}",
                )
            )
            continue
        used.append(((*base, "addOn", "resourceName"), published))
    return errors, used


def _check_tolerations(located: Located[Placement]) -> list[Problem]:
    """Tolerations the CRD accepts and OCM's TaintToleration plugin calls misconfigured."""
    errors = []
    for index, toleration in enumerate(located.model.spec.tolerations):
        base: Pointer = ("spec", "tolerations", index)
        if not toleration.key and toleration.operator != "Exists":
            errors.append(
                located.problem(
                    (*base, "operator"),
                    "a toleration without a key must use operator Exists "
                    "(OCM reports the Placement misconfigured)",
                )
            )
        elif toleration.operator == "Exists" and toleration.value:
            errors.append(
                located.problem(
                    (*base, "value"),
                    "a toleration with operator Exists takes no value "
                    "(OCM reports the Placement misconfigured)",
                )
            )
    return errors


_SCORES_CALL_RE = re.compile(r"""\.\s*scores\s*\(\s*(?:'([^'\\]*)'|"([^"\\]*)")\s*\)""")


def _check_cel(
    located: Located[Placement], catalog: ScoreCatalog, clusters: Sequence[Cluster]
) -> tuple[list[Problem], list[Problem]]:
    """CEL expressions that do not compile, cannot be boolean, or read unpublished scores."""
    errors: list[Problem] = []
    warnings: list[Problem] = []
    for p_index, predicate in enumerate(located.model.spec.predicates):
        selector = predicate.requiredClusterSelector
        cel_selector = selector.celSelector if selector is not None else None
        sources = (cel_selector.celExpressions or ()) if cel_selector is not None else ()
        for e_index, source in enumerate(sources):
            pointer: Pointer = (
                "spec", "predicates", p_index, "requiredClusterSelector", "celSelector",
                "celExpressions", e_index,
            )  # fmt: skip
            compiled = compile_cached(source)
            if compiled.error is not None:
                errors.append(
                    located.problem(
                        pointer,
                        f"{compiled.error.splitlines()[0]} (OCM reports the Placement misconfigured)",
                    )
                )
                continue
            if compiled.unsupported is not None:
                warnings.append(
                    located.problem(pointer, f"not checked: {compiled.unsupported}", "warning")
                )
                continue
            for match in _SCORES_CALL_RE.finditer(source):
                name = match.group(1) if match.group(1) is not None else match.group(2)
                if name not in catalog.scores and catalog.complete:
                    errors.append(located.problem(pointer, _unknown_score(name, catalog)))
            for problem in _evaluation_problems(compiled, clusters, located, pointer):
                (errors if problem.severity == "error" else warnings).append(problem)
    return errors, warnings


def _evaluation_problems(
    compiled: CelExpression,
    clusters: Sequence[Cluster],
    located: Located[Placement],
    pointer: Pointer,
) -> list[Problem]:
    """What evaluating ``compiled`` tells: a bad constant ``matches`` pattern, a result
    that is not a bool, a cost past OCM's limit (an error when it is past whatever the
    cluster, else a warning naming the first cluster)."""
    found = [
        located.problem(
            pointer,
            f"matches: {problem} (OCM evaluates the pattern on each cluster and fails "
            "the expression there: every cluster that reaches it is dropped)",
        )
        for function, problem in bad_constant_patterns(compiled)
        if function == "matches"
    ]
    kind, over_limit = _tried(compiled, clusters)
    if kind is not None:
        message = f"evaluates to {kind}, not a bool: every cluster would fail it"
        found.append(located.problem(pointer, message))
    elif over_limit is not None:
        severity = "error" if is_constant(compiled) else "warning"
        found.append(located.problem(pointer, _over_limit(compiled, over_limit), severity))
    return found


def _over_limit(compiled: CelExpression, cluster: str) -> str:
    if is_constant(compiled):
        return (
            f"costs more than OCM's CEL cost limit ({PER_CALL_LIMIT}), whatever the cluster: "
            f"OCM fails it on every cluster ({LIMIT_MESSAGE})"
        )
    return (
        f"costs more than OCM's CEL cost limit ({PER_CALL_LIMIT}) on cluster {cluster!r}: "
        f"OCM drops such a cluster ({LIMIT_MESSAGE})"
    )


def _tried(compiled: CelExpression, clusters: Sequence[Cluster]) -> tuple[str | None, str | None]:
    """The type an expression gives instead of a bool, tried on the inventory (CEL's result
    type does not depend on the cluster; None when it gives a bool or only errors), and
    the first cluster on which it passes OCM's cost limit (trying stops there)."""
    for cluster in clusters[:_TRIED_CLUSTERS]:
        try:
            value = evaluate(compiled, cluster.cel_view(), lambda _c, _n: [])
        except CelEvaluationError as err:
            if str(err) == LIMIT_MESSAGE:
                return None, cluster.name
            continue
        return (None if isinstance(value, bool) else _CEL_TYPES.get(type(value), "dyn")), None
    return None, None


#: How many inventory clusters an expression is tried on to learn its result type.
_TRIED_CLUSTERS = 64
_CEL_TYPES = {int: "int", float: "double", str: "string", bytes: "bytes", list: "list"}
_CEL_TYPES.update({dict: "map", type(None): "null_type"})


def _unknown_score(resource_name: str, catalog: ScoreCatalog) -> str:
    message = (
        f"no scorer publishes an AddOnPlacementScore named {resource_name!r} "
        "(OCM would score every cluster 0 for it)"
    )
    sanitized = sanitize_score_name(resource_name)
    if sanitized in catalog.metrics_only:
        return (
            f"{message}: scorer {catalog.metrics_only[sanitized]!r} has scoreDestination None, "
            "so its scores go to metrics only; set scoreDestination: AddOnPlacementScore "
            "to publish them"
        )
    if sanitized != resource_name and sanitized in catalog.scores:
        return (
            f"{message}; AddOnPlacementScore names are sanitized score names: "
            f"score {catalog.scores[sanitized].score_name!r} is published as {sanitized!r}"
        )
    hint = _did_you_mean(resource_name, sorted(catalog.scores))
    if hint:
        return message + hint
    known = ", ".join(sorted(catalog.scores)) or "none"
    return f"{message}; published: {known}"


def _did_you_mean(word: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _example_item(dimension_format: str) -> str:
    return PLACEHOLDER_RE.sub(lambda m: f"<{m.group(1)}>", dimension_format)
