"""How ``dsf-compile`` prints what a command found: one reporter per ``--format``.

A command hands its reporter the same things whatever the format: problems (located
findings), status lines, and its result as plain data. The text reporter prints problems
and status lines on stderr (in colour on a terminal, never with ``NO_COLOR``); the GitHub
one prints problems as workflow annotations; the JSON one prints a single document on
stdout when the command ends, problems as records ``{path, line, column, severity,
field, message}``. The command's own human output (a diff, a decision table) is written
by the command for the text-like formats; :attr:`Reporter.structured` says whether it
must give data instead. A new format is one class and one entry in :data:`REPORTERS`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any, ClassVar, TextIO

from dsf_compile.edges.untrusted import safe_message
from dsf_contract.escaping import json_text
from dsf_contract.problem import Problem

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


class GithubReporter(Reporter):
    """Problems as GitHub workflow annotations (``::error file=…,line=…,col=…::…``)."""

    def _problem_line(self, problem: Problem) -> str:
        return safe_message(problem.format_github())


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

    def close(self, code: int) -> None:
        # ok only with exit 0: a stale tree (exit 1) is not ok, whatever else held
        document: dict[str, Any] = {"command": self.command, "ok": code == 0}
        if self._warnings:
            document["warnings"] = self._warnings
        document["problems"] = [problem_record(p) for p in sorted_problems(self._problems)]
        document.update(self._fields)
        encoded = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=False)
        self.out.write(json_text(encoded) + "\n")


#: Every ``--format``'s reporter, by name. ``markdown`` is a text-like format: its
#: command writes Markdown on stdout; problems are printed as text.
REPORTERS: dict[str, Callable[[str, TextIO, TextIO], Reporter]] = {
    "text": Reporter,
    "markdown": Reporter,
    "github": GithubReporter,
    "json": JsonReporter,
}


def reporter_for(
    name: str, command: str, out: TextIO, err: TextIO, environ: dict[str, str] | None = None
) -> Reporter:
    """The reporter of ``--format name``; under GitHub Actions (``GITHUB_ACTIONS=true``)
    problems are annotations unless the format was asked for by name as ``text``/``json``."""
    env = os.environ if environ is None else environ
    if name == "markdown" and env.get("GITHUB_ACTIONS") == "true":
        name = "github"
    return REPORTERS[name](command, out, err)
