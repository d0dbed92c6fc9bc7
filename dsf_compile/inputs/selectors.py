"""Kubernetes label selectors and shell-style globs, as masks and overrides use them."""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Protocol

from dsf_compile.inputs.inventory import LabelSelector


class ClusterPart(Protocol):
    """What masks and agent overrides share: a cluster name glob and/or a label selector."""

    @property
    def clusterName(self) -> str | None: ...

    @property
    def clusterSelector(self) -> LabelSelector | None: ...


def selects_cluster(part: ClusterPart, name: str, labels: Mapping[str, str]) -> bool:
    """Whether ``part`` selects the cluster: its name glob and its selector must both match."""
    if part.clusterName is not None and not fnmatchcase(name, part.clusterName):
        return False
    return part.clusterSelector is None or selector_matches(part.clusterSelector, labels)


_GLOB = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    """Whether ``pattern`` holds a shell-style wildcard (else it matches only itself)."""
    return _GLOB.search(pattern) is not None


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    """Kubernetes semantics: every matchLabels pair and every expression must hold."""
    for key, wanted in (selector.matchLabels or {}).items():
        if labels.get(key) != wanted:
            return False
    for requirement in selector.matchExpressions or ():
        present = requirement.key in labels
        value = labels.get(requirement.key)
        values = requirement.values or ()
        if requirement.operator == "In" and value not in values:
            return False
        if requirement.operator == "NotIn" and present and value in values:
            return False
        if requirement.operator == "Exists" and not present:
            return False
        if requirement.operator == "DoesNotExist" and present:
            return False
    return True
