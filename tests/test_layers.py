"""The rooms are layers: every import points down (``docs/architecture.md``).

The import graph of the project's packages, read from the source (imports at the top of
a module and inside functions alike, ``TYPE_CHECKING`` ones too): ``edges/`` and the
shared packages import nothing above them, ``backtest/`` no command module and no
pipeline, the agent only the shared packages, and no package or module imports another
that imports it back.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from tests.fleet_repo import REPO_ROOT

PACKAGES = ("dsf_compile", "dsf_contract", "dsf_transport", "agent", "agent_image")
#: What each room may import, besides itself (``dsf_compile.X`` is the room ``X``).
SHARED = {"dsf_contract", "dsf_transport"}
FLOOR = {"dsf_compile.errors", "dsf_compile.__init__", *SHARED}
ALLOWED = {
    "dsf_contract": set(),
    "dsf_transport": {"dsf_contract"},
    "agent": SHARED,
    "dsf_compile.errors": {"dsf_contract"},
    "dsf_compile.__init__": {"dsf_contract"},
    "dsf_compile.edges": FLOOR,
}
STAGES = ("inputs", "resolve", "sync", "placement", "backtest", "render", "scaffold", "hubread")
ABOVE_STAGES = {"dsf_compile.pipeline", "dsf_compile.commands", "dsf_compile.ci"}


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((REPO_ROOT / package).rglob("*.py")):
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


MODULES = _modules()


def _named(name: str) -> str | None:
    """The project module ``name`` stands for (a name inside it: its module)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imported(module: str, path: Path) -> Iterator[str]:
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            names = [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            if name.split(".")[0] in PACKAGES and (target := _named(name)) not in (None, module):
                yield str(target)


GRAPH = {module: set(_imported(module, path)) for module, path in MODULES.items()}


def room(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "dsf_compile":
        return parts[0]
    return "dsf_compile." + (parts[1] if len(parts) > 1 else "__init__")


def _rooms() -> dict[str, set[str]]:
    arrows: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        for target in targets:
            if room(target) != room(module):
                arrows.setdefault(room(module), set()).add(room(target))
    return arrows


ROOMS = _rooms()


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = [stack.pop()]
                while group[-1] != node:
                    group.append(stack.pop())
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def test_the_graph_is_read() -> None:
    """The reader finds the imports it judges (a broken reader would pass every rule)."""
    assert "dsf_compile.edges.journal" in GRAPH["dsf_compile.edges.replacement"]
    assert "dsf_compile.pipeline" in ROOMS["dsf_compile.commands"]
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("lower", sorted(ALLOWED))
def test_a_lower_room_imports_nothing_above_it(lower: str) -> None:
    above = sorted(ROOMS.get(lower, set()) - ALLOWED[lower])
    offenders = sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if room(module) == lower
        for target in targets
        if room(target) in above
    )
    assert not offenders, offenders


@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_imports_no_command_and_no_pipeline(stage: str) -> None:
    assert not ROOMS.get(f"dsf_compile.{stage}", set()) & ABOVE_STAGES


def test_no_package_cycle() -> None:
    assert cycles(ROOMS) == []


def test_no_module_cycle() -> None:
    assert cycles(GRAPH) == []
