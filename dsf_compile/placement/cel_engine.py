"""The CEL interpreter's compiled core, loaded without its package's command-line tool.

``common-expression-language``'s ``cel/__init__.py`` imports its interactive shell
(typer, prompt_toolkit, rich: about 0.2 s) before the interpreter, and every command that
checks a Placement would pay for it. The interpreter is the extension module ``cel.cel``
alone: load that file and register it under its own name, so that a later ``import cel``
reuses it (a PyO3 module is initialised once per process).

Loading that extension costs tens of milliseconds, so it is loaded on first use
(``cel_engine.engine``), not on import: ``validate`` of a fleet whose Placements hold no
CEL expression never loads it.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

_NAME = "cel.cel"


def _load() -> ModuleType:
    # The interpreter logs every failing Python function through ``logging`` (and Python's
    # last-resort handler would print it): an evaluation error is an expected outcome here.
    import logging

    logging.getLogger("cel").addHandler(logging.NullHandler())
    logging.getLogger("cel").propagate = False
    loaded = sys.modules.get(_NAME)
    if loaded is not None:
        return loaded
    package = importlib.util.find_spec("cel")  # a top-level spec: nothing is executed
    for folder in (package.submodule_search_locations or ()) if package else ():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            spec = importlib.util.spec_from_file_location(_NAME, Path(folder) / f"cel{suffix}")
            if spec is None or spec.loader is None or not Path(str(spec.origin)).is_file():
                continue
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[_NAME] = module
            return module
    # Another layout of the package: the ordinary import, shell and all.
    return importlib.import_module(_NAME)


__all__ = ["engine"]

if TYPE_CHECKING:
    import cel as engine  # the package's stubs type the loaded module
else:

    def __getattr__(name: str) -> ModuleType:
        """``engine``, loaded the first time it is asked for (PEP 562), then kept."""
        if name != "engine":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        loaded = globals()["engine"] = _load()
        return loaded
