"""The agent stands alone: running it imports the agent, the contract package, the
transport package, the standard library and the distributions the project declares (with what they require),
never the compiler. Its image holds exactly that (``agent/Containerfile``).

Checked in a fresh interpreter as ``agent_image.deps`` looks (no ``site``, whose ``.pth``
files load modules of their own; the optional extras of libraries denied, as in the
image): every module of ``agent/`` is imported, those the agent loads lazily too, then
every loaded module is classified.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys

from packaging.requirements import Requirement

from tests.fleet_repo import REPO_ROOT

DISTRIBUTION = "ocm-dynamic-scoring"
#: The project's own top-level packages the agent may load.
OWN_ALLOWED = frozenset({"agent", "dsf_contract", "dsf_transport"})
#: Entries the interpreter adds itself: multiprocessing's alias of ``__main__``, the
#: platform's build configuration, and what Cython-compiled extensions register.
INTERPRETER_MADE = ("__main__", "__mp_main__", "_sysconfigdata_", "_cython_", "cython_runtime")

_LIST_LOADED = """
import importlib, json, pkgutil, sys
sys.path[:] = json.loads(sys.argv[1])
import agent
from agent_image.deps import _DenyExtras, import_agent
sys.meta_path.insert(0, _DenyExtras())
import_agent()
for info in pkgutil.iter_modules(agent.__path__, "agent."):
    importlib.import_module(info.name)
# agent_image.deps is this listing's tool, not the agent's (tests/test_layers.py holds
# that the agent imports nothing of it)
print(json.dumps(sorted(m for m in sys.modules if m.partition(".")[0] != "agent_image")))
"""


def loaded_by_the_agent() -> list[str]:
    done = subprocess.run(
        [sys.executable, "-S", "-c", _LIST_LOADED, json.dumps([str(REPO_ROOT), *sys.path])],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    modules: list[str] = json.loads(done.stdout.splitlines()[-1])
    return modules


def declared_distributions() -> set[str]:
    """The project's runtime requirements and, transitively, theirs (extras not taken)."""
    wanted = [DISTRIBUTION]
    found: set[str] = set()
    while wanted:
        name = wanted.pop()
        for text in importlib.metadata.requires(name) or ():
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
                continue  # an extra (test, optimize, mcp...) or another platform's
            key = requirement.name.lower().replace("_", "-")
            if key not in found:
                found.add(key)
                try:
                    importlib.metadata.distribution(key)
                except importlib.metadata.PackageNotFoundError:
                    continue
                wanted.append(key)
    return found


def test_the_agent_imports_only_itself_the_contract_and_its_dependencies() -> None:
    by_module = importlib.metadata.packages_distributions()
    declared = declared_distributions()
    outside: list[str] = []
    for module in loaded_by_the_agent():
        top = module.partition(".")[0]
        if top in sys.stdlib_module_names or top in OWN_ALLOWED or top.startswith(INTERPRETER_MADE):
            continue
        distributions = {d.lower().replace("_", "-") for d in by_module.get(top, ())}
        if distributions & declared:
            continue
        outside.append(f"{module} ({', '.join(sorted(distributions)) or 'no distribution'})")
    assert outside == [], "the agent loads modules outside itself and the contract:\n" + "\n".join(
        outside
    )


def test_the_compiler_is_outside_what_the_agent_may_load() -> None:
    # the check above would let the compiler through if its distribution were "declared"
    by_module = importlib.metadata.packages_distributions()
    assert DISTRIBUTION not in declared_distributions()
    assert DISTRIBUTION in {d.lower() for d in by_module.get("dsf_compile", ())}
    assert "dsf_compile" not in OWN_ALLOWED


def test_the_agent_does_not_load_prometheus_client() -> None:
    # /metrics is written by the agent itself (agent.textformat): prometheus_client's own
    # imports held 2.3 MiB of the agent's memory. Tests read the exposition with its parser.
    loaded = loaded_by_the_agent()
    assert "agent.metrics" in loaded and "agent.server" in loaded
    assert [m for m in loaded if m.partition(".")[0] == "prometheus_client"] == []


#: Starts the agent's modules and builds its models; prints whether package metadata was read.
_BUILD_THE_AGENTS_MODELS = """
import sys
import agent.__main__
from agent.config import parse_config_text
assert parse_config_text("[]").summaries == ()
print("importlib.metadata" in sys.modules)
"""


def test_the_agent_searches_no_package_metadata_for_pydantic_plugins() -> None:
    # pydantic's plugin search (importlib.metadata, zipfile, csv, every distribution's
    # metadata read) held about 0.8 MiB of the agent's memory
    env = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    done = subprocess.run(
        [sys.executable, "-c", _BUILD_THE_AGENTS_MODELS],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    assert done.stdout.strip() == "False"
