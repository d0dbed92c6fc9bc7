"""No test module imports from another test module: what tests share lives in a
``conftest.py`` or a module named for what it holds (``tests/fleet_repo.py``,
``tests/agent/fleet_apis.py`` …), so running one test file never collects another's tests
and a helper has one home.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.fleet_repo import REPO_ROOT

TESTS = REPO_ROOT / "tests"


def is_test_module(dotted: str) -> bool:
    return dotted.rsplit(".", 1)[-1].startswith("test_")


def imported_modules(tree: ast.Module, package: str) -> list[tuple[int, str]]:
    """``(line, module)`` of every module ``tree`` imports, a name taken from a package
    (``from tests.agent import test_x``) counted as that module; relative imports resolved
    against ``package``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            found.append((node.lineno, base))
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def imports_of_test_modules(path: Path) -> list[str]:
    """Where the test module at ``path`` imports another test module (file:line: module)."""
    relative = path.relative_to(REPO_ROOT)
    package = ".".join(relative.parent.parts)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(relative))
    return sorted(
        {
            f"{relative}:{line}: {module}"
            for line, module in imported_modules(tree, package)
            if module.startswith("tests.") and is_test_module(module)
        }
    )


def test_the_check_sees_every_form_of_import() -> None:
    source = (
        "from tests.agent.test_agent_rbac import x\n"
        "import tests.test_shards\n"
        "from tests.fleet import test_ci\n"
        "from .test_agent_image import y\n"
        "from ..test_crash import z\n"
        "from tests.agent.fleet_apis import poll_until\n"
        "from . import kubelet\n"
        "from tests.agent.conftest import AgentProcess\n"
    )
    found = imported_modules(ast.parse(source), "tests.agent")
    assert sorted(m for _, m in found if is_test_module(m)) == [
        "tests.agent.test_agent_image",
        "tests.agent.test_agent_rbac",
        "tests.fleet.test_ci",
        "tests.test_crash",
        "tests.test_shards",
    ]


def test_no_test_module_imports_another() -> None:
    modules = sorted(TESTS.rglob("test_*.py"))
    assert len(modules) > 100  # the walk found the suite
    offences = [offence for path in modules for offence in imports_of_test_modules(path)]
    assert offences == [], "move what is shared into a helper module or a conftest.py"
