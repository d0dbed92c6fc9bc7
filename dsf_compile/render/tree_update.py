"""One all-or-nothing update of ``rendered/``: the changes as writes and removals.

The update itself — staging, the journal, the renames with undo, and what the next run
does after a kill — is :mod:`dsf_compile.edges.journal`'s, shared with every command that
writes files; here only what render adds: the ownership record written with the files.
"""

from __future__ import annotations

from dsf_compile.edges.replacement import Replacement
from dsf_compile.edges.tree import Tree
from dsf_compile.errors import RenderError
from dsf_compile.render.changes import Changes
from dsf_compile.render.record import RECORD, record_text


def update_tree(tree: Tree, existing: set[str], changes: Changes, files: dict[str, str]) -> None:
    """Carry ``changes`` out on ``tree``, all or nothing; note the backups left behind."""
    writes = [*changes.added.items(), *((p, new) for p, (_, new) in changes.changed.items())]
    if changes.record_stale:
        writes.append((RECORD, record_text(files)))
    encoded = [(relative, text.encode("utf-8")) for relative, text in writes]
    # the record is always kept until the end: it may exist without being listed
    replacement = Replacement(tree, existing | {RECORD}, RenderError)
    changes.leftovers = replacement.run(encoded, list(changes.removed))
