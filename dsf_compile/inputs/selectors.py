"""Kubernetes label selectors and shell-style globs, as masks and overrides use them."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
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
        holds = _OPERATORS.get(requirement.operator)
        present = requirement.key in labels
        if holds is not None and not holds(
            present, labels.get(requirement.key), requirement.values or ()
        ):
            return False
    return True


#: A matchExpressions operator → whether it holds of ``(present, value, values)``.
_OPERATORS: dict[str, Callable[[bool, str | None, Sequence[str]], bool]] = {
    "In": lambda present, value, values: value in values,
    "NotIn": lambda present, value, values: not (present and value in values),
    "Exists": lambda present, value, values: present,
    "DoesNotExist": lambda present, value, values: not present,
}
