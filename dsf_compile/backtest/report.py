"""The replay summed up per Placement (one data structure), and its reporters by format.

:func:`summarize` turns a :class:`~dsf_compile.backtest.replay.Track` into a
:class:`PlacementReport`; :func:`format_text`, :func:`format_markdown` (a summary table
and a Mermaid ``gantt`` per Placement) and :func:`report_document` (JSON) print a
:class:`Report`; the reporter of ``--format`` (:mod:`dsf_compile.commands.reporters`)
chooses which.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from dsf_compile.backtest.fast_plan import StepRecord
from dsf_compile.backtest.replay import Track
from dsf_compile.placement.state import format_time
from dsf_contract.escaping import markdown, terminal

#: Clusters a gantt chart shows at most (the most selected first).
GANTT_CLUSTERS = 20
#: Bars a gantt chart holds at most: a comment stays readable (and under GitHub's size).
GANTT_BARS = 400
_DAY = 86_400


@dataclass(frozen=True)
class Window:
    """The replayed window: step times in seconds since the epoch."""

    start: int
    end: int
    step: int
    count: int
    #: The first step at or after the history's first sample: the steps before it replay
    #: no score at all, and are left out of every rate (a window wider than the history).
    first: int = 0

    def at(self, step: int) -> str:
        """The RFC 3339 time of ``step``."""
        return format_time(_utc(self.start + step * self.step))

    @property
    def days(self) -> float:
        """The days the rates are over: from the first covered step to ``--to``."""
        if self.first >= self.count:
            return 0.0
        return (self.end - self.start - self.first * self.step) / _DAY


@dataclass(frozen=True)
class Totals:
    """What ``--steady`` and ``--baseline`` compare: changes, churn, meanLoss."""

    changes: int
    churn: int
    mean_loss: float

    def document(self) -> dict[str, Any]:
        """As the JSON writes it."""
        return {"changes": self.changes, "churn": self.churn, "meanLoss": self.mean_loss}


@dataclass(frozen=True)
class PlacementReport:
    """One reported Placement over the window."""

    namespace: str
    name: str
    totals: Totals
    changes_per_day: float
    selected: Mapping[str, float]
    #: (step, decisions, added, removed): step 0, then each change.
    timeline: tuple[tuple[int, tuple[str, ...], tuple[str, ...], tuple[str, ...]], ...]
    min_margin: tuple[int, int] | None
    expired_steps: int
    warnings: tuple[str, ...]
    sweep: tuple[tuple[int, Totals], ...] = ()
    baseline: Totals | None = None

    @property
    def key(self) -> str:
        """``NAMESPACE/NAME``."""
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Report:
    """The whole run."""

    window: Window
    source: str
    notes: tuple[str, ...]
    placements: tuple[PlacementReport, ...]
    steady: tuple[int, ...] = ()
    baseline: bool = False


def summarize(track: Track, window: Window) -> PlacementReport:
    """A Placement's records summed up, from the first step the history covers."""
    records = track.records[window.first :]
    meta = track.placement.metadata
    timeline, churn = _timeline(records, window.first)
    counts: dict[str, int] = {}
    for record in records:
        for cluster in record.decisions:
            counts[cluster] = counts.get(cluster, 0) + 1
    steps = max(len(records), 1)
    margins = [(r.margin, k) for k, r in enumerate(records, window.first) if r.margin is not None]
    changes = len(timeline) - 1 if timeline else 0
    return PlacementReport(
        namespace=meta.namespace,
        name=meta.name,
        totals=Totals(changes, churn, round(sum(r.loss for r in records) / steps, 4)),
        changes_per_day=round(changes / window.days, 4) if window.days > 0 else 0.0,
        selected={c: round(n / steps, 4) for c, n in sorted(counts.items())},
        timeline=tuple(timeline),
        min_margin=min(margins) if margins else None,
        expired_steps=sum(1 for r in records if r.expired),
        warnings=tuple(sorted(track.warnings)),
    )


def totals_of(track: Track, window: Window) -> Totals:
    """Only changes, churn and meanLoss (what a ``--steady`` replay reports)."""
    return summarize(track, window).totals


