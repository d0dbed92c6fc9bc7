"""The located finding every reader and stage reports with.

A :class:`Problem` is one finding about one field of one file; it prints as
``PATH:LINE:COLUMN: SEVERITY: FIELD: MESSAGE``. The bounded YAML reader returns them, so
the compiler and the agent word a bad document the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from dsf_contract.escaping import github_message, github_property, markdown, terminal


@dataclass(frozen=True, order=True)
class Problem:
    """One finding, located in a file: ``path:line:column: severity: field: message``.

    ``path`` is relative to the repository root; ``line`` and ``column`` are 1-based
    (0 when the problem is about a whole file or has no location). ``field`` is the
    dotted path of the field (``spec.scoring.params.interval``), empty for a whole file.
    """

    path: str
    line: int
    column: int
    field: str
    message: str
    severity: str = "error"

    def format(self) -> str:
        """One terminal line: what the inputs put in the path, field or message is escaped."""
        where = f"{self.field}: " if self.field else ""
        return terminal(
            f"{self.path}:{self.line}:{self.column}: {self.severity}: {where}{self.message}"
        )

    def format_github(self, prefix: str = "") -> str:
        """A GitHub workflow command: ``::error file=…,line=…,col=…::message`` (no ``line``
        for a whole file, no ``file`` for a problem about none); ``prefix`` goes before the
        message (``ci`` names its check there)."""
        level = {"error": "error", "info": "notice"}.get(self.severity, "warning")
        where = f"{self.field}: " if self.field else ""
        text = github_message(f"{prefix}{where}{self.message}")
        if self.path in ("", "."):
            return f"::{level}::{text}"
        place = f"file={github_property(self.path)}"
        if self.line:
            place += f",line={self.line},col={max(self.column, 1)}"
        return f"::{level} {place}::{text}"

    def format_markdown(self) -> str:
        """One Markdown line: ``severity: PATH:LINE:COLUMN: field: message``, escaped."""
        where = f"{self.path}:{self.line}:{self.column}" if self.line else self.path
        field = f"{self.field}: " if self.field else ""
        return f"{self.severity}: {markdown(where)}: {markdown(field + self.message)}"
