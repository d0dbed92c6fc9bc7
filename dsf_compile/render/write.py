"""Rendered files → ``rendered/``: minimal, atomic, and only ever the compiler's own files.

The compiler records the files it owns in ``rendered/.dsf-files``. A render

1. compares every rendered file with the tree (files with the same bytes are left alone),
2. stages every new or changed file as a temporary file beside its target,
3. only when all are staged, renames them into place, deletes the files it owned that
   are no longer rendered, and rewrites the record.

An error before step 3 removes the staged files and leaves the previous tree intact.
Files the compiler did not write are never touched.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path

from dsf_compile.errors import RenderError
from dsf_compile.files import atomic_write

RENDERED = "rendered"
RECORD = ".dsf-files"
_RECORD_HEADER = "# Files written by dsf-compile; it deletes only these. Do not edit.\n"


@dataclass
class Changes:
    """What a render would do to the tree, file by file."""

    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    record_stale: bool = False
    owned: set[str] = field(default_factory=set)

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed"


def read_record(folder: Path) -> set[str]:
    file = folder / RECORD
    if not file.exists():
        return set()
    lines = file.read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#") and _safe(line)}


def _safe(relative: str) -> bool:
    parts = relative.split("/")
    return not relative.startswith("/") and ".." not in parts and "" not in parts


def _read(file: Path) -> str | None:
    try:
        return file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError):
        return "\x00unreadable"


def compare_tree(folder: Path, files: dict[str, str]) -> Changes:
    """Compare rendered ``files`` with ``folder`` without writing anything."""
    owned = read_record(folder)
    changes = Changes(owned=owned)
    for relative, text in files.items():
        current = _read(folder / relative)
        if current is None:
            changes.added[relative] = text
        elif current != text:
            changes.changed[relative] = (current, text)
    for relative in sorted(owned - set(files)):
        current = _read(folder / relative)
        if current is not None:
            changes.removed[relative] = current
    changes.record_stale = owned != set(files)
    return changes


def write_tree(folder: Path, files: dict[str, str]) -> Changes:
    """Bring ``folder`` to exactly ``files`` (for the files the compiler owns)."""
    changes = compare_tree(folder, files)
    foreign = sorted(p for p in changes.changed if p not in changes.owned)
    if foreign:
        raise RenderError(
            f"{RENDERED}/{foreign[0]} exists but was not written by dsf-compile; move it away and render again"
        )
    staged = _stage(
        folder, [*changes.added.items(), *((p, new) for p, (_, new) in changes.changed.items())]
    )
    try:
        for relative, staged_file in staged:
            os.replace(staged_file, os.path.join(folder, relative))
        for relative in changes.removed:
            (folder / relative).unlink(missing_ok=True)
            _prune_empty(folder, (folder / relative).parent)
        if changes.record_stale or not (folder / RECORD).exists():
            record = _RECORD_HEADER + "".join(f"{p}\n" for p in sorted(files))
            atomic_write(folder / RECORD, record.encode())
    except OSError as err:
        raise RenderError(f"cannot update {RENDERED}/: {err}") from err
    return changes


def _stage(folder: Path, files: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Write every file beside its target as ``.NAME.dsf-tmp``; on failure remove them all."""
    staged: list[tuple[str, str]] = []
    made: set[str] = set()
    try:
        for relative, text in files:
            parent, name = os.path.split(os.path.join(folder, relative))
            if parent not in made and not os.path.isdir(parent):
                os.makedirs(parent)
            made.add(parent)
            staged_file = os.path.join(parent, f".{name}.dsf-tmp")
            staged.append((relative, staged_file))
            fd = os.open(staged_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(text.encode("utf-8"))
    except OSError as err:
        for _, staged_file in staged:
            Path(staged_file).unlink(missing_ok=True)
            _prune_empty(folder, Path(staged_file).parent)
        raise RenderError(f"cannot write {RENDERED}/: {err}; the previous tree is intact") from err
    return staged


def _prune_empty(root: Path, folder: Path) -> None:
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


# ------------------------------------------------------------------- reporting


def _unified(relative: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{RENDERED}/{relative}",
        tofile=f"b/{RENDERED}/{relative}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _describe(text: str) -> str:
    kind = name = namespace = ""
    for line in text.splitlines():
        if line.startswith("kind: "):
            kind = line[6:]
        elif line.startswith("  name: ") and not name:
            name = line[8:]
        elif line.startswith("  namespace: ") and not namespace:
            namespace = line[13:]
    if not kind:
        return ""
    return f"{kind} {namespace + '/' if namespace else ''}{name}"


def format_changes(changes: Changes, style: str) -> str:
    """The changes as text (``render --check``, ``diff``) or as a Markdown PR comment."""
    if style == "markdown":
        return _format_markdown(changes)
    out = []
    for relative, text in changes.added.items():
        out.append(f"added:   {RENDERED}/{relative}  {_describe(text)}\n")
        out.append(_unified(relative, "", text))
    for relative, (old, new) in changes.changed.items():
        out.append(f"changed: {RENDERED}/{relative}  {_describe(new)}\n")
        out.append(_unified(relative, old, new))
    for relative, text in changes.removed.items():
        out.append(f"removed: {RENDERED}/{relative}  {_describe(text)}\n")
        out.append(_unified(relative, text, ""))
    return "".join(out)


def _format_markdown(changes: Changes) -> str:
    if changes.empty:
        return "### dsf-compile diff\n\nNo change to `rendered/`.\n"
    out = [
        f"### dsf-compile diff\n\n{changes.summary()}.\n\n| change | file | object |\n| --- | --- | --- |\n"
    ]
    rows = [
        *(("added", p, t) for p, t in changes.added.items()),
        *(("changed", p, n) for p, (_, n) in changes.changed.items()),
        *(("removed", p, t) for p, t in changes.removed.items()),
    ]
    for change, relative, text in rows:
        out.append(f"| {change} | `{RENDERED}/{relative}` | {_describe(text)} |\n")
    for relative, (old, new) in changes.changed.items():
        out.append(f"\n<details><summary><code>{RENDERED}/{relative}</code></summary>\n\n```diff\n")
        out.append(_unified(relative, old, new))
        out.append("```\n\n</details>\n")
    return "".join(out)
