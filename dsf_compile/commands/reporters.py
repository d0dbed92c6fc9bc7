"""How ``dsf-compile`` prints what a command found: one reporter per ``--format``.

A command hands its reporter the same things whatever the format: problems (located
findings), status lines, and each result it has — the changes of ``render --check`` and
``diff`` (with the replayed decisions), ``explain``'s explanation, ``explain --verify``'s
verdicts, ``backtest``'s report — or plain data (:meth:`Reporter.result`). The text
reporter prints problems and status lines on stderr (in colour on a terminal, never with
``NO_COLOR``) and each result as text on stdout; the Markdown one prints the results as
Markdown (a pull-request comment); the GitHub one prints problems as workflow
annotations; the JSON one prints a single document on stdout when the command ends,
problems as records ``{path, line, column, severity, field, message}``. Each format's
words for one result live beside its data (``changes_text``, ``explain_markdown``,
``report_document``…); which of them is printed is chosen here, and only here. A new
format is one class and one entry in :data:`REPORTER_BY_NAME`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TextIO

from dsf_compile.edges.untrusted import safe_message
from dsf_contract.escaping import json_text
from dsf_contract.problem import Problem

if TYPE_CHECKING:
    from dsf_compile.backtest.report import Report
    from dsf_compile.placement.decision_changes import DecisionChange
    from dsf_compile.placement.scheduler import PlacementResult
    from dsf_compile.placement.verify import Verification
    from dsf_compile.render.changes import Changes

    #: ``diff``'s replay: each reported Placement, and the moment judged.
    Replay = tuple[Sequence[DecisionChange], datetime]

#: Errors first (what stops the command before what does not), then by place.
_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
#: SGR colours of the severity word on a terminal.
_COLOURS = {"error": "31", "warning": "33", "info": "36"}


def sorted_problems(problems: Sequence[Problem]) -> list[Problem]:
    """``problems`` in the order every format prints them."""
    return sorted(problems, key=lambda p: (_SEVERITY_ORDER.get(p.severity, 1), p))


def problem_record(problem: Problem) -> dict[str, Any]:
    """A problem as a JSON record: ``{path, line, column, severity, field, message}``."""
    record = asdict(problem)
    return {key: record[key] for key in ("path", "line", "column", "severity", "field", "message")}


def error_problem(message: str, path: str = "") -> Problem:
    """A reason a command could not run, as a problem (no line: it is not in a file)."""
    return Problem(path, 0, 0, "", message)


def json_failure(command: str | None, problems: Sequence[Problem]) -> str:
    """The one JSON document of a command that failed before its reporter existed."""
    document = {
        "command": command,
        "ok": False,
        "problems": [problem_record(p) for p in sorted_problems(problems)],
    }
    return json_text(json.dumps(document, indent=2, ensure_ascii=False)) + "\n"


def wants_colour(stream: TextIO, environ: os._Environ[str] | dict[str, str]) -> bool:
    """Colour only on a terminal, and never with ``NO_COLOR`` set (no-color.org) or a
    dumb terminal."""
    if environ.get("NO_COLOR") or environ.get("TERM") == "dumb":
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Reporter:
    """Text: problems one line each and status lines, on stderr."""

    #: True when the command's result goes into one document instead of its own text.
    structured: ClassVar[bool] = False

    def __init__(self, command: str, out: TextIO, err: TextIO) -> None:
        self.command, self.out, self.err = command, out, err
        self.colour = wants_colour(err, os.environ)

    def problems(self, problems: Sequence[Problem]) -> None:
        """Print ``problems`` sorted; credentials and control characters never reach the terminal."""
        for problem in sorted_problems(problems):
            print(self._problem_line(problem), file=self.err)

    def _problem_line(self, problem: Problem) -> str:
        line = safe_message(problem.format())
        code = _COLOURS.get(problem.severity)
        if not (self.colour and code):
            return line
        word = f": {problem.severity}: "
        return line.replace(word, f": \x1b[{code}m{problem.severity}\x1b[0m: ", 1)

    def say(self, line: str) -> None:
        """A status line (``dsf-compile: …``)."""
        print(f"dsf-compile: {safe_message(line)}", file=self.err)

    def warn(self, line: str) -> None:
        """A warning that is not about a file (``dsf-compile: warning: …``)."""
        word = "\x1b[33mwarning\x1b[0m" if self.colour else "warning"
        print(f"dsf-compile: {word}: {safe_message(line)}", file=self.err)

    def result(self, **fields: Any) -> None:
        """The command's result as data: only structured formats print it."""

    def failed(self, problems: Sequence[Problem], summary: str) -> None:
        """The inputs are invalid: every problem, then one line saying how many."""
        self.problems(problems)
        if summary:
            self.say(summary)

    def error(self, lines: Sequence[str], path: str = "") -> None:
        """The command could not run (``dsf-compile: error: …``, one line each)."""
        for line in lines:
            print(f"dsf-compile: error: {safe_message(line)}", file=self.err)

    def close(self, code: int) -> None:
        """The command is done with exit ``code``: structured formats print their document now."""

    # ------------------------------------------------------------- each result type

    def changes(self, changes: Changes | None, replay: Replay | None) -> None:
        """``render --check``/``diff``: what would change (None: nothing to compare, the
        tree is current) and the Placements whose decisions would move."""
        from dsf_compile.render.changes_text import changes_text

        if changes is not None:
            self.out.write(changes_text(changes))
            if replay is not None:  # the scheduler's modules only when decisions were replayed
                from dsf_compile.placement.decision_changes import decision_changes_text

                self.out.write(decision_changes_text(replay[0]))

    def explanation(self, results: Sequence[PlacementResult], at: datetime) -> None:
        """``explain``: the scheduler's steps per Placement."""
        from dsf_compile.placement.explain import Explanation, explain_text

        self.out.write(explain_text(Explanation.of(results, at)))

    def verification(self, found: Verification) -> None:
        """``explain --verify``: what was not compared (stderr), each drift (stdout), the
        summary (stderr)."""
        from dsf_compile.placement import verify

        for line in verify.not_compared_lines(found):
            self.say(line)
        self.out.write(verify.drifts_text(found))
        self.say(verify.summary(found))

    def backtest(self, report: Report) -> None:
        """``backtest``: a table per Placement, then its timeline."""
        from dsf_compile.backtest.report import format_text

        self.out.write(format_text(report))


