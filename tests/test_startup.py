"""What a whole ``dsf-compile`` command loads before it does its work.

Start-up is most of what ``validate`` of a small fleet costs (docs/benchmarks.md): these
tests hold the modules a command needs no more than it loads, and the shortcut the
command line takes around pydantic's plugin search to its conditions.
"""

from __future__ import annotations

import gc
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pydantic

from dsf_compile.pipeline.collector import loading
from dsf_contract import pydantic_plugins
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT, imported_by
from tests.placement.placement_repo import add_cel


def _in_a_fresh_interpreter(code: str, **environment: str) -> str:
    """What ``code`` prints, run with this checkout's compiler and ``environment``."""
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env.update(PYTHONPATH=str(REPO_ROOT), **environment)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    return done.stdout.strip()


#: Builds a model after the command line's set-up; prints whether the metadata reader was loaded.
_BUILD_A_MODEL = """
import sys
from dsf_compile.commands.cli import without_pydantic_plugins
without_pydantic_plugins()
from dsf_compile.inputs.settings import Settings
assert Settings.model_validate({}) == Settings()
print("importlib.metadata" in sys.modules)
"""


def test_validate_searches_no_package_metadata_for_pydantic_plugins() -> None:
    imported, _ = imported_by(EXAMPLE_FLEET, "validate")
    assert "dsf_compile.inputs.placements" in imported  # the whole fleet was validated
    assert not imported & {"importlib.metadata", "email", "pydantic.plugin._loader"}


def test_validate_loads_no_writer_and_no_engine_the_fleet_does_not_use() -> None:
    # the example fleet's Placements hold no CEL expression, its dsf.yaml maps no address,
    # nothing it says is a misspelt name, and validate checks its PlacementOptimization
    # without running the solver
    imported, _ = imported_by(EXAMPLE_FLEET, "validate")
    assert "dsf_compile.placement.checks" in imported  # the Placements were checked
    unused = {
        "dsf_compile.edges.journal",  # what a writing command recovers; validate only flags
        "dsf_compile.backtest.gate",
        "dsf_compile.placement.cel",  # the CEL engine: loaded by a fleet's first expression
        "dsf_compile.placement.cel_cost",
        "dsf_compile.placement.optimize",  # the solver; its PlacementOptimization is checked
        "dsf_transport.connect_to",
        "re2",
        "difflib",
    }
    assert not imported & unused


def test_a_fleets_first_cel_expression_loads_the_engine_and_is_checked(tmp_path: Path) -> None:
    # the engine is loaded where the first expression is compiled: in a fresh interpreter,
    # not after some other test loaded it, the expression is still checked
    root = tmp_path / "fleet"
    shutil.copytree(EXAMPLE_FLEET, root)
    add_cel(root, "managedCluster.metadata.name")
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), "validate"],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert done.returncode == 1  # invalid inputs
    assert "celExpressions[0]: evaluates to string, not a bool" in done.stderr


def test_models_build_with_the_plugin_search_left_out() -> None:
    assert _in_a_fresh_interpreter(_BUILD_A_MODEL) == "False"


def test_a_users_own_plugin_setting_keeps_pydantics_loader() -> None:
    # only "no plugin at all" is what the replaced loader answers
    for setting in ("some-plugin", "", "false"):
        loaded = _in_a_fresh_interpreter(_BUILD_A_MODEL, PYDANTIC_DISABLE_PLUGINS=setting)
        assert loaded == "True", setting


def test_the_replaced_loader_offers_what_pydantic_imports_from_it() -> None:
    # a pydantic that asks its loader for more than get_plugins fails here, not for a user
    package = Path(pydantic.__file__).parent
    asked: set[str] = set()
    for source in package.rglob("*.py"):
        text = source.read_text(encoding="utf-8")
        for names in re.findall(r"from \S*_loader import (\([^)]*\)|[\w, ]+)", text):
            asked |= {n.strip(" \n()") for n in names.split(",")} - {""}
        asked |= set(re.findall(r"\b_loader\.(\w+)", text))
    assert asked == {"get_plugins"}
    assert pydantic_plugins.no_plugins() == ()


def test_what_a_command_loads_is_left_out_of_later_collections() -> None:
    enabled = gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with loading():
            assert not gc.isenabled()  # no collection while the code loads
            loaded: list[list[int]] = [[] for _ in range(1000)]
        assert gc.isenabled() == enabled  # the work itself is collected as before
        assert gc.get_freeze_count() >= before + len(loaded)
    finally:
        gc.unfreeze()
