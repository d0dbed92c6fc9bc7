"""Names that become Kubernetes object names."""

from __future__ import annotations

import re

_OUTSIDE = re.compile(r"[^a-z0-9.-]")
_DASHES = re.compile(r"-+")


def sanitize_score_name(score_name: str) -> str:
    """The AddOnPlacementScore name of a score (``agent.md``).

    Lower-case; every character outside ``[a-z0-9.-]`` becomes ``-``; runs of ``-``
    collapse; leading/trailing ``-`` and ``.`` are trimmed; cut to 253 characters (then
    trailing non-alphanumerics trimmed); empty becomes ``score``; a non-alphanumeric
    first or last character gets ``a`` prepended/appended.

    >>> sanitize_score_name("sample_my_score"), sanitize_score_name("My Score@Name")
    ('sample-my-score', 'my-score-name')
    """
    name = _DASHES.sub("-", _OUTSIDE.sub("-", score_name.lower())).strip("-.")
    name = name[:253].rstrip("-.")
    if not name:
        return "score"
    if not name[0].isalnum():
        name = "a" + name
    if not name[-1].isalnum():
        name = name + "a"
    return name
