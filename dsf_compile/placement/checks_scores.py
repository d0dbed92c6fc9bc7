"""The checks of what a Placement ranks by: its score coordinates against the fleet's scores.

Pure. A coordinate naming no built-in prioritizer or no published score is an error (OCM
would score every cluster 0 for it); a score of an Inactive scorer, or one masked on
clusters the Placement can select, a warning. Registered in :mod:`.checks`.
"""

from __future__ import annotations

from collections.abc import Iterator

from dsf_compile.errors import did_you_mean
from dsf_compile.inputs.placements import ScoreCoordinate
from dsf_compile.placement.check_subjects import CheckedPlacement
from dsf_compile.placement.cluster_groups import NAMED
from dsf_compile.placement.prioritizers import BUILTINS
from dsf_compile.placement.published_scores import (
    ScoreCatalog,
    coordinate_pointer,
    example_item,
    produces,
    unknown_score,
)
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem


def score_coordinates(placement: CheckedPlacement) -> Iterator[Problem]:
    """Each coordinate names a built-in prioritizer, or a published score and an item it gives."""
    located = placement.located
    configurations = located.model.spec.prioritizerPolicy.configurations
    for index, configuration in enumerate(configurations):
        found = _coordinate_problem(configuration.scoreCoordinate, placement.fleet.catalog)
        if found is not None:
            pointer, message = found
            yield located.problem((*coordinate_pointer(index), *pointer), message)


def _coordinate_problem(
    coordinate: ScoreCoordinate, catalog: ScoreCatalog
) -> tuple[Pointer, str] | None:
    """What is wrong with one coordinate (the field, under ``scoreCoordinate``, and why)."""
    if coordinate.type == "BuiltIn":
        builtin = coordinate.builtIn or ""
        if builtin in BUILTINS:
            return None
        hint = did_you_mean(builtin, tuple(BUILTINS))
        return ("builtIn",), (
            f"{builtin!r} is not a built-in prioritizer{hint}; OCM knows {', '.join(BUILTINS)}"
        )
    addon = coordinate.addOn
    if addon is None:  # refused by the model already
        return None
    published = catalog.scores.get(addon.resourceName)
    if published is None:
        if not catalog.complete:
            return None
        return ("addOn", "resourceName"), unknown_score(addon.resourceName, catalog)
    if produces(published, addon.scoreName):
        return None
    return ("addOn", "scoreName"), (
        f"scorer {published.scorer!r} never produces an item {addon.scoreName!r}: "
        f"its scoreDimensionFormat {published.dimension_format!r} gives items like "
        f"{example_item(published.dimension_format)!r}"
    )


def inactive_scorers(placement: CheckedPlacement) -> Iterator[Problem]:
    """Whatever the Placement selects, a score nobody publishes any more ranks nothing."""
    for pointer, published in placement.ranked_by:
        if published.health == "Inactive":
            yield placement.located.problem(
                pointer,
                f"scorer {published.scorer!r} is Inactive in dsf.lock.json: "
                "this score is not being published",
                "warning",
            )


def masked_scores(placement: CheckedPlacement) -> Iterator[Problem]:
    """A score the Placement ranks by, masked on some of the clusters it can select."""
    selection = placement.selection
    if selection is None or not selection.clusters:
        return
    groups = placement.fleet.groups
    for pointer, published in placement.ranked_by:
        count, names = groups.masked(selection.grouping, selection.selected, published.score_name)
        if not count:
            continue
        shown = ", ".join(names) + (f" and {count - NAMED} more" if count > NAMED else "")
        yield placement.located.problem(
            pointer,
            f"score {published.score_name!r} is masked on {count} of the "
            f"{selection.clusters} clusters this Placement can select ({shown}): "
            "they score 0 for it",
            "warning",
        )
