"""No pydantic plugin in a program of ours, and no search for one.

pydantic looks for plugins in every installed package's metadata before it builds the
first model (a tenth of ``dsf-compile validate``'s time; in the agent, memory it keeps:
``importlib.metadata``, ``zipfile``, ``csv`` and what the search reads, about 0.8 MiB of
an agent meant to stay under 40). Neither the compiler nor the agent has a use for a
plugin, and what they check must not depend on what else is installed. Both call
:func:`without_pydantic_plugins` before their first model is built.
"""

from __future__ import annotations

import os
import sys
import types

#: The values of ``PYDANTIC_DISABLE_PLUGINS`` with which pydantic loads no plugin at all.
NO_PLUGINS = ("__all__", "1", "true")
#: pydantic's plugin loader, imported when it builds its first model.
PLUGIN_LOADER = "pydantic.plugin._loader"


def without_pydantic_plugins() -> None:
    """Turn every pydantic plugin off, unless a setting says otherwise (an explicit
    setting still wins). With every plugin off, pydantic still imports its loader, and
    with it ``importlib.metadata`` (email, zipfile, socket: a tenth of ``validate``
    again), only to return nothing: the loader is replaced by one that returns nothing
    without them, when pydantic has not loaded it yet.
    """
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    if os.environ["PYDANTIC_DISABLE_PLUGINS"] in NO_PLUGINS and PLUGIN_LOADER not in sys.modules:
        loader = types.ModuleType(PLUGIN_LOADER, "pydantic's plugin loader, with plugins off")
        loader.get_plugins = no_plugins  # type: ignore[attr-defined]
        sys.modules[PLUGIN_LOADER] = loader


def no_plugins() -> tuple[()]:
    """What pydantic's ``get_plugins`` returns with every plugin disabled."""
    return ()
