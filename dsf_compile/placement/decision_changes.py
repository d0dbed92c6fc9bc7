"""What ``diff`` says of the Placements it replays: what moves, and the evidence with it.

Pure formatting of two scheduler results per Placement (as committed in ``rendered/``, as
the inputs write it). A Placement is reported when its decisions, decision groups or
margins move, or when its replay raised a warning ``explain`` would print (scores expired
at the moment judged, a score no cluster publishes, no scores at all): decisions are never
shown without their evidence, and the warnings come before the Placement's row in every
format.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field
from datetime import datetime

from dsf_compile.placement.scheduler import PlacementResult, format_time
from dsf_contract.escaping import markdown, terminal
from dsf_contract.records import frozen

#: What a prioritizer's name starts with when it ranks by an AddOnPlacementScore.
_ADDON_PREFIX = "AddOn/"
#: Said of a Placement whose every AddOn score counts 0 while its replay warned why.
ALL_ZERO = (
    "every AddOn score it ranks by counts 0 (see the warnings): its decisions rest on the "
    "other prioritizers and on cluster names, not on its scores"
)


@frozen
class DecisionChange:
    """One replayed Placement: its outcome before and after, and the warnings of its replay.

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
    #: What the replays warned of (the change's side first, then what only the other said).
    warnings: tuple[str, ...] = ()

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
            _evidence(new, old),
        )

    @property
    def changed(self) -> bool:
        """Whether anything a reviewer should see moved."""
        return bool(self.before != self.after or self.moves() or self.margin_changes())

    @property
    def reported(self) -> bool:
        """Whether ``diff`` shows it: it moved, or its replay warned of something."""
        return self.changed or bool(self.warnings)

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

    def outcome(self) -> str:
        """``a, b -> b, c``, or ``a (unchanged)`` when only the evidence is reported."""
        if self.before == self.after and not self.changed:
            return f"{_names(self.after)} (unchanged)"
        return f"{_names(self.before)} -> {_names(self.after)}"


def _evidence(new: PlacementResult | None, old: PlacementResult | None) -> tuple[str, ...]:
    """The warnings of the replays, the side that exists after the change first; with the
    Placement's AddOn scores all counting 0, a first line saying so."""
    said: dict[str, None] = {}
    for result in (new, old):
        if result is not None:
            said.update(dict.fromkeys(result.warnings))
    shown = new if new is not None else old
    if said and shown is not None and _addon_all_zero(shown):
        return (ALL_ZERO, *said)
    return tuple(said)


def _addon_all_zero(result: PlacementResult) -> bool:
    """Whether it ranks by AddOn scores and every one counts 0 for every cluster."""
    addons = [p for p in result.prioritizers if p.name.startswith(_ADDON_PREFIX)]
    return bool(addons) and all(value == 0 for p in addons for value in p.scores.values())


def _groups_of(result: PlacementResult | None) -> dict[str, str]:
    if result is None:
        return {}
    return {
        cluster: f"{group.index} {group.name or '(unnamed)'}"
        for group in result.decision_groups
        for cluster in group.clusters
    }


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


def decision_record(change: DecisionChange) -> dict[str, object]:
    """A replayed Placement as a JSON record (``diff --format json``'s ``decisions``)."""
    return {
        "placement": change.placement,
        "before": list(change.before),
        "after": list(change.after),
        "changed": change.changed,
        "warnings": list(change.warnings),
    }


def decision_changes_text(changes: Sequence[DecisionChange]) -> str:
    """``placement NS/NAME: a, b -> b, c`` lines, each after its warnings (group moves and
    margins indented below)."""
    return "".join(_text(change) for change in changes)


def _text(change: DecisionChange) -> str:
    warned = "".join(f"  warning: {terminal(w)}\n" for w in change.warnings)
    head = f"warnings of placement {terminal(change.placement)}:\n" if warned else ""
    row = terminal(f"placement {change.placement}: {change.outcome()}") + "\n"
    below = "".join(f"  {terminal(line)}\n" for line in change.moves() + change.margin_changes())
    return head + warned + row + below


def decision_changes_markdown(changes: Sequence[DecisionChange], at: datetime | None) -> str:
    """A Markdown table for a pull request, each Placement's warnings listed before the
    table; ``at``: the moment judged."""
    moment = f"Replayed at {format_time(at)}.\n\n" if at is not None else ""
    title = f"\n### Placement decisions\n\n{moment}"
    moved = [c for c in changes if c.changed]
    if not changes:
        return f"{title}No Placement changes its decisions.\n"
    warned = "".join(
        f"- ⚠️ {markdown(c.placement)}: {markdown(w)}\n" for c in changes for w in c.warnings
    )
    count = f"{len(moved)} Placement(s) change their decisions"
    lead = f"{count}; the replay warned of what follows.\n\n{warned}\n" if warned else ""
    rows = "".join(_markdown_row(c) for c in changes)
    return (
        f"{title}{lead}| placement | before | after | groups and margins |\n"
        "| --- | --- | --- | --- |\n" + rows
    )


def _markdown_row(change: DecisionChange) -> str:
    notes = "; ".join(change.moves() + change.margin_changes())
    notes = notes or ("" if change.changed else "unchanged")
    cells = (change.placement, _names(change.before), _names(change.after), notes)
    return "| " + " | ".join(markdown(cell) for cell in cells) + " |\n"
