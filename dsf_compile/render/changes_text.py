"""A :class:`Changes` for people: a unified diff (``render --check``, ``diff``), a
Markdown pull-request comment (``diff --format markdown``) or JSON records; the reporter
of ``--format`` (:mod:`dsf_compile.commands.reporters`) chooses which.

The current bytes of a file the compiler did not write, or could not read as text, are
never printed; every other line of a file from the pull request is escaped for the
terminal (or for Markdown) first.
"""

from __future__ import annotations

import difflib

from dsf_compile.edges.tree import RENDERED
from dsf_compile.render.changes import Changes
from dsf_compile.render.shards import RESHARD_PROCEDURE, files_by_shard, reshard
from dsf_contract.escaping import code_fence, markdown, terminal


def _unified(relative: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{RENDERED}/{relative}",
        tofile=f"b/{RENDERED}/{relative}",
    )
    # the old side is a file of the pull request: what a terminal would act on is shown escaped
    return "".join(terminal(line.removesuffix("\n")) + "\n" for line in lines)


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
    return terminal(f"{kind} {namespace + '/' if namespace else ''}{name}")


def _hidden(changes: Changes, relative: str) -> str:
    return f"  (the current file is not shown: {changes.hidden[relative]})\n"


def changes_text(changes: Changes) -> str:
    """The changes as text (``render --check``, ``diff``): a unified diff per file.

    The current bytes of a file listed in ``changes.hidden`` are never printed.
    """
    out = []
    count = _count_changed(changes)
    if count:
        out.append(f"shard count changes: {count}\n")
    shards = _shards_changed(changes)
    if shards:
        out.append(f"shards changed: {shards}\n")
    for relative, text in changes.added.items():
        out.append(f"added:   {RENDERED}/{relative}  {_describe(text)}\n")
        out.append(_unified(relative, "", text))
    for relative, (old, new) in changes.changed.items():
        out.append(f"changed: {RENDERED}/{relative}  {_describe(new)}\n")
        if relative in changes.hidden:
            out.append(_hidden(changes, relative))
        else:
            out.append(_unified(relative, old, new))
    for relative, text in changes.removed.items():
        out.append(f"removed: {RENDERED}/{relative}  {_describe(text)}\n")
        if relative in changes.hidden:
            out.append(_hidden(changes, relative))
        else:
            out.append(_unified(relative, text, ""))
    return "".join(out)


def _count_changed(changes: Changes) -> str:
    """``1 → 2 shards: 31 clusters move (…)``: a change of the shard count, or ''."""
    after = (changes.owned | changes.added.keys()) - changes.removed.keys()
    change = reshard(changes.owned, after)
    if change is None:
        return ""
    return (
        f"{terminal(change.describe())}; every Application or Kustomization they leave "
        f"prunes them: apply rendered/bootstrap/ as {RESHARD_PROCEDURE} says"
    )


def _shards_changed(changes: Changes) -> str:
    """``shards/03 (2 files), shards/05 (1 file)``: where a sharded fleet's change lands."""
    counts = files_by_shard([*changes.added, *changes.changed, *changes.removed])
    return ", ".join(
        f"{shard} ({count} file{'' if count == 1 else 's'})" for shard, count in counts.items()
    )


def changes_markdown(changes: Changes) -> str:
    """The changes as a Markdown pull-request comment (``diff --format markdown``)."""
    if changes.empty:
        return "### dsf-compile diff\n\nNo change to `rendered/`.\n"
    shards = _shards_changed(changes)
    where = f" Shards changed: {shards}." if shards else ""
    if changes.debris:
        where += f" {markdown(changes.debris.line('dsf-compile render'))}."
    count = _count_changed(changes)
    if count:
        where += f"\n\n> [!WARNING]\n> **The number of shards changes**, {markdown(count)}."
    out = [f"### dsf-compile diff\n\n{changes.summary()}.{where}\n"]
    rows = [
        *(("added", p, t) for p, t in changes.added.items()),
        *(("changed", p, n) for p, (_, n) in changes.changed.items()),
        *(("removed", p, t) for p, t in changes.removed.items()),
    ]
    if rows:
        out.append("\n| change | file | object |\n| --- | --- | --- |\n")
    for change, relative, text in rows:
        out.append(f"| {change} | `{RENDERED}/{relative}` | {markdown(_describe(text))} |\n")
    for relative, (old, new) in changes.changed.items():
        if relative in changes.hidden:
            out.append(f"\n`{RENDERED}/{relative}`:{_hidden(changes, relative)}")
            continue
        out.append(f"\n<details><summary><code>{RENDERED}/{relative}</code></summary>\n\n")
        out.append(code_fence(_unified(relative, old, new), "diff"))
        out.append("\n</details>\n")
    return "".join(out)


def change_records(changes: Changes) -> list[dict[str, str]]:
    """The changes as records for ``--format json``: ``{path, change, object}`` per file,
    in the order the text lists them (the file contents are not included)."""
    records = []
    for kind, files in (
        ("added", changes.added),
        ("changed", {k: new for k, (_, new) in changes.changed.items()}),
        ("removed", changes.removed),
    ):
        for relative, text in files.items():
            records.append(
                {"path": f"{RENDERED}/{relative}", "change": kind, "object": _describe(text)}
            )
    return records