def _timeline(
    records: Sequence[StepRecord], first: int
) -> tuple[list[tuple[int, tuple[str, ...], tuple[str, ...], tuple[str, ...]]], int]:
    out: list[tuple[int, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = []
    churn = 0
    previous: tuple[str, ...] | None = None
    for step, record in enumerate(records, first):
        now = record.decisions
        if previous is None:
            out.append((step, now, now, ()))
        elif now != previous:
            added = tuple(sorted(set(now) - set(previous)))
            removed = tuple(sorted(set(previous) - set(now)))
            churn += len(added) + len(removed)
            out.append((step, now, added, removed))
        previous = now
    return out, churn


# ------------------------------------------------------------------ json


def report_document(report: Report) -> dict[str, Any]:
    """The ``--format json`` document (``docs/backtest.md``)."""
    window = report.window
    return {
        "from": window.at(0) if window.count else format_time(_utc(window.start)),
        "to": format_time(_utc(window.end)),
        "step": duration_text(window.step),
        "steps": window.count,
        "source": report.source,
        "notes": list(report.notes),
        "placements": [_placement_document(p, report) for p in report.placements],
    }


def _utc(seconds: int) -> datetime:
    from datetime import UTC

    return datetime.fromtimestamp(seconds, UTC)


def _placement_document(found: PlacementReport, report: Report) -> dict[str, Any]:
    window = report.window
    document: dict[str, Any] = {
        "namespace": found.namespace,
        "name": found.name,
        "changes": found.totals.changes,
        "changesPerDay": found.changes_per_day,
        "churn": found.totals.churn,
        "selected": dict(found.selected),
        "timeline": [
            {
                "at": window.at(step),
                "decisions": list(decisions),
                "added": list(added),
                "removed": list(removed),
            }
            for step, decisions, added, removed in found.timeline
        ],
        "minMargin": (
            None
            if found.min_margin is None
            else {"at": window.at(found.min_margin[1]), "value": found.min_margin[0]}
        ),
        "expiredSteps": found.expired_steps,
        "meanLoss": found.totals.mean_loss,
    }
    if report.steady:
        document["sweep"] = [{"steady": w, **t.document()} for w, t in found.sweep]
    if report.baseline:
        document["baseline"] = None if found.baseline is None else found.baseline.document()
    document["warnings"] = list(found.warnings)
    return document


# ------------------------------------------------------------------ text


def format_text(report: Report) -> str:
    """``--format text``: a table per Placement, then its timeline."""
    window = report.window
    lines = [
        f"backtest {window.at(0) if window.count else ''} .. {format_time(_utc(window.end))}, "
        f"step {duration_text(window.step)}, {window.count} steps, from {report.source}"
    ]
    lines += [f"note: {note}" for note in report.notes]
    for found in report.placements:
        lines += ["", f"placement {found.key}"]
        lines += [f"  {label:<14} {value}" for label, value in _summary_cells(found, window)]
        for weight, totals in found.sweep:
            lines.append(
                f"  steady {weight:>3}:    changes {totals.changes}, churn {totals.churn}, "
                f"meanLoss {totals.mean_loss}"
            )
        for step, decisions, added, removed in found.timeline:
            change = " ".join([*(f"+{c}" for c in added), *(f"-{c}" for c in removed)])
            lines.append(f"  {window.at(step)}  {_names(decisions)}  {change}".rstrip())
        lines += [f"  warning: {w}" for w in found.warnings]
    return "\n".join(terminal(line) for line in lines) + "\n"


def _summary_cells(found: PlacementReport, window: Window) -> list[tuple[str, str]]:
    margin = (
        "none left out"
        if found.min_margin is None
        else f"{found.min_margin[0]} at {window.at(found.min_margin[1])}"
    )
    base = found.baseline
    return [
        ("changes", _moved(base.changes if base else None, found.totals.changes)),
        ("changes/day", str(found.changes_per_day)),
        ("churn", _moved(base.churn if base else None, found.totals.churn)),
        ("meanLoss", _moved(base.mean_loss if base else None, found.totals.mean_loss)),
        ("minMargin", margin),
        ("expiredSteps", str(found.expired_steps)),
        ("selected", ", ".join(f"{c} {v}" for c, v in _most_selected(found)) or "none"),
    ]


def _moved(before: float | None, after: float) -> str:
    return str(after) if before is None else f"{before} → {after}"


def _most_selected(found: PlacementReport) -> list[tuple[str, float]]:
    return sorted(found.selected.items(), key=lambda item: (-item[1], item[0]))


def _names(names: Sequence[str]) -> str:
    return ", ".join(names) if names else "none"


# ------------------------------------------------------------------ markdown


def format_markdown(report: Report) -> str:
    """``--format markdown``: a summary table, then a Mermaid gantt chart per Placement."""
    window = report.window
    lines = [
        "### Placements over the score history",
        "",
        f"`{window.at(0) if window.count else ''}` to `{format_time(_utc(window.end))}`, "
        f"step {duration_text(window.step)}, {window.count} steps.",
        "",
        "| Placement | changes | changes/day | churn | meanLoss | minMargin | expired steps |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for found in report.placements:
        base = found.baseline
        margin = "—" if found.min_margin is None else str(found.min_margin[0])
        cells = [
            f"`{markdown(found.key)}`",
            _moved(base.changes if base else None, found.totals.changes),
            str(found.changes_per_day),
            _moved(base.churn if base else None, found.totals.churn),
            _moved(base.mean_loss if base else None, found.totals.mean_loss),
            margin,
            str(found.expired_steps),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if report.steady:
        lines += [
            "",
            "With every Placement's `Steady` weight set to W: changes (churn, meanLoss).",
            "",
        ]
        lines += ["| Placement | " + " | ".join(f"Steady {w}" for w in report.steady) + " |"]
        lines.append("| --- |" + " ---: |" * len(report.steady))
        for found in report.placements:
            cells = [f"{t.changes} ({t.churn}, loss {t.mean_loss})" for _, t in found.sweep]
            lines.append(f"| `{markdown(found.key)}` | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {markdown(note)}" for note in report.notes)]
    for found in report.placements:
        lines += ["", f"#### `{markdown(found.key)}`", "", *gantt(found, window)]
        lines += [f"- ⚠️ {markdown(w)}" for w in found.warnings]
    return "\n".join(lines) + "\n"


def gantt(found: PlacementReport, window: Window) -> list[str]:
    """A Mermaid ``gantt`` chart of when each cluster was decided (most selected first)."""
    shown = [c for c, _ in _most_selected(found)][:GANTT_CLUSTERS]
    lines = [
        "```mermaid",
        "gantt",
        f"    title {_mermaid_text(found.key)}",
        "    dateFormat X",
        "    axisFormat %m-%d %H:%M",
    ]
    bars = 0
    for cluster in shown:
        lines.append(f"    section {_mermaid_text(cluster)}")
        for start, end in _spans(found, cluster, window):
            if bars == GANTT_BARS:
                break
            bars += 1
            lines.append(f"    decided :b{bars}, {start}, {end}")
    lines.append("```")
    if len(found.selected) > len(shown) or bars == GANTT_BARS:
        lines.append("")
        lines.append(f"_The chart shows at most {GANTT_CLUSTERS} clusters and {GANTT_BARS} spans._")
    return lines


def _spans(found: PlacementReport, cluster: str, window: Window) -> list[tuple[int, int]]:
    """The (start, end) seconds of each run of steps in which ``cluster`` was decided."""
    spans: list[tuple[int, int]] = []
    started: int | None = None
    for step, decisions, _, _ in found.timeline:
        moment = window.start + step * window.step
        if cluster in decisions and started is None:
            started = moment
        elif cluster not in decisions and started is not None:
            spans.append((started, moment))
            started = None
    if started is not None:
        last = window.start + (window.count - 1) * window.step
        spans.append((started, max(last + window.step if last < window.end else last, started + 1)))
    return spans


def _mermaid_text(text: str) -> str:
    """A title or section name Mermaid reads as plain text (no ``:``, ``#``, ``;``, line breaks)."""
    return "".join(c if c.isalnum() or c in "-_./ " else "_" for c in text)[:200]


def duration_text(seconds: int) -> str:
    """``300`` → ``5m``: the largest unit that divides it."""
    for unit, size in (("d", _DAY), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"
