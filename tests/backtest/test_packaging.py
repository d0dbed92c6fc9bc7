"""``backtest`` runs on the base install (``pip install -e .``, README step 1)."""

from __future__ import annotations

import importlib.metadata
import re
import subprocess
import sys
import tomllib

from packaging.requirements import Requirement

from tests.fleet_repo import REPO_ROOT


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str]) -> set[str]:
    """The distributions the requirements install here, with their own (no extra)."""
    found: set[str] = set()
    todo = list(requirements)
    while todo:
        requirement = Requirement(todo.pop())
        name = _canonical(requirement.name)
        if name in found or (requirement.marker and not requirement.marker.evaluate({"extra": ""})):
            continue
        found.add(name)
        todo.extend(importlib.metadata.requires(name) or ())
    return found


def test_backtest_imports_only_what_the_base_install_brings() -> None:
    """Every distribution the command's modules load is a base dependency or one of theirs
    (numpy came only with the optimize extra's scipy: ModuleNotFoundError on the base)."""
    imports = (
        "import dsf_compile.pipeline.backtest, dsf_compile.backtest.run, dsf_compile.backtest.source\n"
        "import dsf_compile.backtest.report, dsf_compile.backtest.fast\n"
    )
    at_start = _top_modules("")  # what the interpreter loads anyway (site, .pth hooks)
    modules = _top_modules(imports) - at_start
    by_module = importlib.metadata.packages_distributions()
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    loaded = {
        _canonical(dist)
        for module in modules
        for dist in by_module.get(module, ())
        if _canonical(dist) != _canonical(project["name"])
    }
    assert "numpy" in loaded
    assert loaded <= _closure(project["dependencies"]), loaded - _closure(project["dependencies"])


def _top_modules(imports: str) -> set[str]:
    code = imports + "import sys\nprint(' '.join({m.partition('.')[0] for m in sys.modules}))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO_ROOT
    )
    return set(done.stdout.split())
