"""The one httpx internal the project names, held to the httpx range it is tested with.

``dsf_transport/__init__.py`` (imported first by the agent and by sync) keeps httpx's
command line (``httpx._main``: click, rich, pygments, about 6 MB of resident memory) from
loading where those happen to be installed. That name is httpx's own, not its API:
``pyproject.toml`` pins the range it is tested with, and these tests fail when an httpx
in that range moves it.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib.metadata import version
from pathlib import Path

import httpx
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]


def test_the_installed_httpx_is_in_the_pinned_range() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (pin,) = (
        Requirement(text)
        for text in project["project"]["dependencies"]
        if Requirement(text).name == "httpx"
    )
    assert pin.specifier.contains(version("httpx")), f"httpx {version('httpx')} outside {pin}"
    assert pin.specifier.contains("1.0") is False  # no open-ended range over a new major


def test_httpx_still_imports_its_command_line_by_that_name() -> None:
    source = Path(httpx.__file__).read_text(encoding="utf-8")
    assert "from ._main import main" in source
    assert "except ImportError" in source  # what lets the agent leave it out


def test_the_agent_leaves_httpx_s_command_line_out() -> None:
    probe = (
        "import sys, agent, httpx; "
        "print(sys.modules.get('httpx._main', 'missing') is None, "
        "[name for name in ('click', 'rich', 'pygments') if name in sys.modules])"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert done.stdout.split(None, 1) == ["True", "[]\n"]
