"""The rendered tree's text: the summary lists and the per-cluster templates.

The summary lists, which repeat the same per-scorer blocks on every cluster, are encoded
once per scorer and joined (:func:`encode_summaries`); objects that differ between
clusters only by the cluster's name are written once and copied (:class:`ClusterTemplate`).
YAML itself is written by :func:`dsf_compile.edges.yaml_text.dump_yaml`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_contract.summary import Summary


def encode_summary(summary: Summary) -> str:
    """One summary as it stands inside the indented JSON list (two-space indent, no comma)."""
    text = json.dumps(summary.model_dump(mode="json"), indent=2, ensure_ascii=True)
    return "\n".join("  " + line for line in text.split("\n"))


def encode_summaries(blocks: Sequence[str], pad: str = "") -> str:
    """Join encoded summaries into the ConfigMap's JSON list.

    With ``pad=""`` the result equals ``json.dumps(summaries, indent=2)``; the renderer
    passes blocks already shifted by :func:`literal_block` and their ``pad``, so each
    scorer's block is encoded once for the whole fleet.
    """
    if not blocks:
        return pad + "[]"
    return f"{pad}[\n" + ",\n".join(blocks) + f"\n{pad}]"


def block_indent(text: str, placeholder: str) -> int:
    """The indentation of a literal block that replaces ``placeholder``, a mapping value in ``text``."""
    line_start = text.rindex("\n", 0, text.index(placeholder)) + 1
    key_line = text[line_start:]
    return len(key_line) - len(key_line.lstrip(" ")) + 2


def literal_block(text: str, indent: int) -> str:
    """``text`` as the lines of a YAML ``|-`` block at ``indent`` spaces."""
    pad = " " * indent
    return "\n".join(pad + line if line else line for line in text.split("\n"))


# A cluster name that YAML writes as a plain scalar, the same in every position.
_PLAIN_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
_SENTINEL = "DSFCLUSTERNAMESENTINEL"


class ClusterTemplate:
    """The YAML of an object that differs between clusters only by the cluster name.

    Dumped once with a sentinel name, then filled in per cluster: per-cluster objects
    are the bulk of ``rendered/`` and PyYAML's representer is the slow part. A name that
    YAML would quote (``123``, ``true``) falls back to a full dump.
    """

    def __init__(self, build: Callable[[str], Any]) -> None:
        self._build = build
        self.text = dump_yaml(build(_SENTINEL))

    def render(self, cluster: str) -> str:
        if _PLAIN_NAME.match(cluster) and cluster not in _YAML_WORDS:
            return self.text.replace(_SENTINEL, cluster)
        return dump_yaml(self._build(cluster))
