"""The AddOnPlacementScores the fleet publishes, as the placement checks read them.

Pure. :func:`score_catalog` lists every score a scorer of ``scorers/`` publishes (as far
as Git and the lockfile tell); :func:`ranked_by` the published scores a Placement ranks
by; the message helpers word a score nobody publishes the same way for a Placement and
for a PlacementOptimization.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import field

from dsf_compile.errors import did_you_mean
from dsf_compile.inputs.located import Located
from dsf_compile.inputs.placements import Placement
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.validate import Inputs
from dsf_compile.resolve.summaries import Resolutions
from dsf_compile.sync.lock import Lockfile
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.records import frozen
from dsf_contract.scores import SCORE_KIND
from dsf_contract.summary import PLACEHOLDER_RE, sanitize_score_name


@frozen
class PublishedScore:
    """An AddOnPlacementScore the fleet publishes: its object name and where it comes from."""

    resource_name: str
    score_name: str
    scorer: str
    dimension_format: str
    health: str | None


@frozen
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
        score_name = _score_name(located, resolutions)
        if not score_name:
            complete = complete and not publishes
            continue
        resource = sanitize_score_name(score_name)
        if not publishes:
            metrics_only[resource] = name
            continue
        entry = lock.scorers.get(name) if lock is not None else None
        health = entry.health if entry is not None else None
        scores[resource] = PublishedScore(
            resource, score_name, name, spec.scoreDimensionFormat, health
        )
    return ScoreCatalog(scores, complete, metrics_only)


def _score_name(located: Located[DynamicScorer], resolutions: Resolutions) -> str | None:
    """The scorer's score name: resolved (a Full scorer's from the lockfile), else its spec's."""
    resolved, _ = resolutions.of(located)
    if resolved is not None and resolved.score_name is not None:
        return resolved.score_name
    params = located.model.spec.scoring.params if located.model.spec.scoring else None
    return params.name if params else None


def coordinate_pointer(index: int) -> Pointer:
    """Where the ``index``-th prioritizer configuration of a Placement names its score."""
    return ("spec", "prioritizerPolicy", "configurations", index, "scoreCoordinate")


def ranked_by(placement: Placement, catalog: ScoreCatalog) -> list[tuple[Pointer, PublishedScore]]:
    """The published scores the Placement ranks by, each at its ``addOn.resourceName``.

    A coordinate naming a score nobody publishes, or an item its dimension format never
    gives, ranks by nothing (the score-coordinates check says so).
    """
    used: list[tuple[Pointer, PublishedScore]] = []
    for index, configuration in enumerate(placement.spec.prioritizerPolicy.configurations):
        coordinate = configuration.scoreCoordinate
        addon = coordinate.addOn
        if coordinate.type == "BuiltIn" or addon is None:
            continue
        published = catalog.scores.get(addon.resourceName)
        if published is not None and produces(published, addon.scoreName):
            used.append(((*coordinate_pointer(index), "addOn", "resourceName"), published))
    return used


def produces(published: PublishedScore, item: str) -> bool:
    """Whether the scorer of ``published`` can produce the score item ``item``."""
    return dimension_pattern(published.dimension_format).fullmatch(item) is not None


def dimension_pattern(dimension_format: str) -> re.Pattern[str]:
    """The item names a ``scoreDimensionFormat`` can produce: each ``${…}`` any string."""
    parts = PLACEHOLDER_RE.split(dimension_format)
    # split() alternates literal text and placeholder names
    return re.compile(
        "".join(re.escape(part) if index % 2 == 0 else ".*" for index, part in enumerate(parts)),
        re.DOTALL,
    )


def example_item(dimension_format: str) -> str:
    """An item the format gives, its placeholders shown as ``<name>``."""
    return PLACEHOLDER_RE.sub(lambda m: f"<{m.group(1)}>", dimension_format)


def unknown_score(resource_name: str, catalog: ScoreCatalog) -> str:
    """The message for a score nobody publishes, with the likeliest reason or a near name."""
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
    hint = did_you_mean(resource_name, sorted(catalog.scores))
    if hint:
        return message + hint
    known = ", ".join(sorted(catalog.scores)) or "none"
    return f"{message}; published: {known}"
