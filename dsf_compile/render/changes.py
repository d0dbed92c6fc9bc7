"""What a render would do to ``rendered/``, file by file, and the tree it left behind.

The comparison fills a :class:`Changes`, the update carries it out, the text and Markdown
reports (``changes_text.py``) show it, and the no-op fast path (``fastpath.py``) starts
from its :class:`Settled`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from dsf_compile.edges.leftovers import Debris, Recovery
from dsf_contract.records import frozen


@frozen
class Settled:
    """The tree right after a render, as a check would have found it (see ``settle.py``).

    ``stats``: every file ``rendered/`` owns and its record, with what ``lstat`` said of it
    when its bytes were last found equal to ``texts`` (its text); ``stamp``: a ctime that
    every change to one of them after that ``lstat`` reaches or passes.
    """

    stamp: int
    stats: dict[str, os.stat_result]
    texts: dict[str, str]


@dataclass
class Changes:
    """What a render would do to the tree, file by file.

    ``hidden`` names the files whose current bytes must not be shown, and why (not
    UTF-8, unreadable, or not written by the compiler); their "old" text is empty.
    ``leftovers`` are temporary files an otherwise complete update could not remove.
    ``recovery``: what the render finished or undid of a killed one before it compared;
    ``debris``: what a check found of a killed render (it changes nothing: the tree is stale).
    """

    added: dict[str, str] = field(default_factory=dict)
    changed: dict[str, tuple[str, str]] = field(default_factory=dict)
    removed: dict[str, str] = field(default_factory=dict)
    record_stale: bool = False
    owned: set[str] = field(default_factory=set)
    hidden: dict[str, str] = field(default_factory=dict)
    leftovers: list[str] = field(default_factory=list)
    settled: Settled | None = None
    recovery: Recovery = field(default_factory=Recovery)
    debris: Debris | None = None

    @property
    def empty(self) -> bool:
        return not (self.added or self.changed or self.removed or self.debris)

    def summary(self) -> str:
        return f"{len(self.added)} added, {len(self.changed)} changed, {len(self.removed)} removed"
