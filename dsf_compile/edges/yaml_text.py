"""Objects → YAML text, byte-stable: every YAML file the compiler writes goes through here.

Key order is the order the objects were built in (apiVersion, kind, metadata, then the
rest), multi-line strings are literal blocks, lines are never folded, and no anchors or
aliases are written. PyYAML's C emitter does the work.
"""

from __future__ import annotations

from typing import Any

import yaml

try:
    _BaseDumper: type = yaml.CSafeDumper
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseDumper = yaml.SafeDumper


class _Dumper(_BaseDumper):  # type: ignore[misc]
    def ignore_aliases(self, data: Any) -> bool:
        # Builders reuse dicts (labels, selectors); anchors and aliases would be valid
        # YAML but unreadable in a review, so every occurrence is written out.
        return True


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _represent_str)


def dump_yaml(obj: Any) -> str:
    """One YAML document, LF line endings, trailing newline."""
    return yaml.dump(
        obj,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        allow_unicode=True,
        width=1 << 30,
    )