class MarkdownReporter(Reporter):
    """Results as Markdown on stdout (a pull-request comment); problems as text on stderr,
    or as annotations under GitHub Actions."""

    def changes(self, changes: Changes | None, replay: Replay | None) -> None:
        from dsf_compile.render.changes import Changes
        from dsf_compile.render.changes_text import changes_markdown

        self.out.write(changes_markdown(Changes() if changes is None else changes))
        if changes is not None and replay is not None:
            from dsf_compile.placement.decision_changes import decision_changes_markdown

            self.out.write(decision_changes_markdown(*replay))

    def explanation(self, results: Sequence[PlacementResult], at: datetime) -> None:
        from dsf_compile.placement.explain import Explanation, explain_markdown

        self.out.write(explain_markdown(Explanation.of(results, at)))

    def backtest(self, report: Report) -> None:
        from dsf_compile.backtest.report import format_markdown

        self.out.write(format_markdown(report))


class GithubReporter(Reporter):
    """Problems as GitHub workflow annotations (``::error file=…,line=…,col=…::…``)."""

    def _problem_line(self, problem: Problem) -> str:
        return safe_message(problem.format_github())


class GithubMarkdownReporter(MarkdownReporter, GithubReporter):
    """``--format markdown`` under GitHub Actions: Markdown results, annotated problems."""


class JsonReporter(Reporter):
    """One JSON document on stdout: ``{command, ok, problems: [records], …result}``."""

    structured = True

    def __init__(self, command: str, out: TextIO, err: TextIO) -> None:
        super().__init__(command, out, err)
        self._problems: list[Problem] = []
        self._warnings: list[str] = []
        self._fields: dict[str, Any] = {}

    def problems(self, problems: Sequence[Problem]) -> None:
        self._problems.extend(problems)

    def say(self, line: str) -> None:
        pass  # the document holds the result; status lines are for people

    def warn(self, line: str) -> None:
        self._warnings.append(line)

    def result(self, **fields: Any) -> None:
        self._fields.update(fields)

    def failed(self, problems: Sequence[Problem], summary: str) -> None:
        self._problems.extend(problems)

    def error(self, lines: Sequence[str], path: str = "") -> None:
        self._problems.extend(error_problem(line, path) for line in lines)

    def changes(self, changes: Changes | None, replay: Replay | None) -> None:
        from dsf_compile.render.changes_text import change_records

        stale = changes is not None and not changes.empty
        self.result(stale=stale, changes=change_records(changes) if changes is not None else [])
        if replay is not None:
            from dsf_compile.placement.decision_changes import decision_record
            from dsf_compile.placement.scheduler import format_time

            replayed, at = replay
            decisions = [decision_record(change) for change in replayed]
            self.result(at=format_time(at), decisions=decisions)

    def explanation(self, results: Sequence[PlacementResult], at: datetime) -> None:
        from dsf_compile.placement.explain import explain_document

        self.result(**explain_document(results, at))

    def verification(self, found: Verification) -> None:
        from dsf_compile.placement.verify import verification_document

        self.result(**verification_document(found))  # every verdict a record, drifts among them

    def backtest(self, report: Report) -> None:
        from dsf_compile.backtest.report import report_document

        self.result(**report_document(report))

    def close(self, code: int) -> None:
        # ok only with exit 0: a stale tree (exit 1) is not ok, whatever else held
        document: dict[str, Any] = {"command": self.command, "ok": code == 0}
        if self._warnings:
            document["warnings"] = self._warnings
        document["problems"] = [problem_record(p) for p in sorted_problems(self._problems)]
        document.update(self._fields)
        encoded = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False)
        self.out.write(json_text(encoded) + "\n")


#: Every ``--format``'s reporter, by name (the one table of output formats).
REPORTER_BY_NAME: dict[str, Callable[[str, TextIO, TextIO], Reporter]] = {
    "text": Reporter,
    "markdown": MarkdownReporter,
    "github": GithubReporter,
    "json": JsonReporter,
}


def reporter_for(
    name: str, command: str, out: TextIO, err: TextIO, environ: dict[str, str] | None = None
) -> Reporter:
    """The reporter of ``--format name``; under GitHub Actions (``GITHUB_ACTIONS=true``)
    problems are annotations unless the format was asked for by name as ``text``/``json``
    (``markdown`` keeps its Markdown results)."""
    env = os.environ if environ is None else environ
    if name == "markdown" and env.get("GITHUB_ACTIONS") == "true":
        return GithubMarkdownReporter(command, out, err)
    return REPORTER_BY_NAME[name](command, out, err)
