"""Scheduler results → the ``explain`` output: one :class:`Explanation`, printed per format.

Pure formatting: the results come from :func:`dsf_compile.placement.scheduler.schedule`.
:class:`Explanation` sorts them by namespace then name and builds each Placement's
:class:`PlacementRows` once; :func:`explain_text` and :func:`explain_markdown` print it,
:func:`explain_document` is the JSON document. The reporter of ``--format``
(:mod:`dsf_compile.commands.reporters`) chooses which. What ``diff`` says of a Placement whose outcome moves is in
:mod:`dsf_compile.placement.decision_changes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from dsf_compile.placement.scheduler import PlacementResult, format_time
from dsf_contract.escaping import markdown, terminal
from dsf_contract.records import frozen


@frozen
class PlacementRows:
    """One Placement as the text and Markdown reporters print it: the words of each line,
    written once, before either format escapes and lays them out."""

    title: str
    simulated: bool
    cluster_sets: str
    #: (step, the clusters it removed) for each of steps 1 to 3 that removed any.
    removed: tuple[tuple[str, str], ...]
    #: The decision table (``score×weight`` per prioritizer, best first); empty: none.
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    decisions: str
    unscheduled: int
    #: Steps 7 and 8 and the margins, one line each.
    outcome: tuple[str, ...]
    warnings: tuple[str, ...]

    @classmethod
    def of(cls, result: PlacementResult) -> PlacementRows:
        """The rows of one scheduler result."""
        header, rows = _table(result) if result.simulated and result.ranking else ((), ())
        steps = (
            ("cluster sets", result.filtered_cluster_sets),
            ("predicates", result.filtered_predicates),
            ("taints", result.filtered_taints),
        )
        return cls(
            title=f"{result.namespace}/{result.name}",
            simulated=result.simulated,
            cluster_sets=_names(result.cluster_sets),
            removed=tuple((step, ", ".join(names)) for step, names in steps if names),
            header=header,
            rows=rows,
            decisions=_names(result.decisions),
            unscheduled=result.unscheduled,
            outcome=tuple(_outcome(result)),
            warnings=result.warnings,
        )

    @property
    def state(self) -> str:
        """What the title says after the name."""
        return "" if self.simulated else " (not simulated)"


@frozen
class Explanation:
    """What every ``explain`` format prints: the results sorted by namespace then name, and
    their rows (built once, whatever the format)."""

    at: datetime
    results: tuple[PlacementResult, ...]
    placements: tuple[PlacementRows, ...]

    @classmethod
    def of(cls, results: Sequence[PlacementResult], at: datetime) -> Explanation:
        """Sort ``results`` and build their rows."""
        ordered = tuple(sorted(results, key=lambda r: (r.namespace, r.name)))
        return cls(at, ordered, tuple(PlacementRows.of(r) for r in ordered))


def explain_document(results: Sequence[PlacementResult], at: datetime) -> dict[str, Any]:
    """The ``explain --format json`` document (``docs/placements.md``), as plain data."""
    ordered = sorted(results, key=lambda r: (r.namespace, r.name))
    return {"at": format_time(at), "placements": [_placement_document(r) for r in ordered]}


def explain_text(explanation: Explanation) -> str:
    """``explain``'s text: per Placement, a table of the clusters left after step 3, columns aligned."""
    lines = [f"at {format_time(explanation.at)}"]
    for found in explanation.placements:
        lines += ["", f"placement {found.title}{found.state}"]
        lines.append(f"  cluster sets: {found.cluster_sets}")
        lines += [f"  removed by {step}: {names}" for step, names in found.removed]
        lines += _text_table(found)
        if found.simulated:
            lines.append(f"  decisions: {found.decisions}; unscheduled: {found.unscheduled}")
        lines += [f"  {line}" for line in found.outcome]
        lines += [f"  warning: {warning}" for warning in found.warnings]
    # one entry per line: a line break or ESC a score name or hub condition holds is shown escaped
    return "\n".join(terminal(line) for line in lines) + "\n"


