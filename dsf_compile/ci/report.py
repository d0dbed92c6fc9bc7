"""The report of ``dsf-compile ci``: Markdown for the job summary and the pull request's
comment, annotations for the log.

In ``fleet-repo.md``'s order: the verdict (each check, and every problem), the objects
that change and the Placements that move (``diff``'s Markdown, with the warnings of each
replay), then the backtest. Names and messages are escaped as ``diff --format markdown``
escapes them.
"""

from __future__ import annotations

from collections.abc import Sequence

from dsf_compile.ci.steps import MAX_ANNOTATIONS, Outcome
from dsf_contract.escaping import markdown

#: The hidden marker the pull request's one comment is found again by.
MARKER = "<!-- dsf-compile:report -->"
#: GitHub's limit on a comment's body, in characters.
COMMENT_LIMIT = 65_536
#: GitHub's limit on one step's job summary (1 MiB), less a margin.
SUMMARY_LIMIT = 1_000_000
#: Problems listed in the Markdown per check at the most.
MAX_LISTED = 100
_MARKS = {"passed": "✅", "failed": "❌", "skipped": "⏭️"}


def report(outcomes: Sequence[Outcome]) -> str:
    """The whole report, marker first."""
    failed = [o for o in outcomes if o.failed]
    verdict = (
        "❌ " + ", ".join(f"`{o.name}` fails" for o in failed)
        if failed
        else "✅ valid, rendered/ and schemas/ current"
    )
    parts = [MARKER, f"## dsf-compile: {verdict}\n", "| check | result |", "| --- | --- |"]
    parts += [f"| `{o.name}` | {_MARKS[o.state]} {markdown(o.line)} |" for o in outcomes]
    parts.append("")
    for outcome in outcomes:
        parts += _listed(outcome)
    text = "\n".join(parts) + "\n"
    for outcome in outcomes:
        if outcome.markdown:
            text += "\n" + outcome.markdown.rstrip("\n") + "\n"
    return text


def _listed(outcome: Outcome) -> list[str]:
    shown = [p for p in outcome.problems if p.severity in ("error", "warning")]
    if not shown:
        return []
    lines = [f"**`{outcome.name}`**\n"]
    lines += [f"- {problem.format_markdown()}" for problem in shown[:MAX_LISTED]]
    if len(shown) > MAX_LISTED:
        lines.append(f"- … and {len(shown) - MAX_LISTED} more (the log's annotations)")
    return [*lines, ""]


def annotation_lines(outcomes: Sequence[Outcome]) -> list[str]:
    """Every problem as a workflow command, at its file, line and column when it has them."""
    lines = []
    for outcome in outcomes:
        for problem in outcome.problems[:MAX_ANNOTATIONS]:
            lines.append(problem.format_github(f"{outcome.name}: "))
    return lines


def cut(text: str, limit: int, where: str) -> str:
    """``text`` within ``limit`` characters: past it, cut at a line, saying so and where the
    whole report is (a code block left open is closed)."""
    if len(text) <= limit:
        return text
    note = (
        f"\n\n**Cut at {limit:,} characters (GitHub's limit): the whole report is in {where}.**\n"
    )
    kept = text[: limit - len(note) - 64]
    kept = kept[: kept.rfind("\n") + 1] if "\n" in kept else kept
    fences = [line for line in kept.splitlines() if line.startswith("```")]
    if len(fences) % 2:
        kept += "`" * min(_fence_length(fences[-1]), 60) + "\n"
    return kept + note


def _fence_length(line: str) -> int:
    return len(line) - len(line.lstrip("`"))
