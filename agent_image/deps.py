"""The distributions the agent's container image needs: what running the agent imports.

``agent/build-image.sh`` installs the project's wheel without its dependencies (the
compiler's scipy, mcp... stay out of the image, and its Containerfile removes the
compiler's own package) plus exactly the distributions printed here, pinned to the versions installed where it runs:

    python3 -m agent_image.deps            # one "name==version" per line
    python3 -m agent_image.deps --check    # in the image: every module the agent loads imports

The set is found, not listed by hand: the agent's modules are imported (those it imports
lazily too: the Kubernetes client) and the distributions of every module then
loaded are the answer. Libraries that import extras only when present (the Kubernetes
client's ``kubernetes_validate``, httpx's command line) are denied those extras first, so
the answer is what an image without them loads.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.abc
import importlib.metadata
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

#: Modules the agent imports only when a request needs them (``agent.kube``, ``publish``,
#: ``secrets``, ``config``: a YAML configuration file); the image must hold them all the same.
LAZY_IMPORTS = (
    "agent.__main__",
    "dsf_contract.bounded_yaml",
    "kubernetes.client",
    "kubernetes.client.exceptions",
    "kubernetes.config",
    "kubernetes.watch.watch",
)

#: Top-level modules that libraries of the agent import only if installed, and that the
#: agent never needs: kubernetes.dynamic's schema validation, httpx's ``httpx`` command,
#: httpcore's trio backend, oauthlib's signals.
OPTIONAL_EXTRAS = frozenset({"kubernetes_validate", "click", "pygments", "rich", "trio", "blinker"})


class _DenyExtras(importlib.abc.MetaPathFinder):
    """Makes the optional extras look absent, as they are in the image."""

    def find_spec(self, fullname: str, path: object = None, target: object = None) -> None:
        if fullname.partition(".")[0] in OPTIONAL_EXTRAS:
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)


def import_agent() -> list[ModuleType]:
    """Import every module the agent runs with."""
    modules = [importlib.import_module(name) for name in LAZY_IMPORTS]
    # httpx loads httpcore, anyio and h11 only when its transport is built (for https://
    # and behind a proxy; plain http:// goes through the agent's own transport).
    import httpx

    httpx.AsyncHTTPTransport()
    return modules


def loaded_distributions() -> dict[str, str]:
    """Distribution name -> installed version of every module loaded so far, the
    project's own distribution (installed from its wheel) excluded."""
    by_module = importlib.metadata.packages_distributions()
    own = set(by_module.get("agent", ()))
    found: dict[str, str] = {}
    for name in list(sys.modules):
        for dist in by_module.get(name.partition(".")[0], ()):
            if dist not in own:
                found[dist] = importlib.metadata.version(dist)
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def _discover() -> None:
    """In a fresh interpreter: import the agent with the extras denied, print what loaded."""
    sys.meta_path.insert(0, _DenyExtras())
    import_agent()
    print(json.dumps(loaded_distributions()))


def runtime_distributions() -> dict[str, str]:
    """What :func:`loaded_distributions` finds after importing the agent in a fresh
    interpreter started without ``site`` (``-S``): the ``.pth`` files a site runs at start
    load modules of their own (setuptools' distutils hook, certifi...), which would hide
    or add to the agent's. The caller's ``sys.path`` is kept, the project's root first."""
    root = str(Path(__file__).resolve().parents[1])
    code = (
        "import json, sys; sys.path[:] = json.loads(sys.argv[1]); "
        "from agent_image.deps import _discover; _discover()"
    )
    done = subprocess.run(
        [sys.executable, "-S", "-c", code, json.dumps([root, *sys.path])],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found: dict[str, str] = json.loads(done.stdout.splitlines()[-1])
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m agent_image.deps", description=__doc__)
    parser.add_argument(
        "--check", action="store_true", help="only import what the agent runs with (in the image)"
    )
    args = parser.parse_args(argv)
    if args.check:
        import_agent()
        print("agent imports: ok")
        return 0
    for dist, version in runtime_distributions().items():
        print(f"{dist}=={version}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