def _text_table(found: PlacementRows) -> list[str]:
    if not found.header:
        return []
    # escaped before measuring, so that the columns line up as printed
    table = [[terminal(cell) for cell in row] for row in (found.header, *found.rows)]
    widths = [max(len(row[i]) for row in table) for i in range(len(found.header))]
    return [
        (
            "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in table
    ]


def explain_markdown(explanation: Explanation) -> str:
    """``explain --format markdown``: the same tables, for a pull-request comment."""
    lines = [f"Placements at `{format_time(explanation.at)}`"]
    for found in explanation.placements:
        lines += ["", f"#### `{found.title}`{found.state}", ""]
        lines.append(f"Cluster sets: {markdown(found.cluster_sets)}.")
        lines += [f"Removed by {step}: {markdown(names)}." for step, names in found.removed]
        lines += _markdown_table(found)
        if found.simulated:
            lines += [
                "",
                f"Decisions: {markdown(found.decisions)}; unscheduled: {found.unscheduled}.",
            ]
        lines += _markdown_list([markdown(line) for line in found.outcome])
        lines += _markdown_list([f"⚠️ {markdown(warning)}" for warning in found.warnings])
    return "\n".join(lines) + "\n"


def _markdown_table(found: PlacementRows) -> list[str]:
    if not found.header:
        return []
    return [
        "",
        "| " + " | ".join(markdown(cell) for cell in found.header) + " |",
        "|" + "---|" + "---:|" * (len(found.header) - 2) + ":---:|",
        *("| " + " | ".join(markdown(cell) for cell in row) + " |" for row in found.rows),
    ]


def _markdown_list(items: Sequence[str]) -> list[str]:
    return ["", *(f"- {item}" for item in items)] if items else []


def _placement_document(result: PlacementResult) -> dict[str, Any]:
    return {
        "namespace": result.namespace,
        "name": result.name,
        "simulated": result.simulated,
        "clusterSets": list(result.cluster_sets),
        "filtered": {
            "clusterSets": list(result.filtered_cluster_sets),
            "predicates": list(result.filtered_predicates),
            "taints": list(result.filtered_taints),
        },
        "prioritizers": [
            {"name": p.name, "weight": p.weight, "scores": dict(sorted(p.scores.items()))}
            for p in result.prioritizers
        ],
        "totals": dict(sorted(result.totals.items())),
        "decisions": list(result.decisions),
        "unscheduled": result.unscheduled,
        "decisionGroups": [
            {"groupName": g.name, "groupIndex": g.index, "clusters": list(g.clusters)}
            for g in result.decision_groups
        ],
        "placementDecisions": [
            {"name": o.name, "labels": dict(o.labels), "clusters": list(o.clusters)}
            for o in result.placement_decisions
        ],
        "conditions": [
            {"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
            for c in result.conditions
        ],
        **({} if result.margins is None else {"margins": dict(result.margins)}),
        "warnings": list(result.warnings),
    }


def _outcome(result: PlacementResult) -> list[str]:
    """Steps 7 and 8 and the margins, one line each (the same words in text and markdown)."""
    lines = [
        f"decision group {g.index} {g.name or '(unnamed)'}: {_names(g.clusters)}"
        for g in result.decision_groups
    ]
    lines += [
        f"PlacementDecision {o.name}: {_names(o.clusters)}" for o in result.placement_decisions
    ]
    # the first line: a CEL compile error goes on with cel-go's snippet (full in json)
    lines += [
        f"{c.type} {c.status} ({c.reason}): {c.message.splitlines()[0] if c.message else ''}"
        for c in result.conditions
    ]
    if result.margins:
        lines.append(
            "margins over the best cluster left out: "
            + ", ".join(f"{name} +{result.margins[name]}" for name in result.decisions)
        )
    return lines


def _table(result: PlacementResult) -> tuple[tuple[str, ...], tuple[tuple[str, ...], ...]]:
    """A header and one row per cluster, best first: each cell is ``score×weight``."""
    header = ("cluster", *(f"{p.name} ×{p.weight}" for p in result.prioritizers), "total")
    chosen = set(result.decisions)
    rows = tuple(
        (
            name,
            *(f"{p.scores[name]}×{p.weight}" for p in result.prioritizers),
            str(result.totals[name]),
            "yes" if name in chosen else "",
        )
        for name in result.ranking
    )
    return (*header, "selected"), rows


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"
