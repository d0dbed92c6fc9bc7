"""Scheduler results → the ``explain`` output: ``json``, ``text`` and ``markdown``.

Pure formatting: the results come from :func:`dsf_compile.placement.scheduler.schedule`,
and every format lists the Placements sorted by namespace then name.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dsf_compile.placement.scheduler import PlacementResult, format_time
from dsf_contract.escaping import json_text, markdown, terminal


def explain_document(results: Sequence[PlacementResult], at: datetime) -> dict[str, Any]:
    """The ``explain --format json`` document (``docs/placements.md``), as plain data."""
    return {
        "at": format_time(at),
        "placements": [_placement_document(r) for r in _sorted(results)],
    }


def format_json(results: Sequence[PlacementResult], at: datetime) -> str:
    """``explain --format json``: the document, indented, ending with a newline."""
    return json_text(json.dumps(explain_document(results, at), indent=2, ensure_ascii=False)) + "\n"


def format_text(results: Sequence[PlacementResult], at: datetime) -> str:
    """``explain --format text``: per Placement, a table of the clusters left after step 3."""
    lines = [f"at {format_time(at)}"]
    for result in _sorted(results):
        lines.append("")
        state = "" if result.simulated else " (not simulated)"
        lines.append(f"placement {result.namespace}/{result.name}{state}")
        lines.append(f"  cluster sets: {_names(result.cluster_sets)}")
        for step, removed in _filtered(result):
            if removed:
                lines.append(f"  removed by {step}: {', '.join(removed)}")
        if result.simulated and result.ranking:
            header, rows = _table(result)
            # escaped before measuring, so that the columns line up as printed
            header, rows = [terminal(c) for c in header], [[terminal(c) for c in r] for r in rows]
            widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
            for row in (header, *rows):
                cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=True)]
                lines.append(("  " + "  ".join(cells)).rstrip())
        if result.simulated:
            lines.append(
                f"  decisions: {_names(result.decisions)}; unscheduled: {result.unscheduled}"
            )
        lines.extend(f"  {line}" for line in _outcome(result))
        lines.extend(f"  warning: {warning}" for warning in result.warnings)
    # one entry per line: a line break or ESC a score name or hub condition holds is shown escaped
    return "\n".join(terminal(line) for line in lines) + "\n"


def format_markdown(results: Sequence[PlacementResult], at: datetime) -> str:
    """``explain --format markdown``: the same tables, for a pull-request comment."""
    lines = [f"Placements at `{format_time(at)}`"]
    for result in _sorted(results):
        lines.append("")
        state = "" if result.simulated else " (not simulated)"
        lines.append(f"#### `{result.namespace}/{result.name}`{state}")
        lines.append("")
        lines.append(f"Cluster sets: {markdown(_names(result.cluster_sets))}.")
        for step, removed in _filtered(result):
            if removed:
                lines.append(f"Removed by {step}: {markdown(', '.join(removed))}.")
        if result.simulated and result.ranking:
            header, rows = _table(result)
            lines.append("")
            lines.append("| " + " | ".join(markdown(cell) for cell in header) + " |")
            lines.append("|" + "---|" + "---:|" * (len(header) - 2) + ":---:|")
            lines.extend("| " + " | ".join(markdown(cell) for cell in row) + " |" for row in rows)
        if result.simulated:
            lines.append("")
            lines.append(
                f"Decisions: {markdown(_names(result.decisions))}; unscheduled: {result.unscheduled}."
            )
        outcome = _outcome(result)
        if outcome:
            lines.append("")
            lines.extend(f"- {markdown(line)}" for line in outcome)
        if result.warnings:
            lines.append("")
            lines.extend(f"- ⚠️ {markdown(warning)}" for warning in result.warnings)
    return "\n".join(lines) + "\n"


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


def _sorted(results: Sequence[PlacementResult]) -> list[PlacementResult]:
    return sorted(results, key=lambda r: (r.namespace, r.name))


def _filtered(result: PlacementResult) -> list[tuple[str, tuple[str, ...]]]:
    return [
        ("cluster sets", result.filtered_cluster_sets),
        ("predicates", result.filtered_predicates),
        ("taints", result.filtered_taints),
    ]


def _table(result: PlacementResult) -> tuple[list[str], list[list[str]]]:
    """A header and one row per cluster, best first: each cell is ``score×weight``."""
    header = ["cluster", *(f"{p.name} ×{p.weight}" for p in result.prioritizers)]
    header += ["total", "selected"]
    chosen = set(result.decisions)
    rows = [
        [
            name,
            *(f"{p.scores[name]}×{p.weight}" for p in result.prioritizers),
            str(result.totals[name]),
            "yes" if name in chosen else "",
        ]
        for name in result.ranking
    ]
    return header, rows


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


@dataclass(frozen=True)
class DecisionChange:
    """A Placement whose outcome differs between the committed ``rendered/`` and the inputs.

    Besides the decisions: each cluster's decision group (``index name``) and its margin
    over the best cluster left out, before and after.
    """

    placement: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    groups_before: Mapping[str, str] = field(default_factory=dict)
    groups_after: Mapping[str, str] = field(default_factory=dict)
    margins_before: Mapping[str, int] = field(default_factory=dict)
    margins_after: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def between(
        cls, placement: str, old: PlacementResult | None, new: PlacementResult | None
    ) -> DecisionChange:
        """The change from ``old`` to ``new`` (None: the Placement is missing on that side)."""
        return cls(
            placement,
            old.decisions if old else (),
            new.decisions if new else (),
            _groups_of(old),
            _groups_of(new),
            dict(old.margins or {}) if old else {},
            dict(new.margins or {}) if new else {},
        )

    @property
    def changed(self) -> bool:
        """Whether anything a reviewer should see moved."""
        return bool(self.before != self.after or self.moves() or self.margin_changes())

    def moves(self) -> list[str]:
        """``worker02 moves from group 0 (unnamed) to group 1 canary``, for clusters kept."""
        return [
            f"{name} moves from group {self.groups_before[name]} to group {self.groups_after[name]}"
            for name in sorted(set(self.groups_before) & set(self.groups_after))
            if self.groups_before[name] != self.groups_after[name]
        ]

    def margin_changes(self) -> list[str]:
        """``worker02 now wins by 3 instead of 40``, for clusters decided on both sides."""
        return [
            f"{name} now wins by {self.margins_after[name]} instead of {self.margins_before[name]}"
            for name in self.after
            if name in self.margins_before
            and name in self.margins_after
            and self.margins_before[name] != self.margins_after[name]
        ]


def _groups_of(result: PlacementResult | None) -> dict[str, str]:
    if result is None:
        return {}
    return {
        cluster: f"{group.index} {group.name or '(unnamed)'}"
        for group in result.decision_groups
        for cluster in group.clusters
    }


def format_decision_changes(changes: Sequence[DecisionChange], style: str) -> str:
    """``placement NS/NAME: a, b -> b, c`` lines (group moves and margins indented below),
    or a Markdown table for a pull request."""
    if style == "markdown":
        if not changes:
            return "\n### Placement decisions\n\nNo Placement changes its decisions.\n"
        rows = "".join(
            f"| {markdown(c.placement)} | {markdown(_names(c.before))} | {markdown(_names(c.after))} "
            f"| {markdown('; '.join(c.moves() + c.margin_changes()))} |\n"
            for c in changes
        )
        return (
            "\n### Placement decisions\n\n| placement | before | after | groups and margins |\n"
            "| --- | --- | --- | --- |\n" + rows
        )
    return "".join(
        terminal(f"placement {c.placement}: {_names(c.before)} -> {_names(c.after)}")
        + "\n"
        + "".join(f"  {terminal(line)}\n" for line in c.moves() + c.margin_changes())
        for c in changes
    )
