"""The tree of failure reasons drawn in ``agent/errors.py`` is true to the enums and to
:func:`agent.errors.condition_reason`: every reason appears once, with the condition
reason a failed cycle really writes for it."""

from __future__ import annotations

import re
from collections import Counter
from enum import StrEnum

import agent.errors
from agent.errors import AgentError, Reason, condition_reason
from dsf_contract.failures import ApiFailure, RequestFailure, http_status_reason
from dsf_contract.scores import ScoresReason

_LEAF = re.compile(r"[├└]── (\S+)(.*)")
_MAPS_TO = re.compile(r"(\w+) → (\w+)")
_ENUMS: tuple[type[StrEnum], ...] = (RequestFailure, ApiFailure, Reason, ScoresReason)


def _tree() -> list[tuple[str, str]]:
    """Each entry of the docstring's tree: its name, and its text with continuation lines."""
    entries: list[tuple[str, str]] = []
    for line in (agent.errors.__doc__ or "").splitlines():
        leaf = _LEAF.search(line)
        if leaf is not None:
            entries.append((leaf.group(1), leaf.group(2)))
        elif entries and line.strip().strip("│").strip().startswith("·"):
            name, text = entries[-1]
            entries[-1] = (name, f"{text} {line}")
    return entries


def test_every_reason_and_condition_reason_appears_once() -> None:
    names = Counter(name for name, _ in _tree())
    members = [str(member) for enum in _ENUMS for member in enum]
    assert {member: names[member] for member in members} == dict.fromkeys(members, 1)


def test_the_tree_names_nothing_the_enums_do_not_hold() -> None:
    errors: list[type[AgentError]] = [AgentError, *AgentError.__subclasses__()]
    classes = {cls.__name__ for cls in errors}
    headers = {enum.__name__ for enum in _ENUMS} | {"http_status_reason"}
    known = {str(member) for enum in _ENUMS for member in enum}
    known |= {http_status_reason(400)} | classes | headers
    assert {name for name, _ in _tree()} - known == set()


def test_each_mapping_is_the_condition_a_failed_cycle_writes() -> None:
    mappings = [
        (stage, name, condition)
        for name, text in _tree()
        for stage, condition in _MAPS_TO.findall(text)
    ]
    assert len(mappings) >= 20  # the tree draws them, the test does not pass empty
    for stage, name, condition in mappings:
        assert condition_reason(stage, name) == ScoresReason(condition), (stage, name)
