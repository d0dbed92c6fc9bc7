"""Fixtures shared by the compiler's tests, and the guard that keeps them off the top-level fleet."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.fleet_repo import REPO_ROOT, TOP_LEVEL_FLEET, copy_fleet
from tests.podman_images import podman_environment

if TYPE_CHECKING:
    from tests.hub_kube import HubKube

#: The top-level fleet's paths, as an absolute path names them: a fork edits, grows or
#: replaces that fleet, so no test may read it (tests/fixtures/example-fleet is the tests').
_FORBIDDEN = tuple(str(REPO_ROOT / name) for name in TOP_LEVEL_FLEET)
_READS = {"open", "os.listdir", "os.scandir"}


def _top_level_fleet_guard(event: str, args: tuple[object, ...]) -> None:
    """An audit hook: opening or listing the top-level fleet fails the test that does it."""
    if event not in _READS or not args:
        return
    path = args[0]
    if not isinstance(path, str | os.PathLike) or not os.path.isabs(path):
        return  # a descriptor, or a name relative to one (dir_fd): never the top level
    text = os.fspath(path)
    if isinstance(text, str) and any(
        text == forbidden or text.startswith(forbidden + os.sep) for forbidden in _FORBIDDEN
    ):
        raise PermissionError(
            f"a test read the top-level fleet ({text}): read tests/fixtures/example-fleet "
            "(tests.fleet_repo.EXAMPLE_FLEET or copy_fleet) instead"
        )


sys.addaudithook(_top_level_fleet_guard)


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The example fleet in a temporary folder, rendered/ included."""
    return copy_fleet(tmp_path / "fleet")


@pytest.fixture
def hub() -> Iterator[HubKube]:
    """An emulated hub serving ManagedClusters (a module may define its own ``hub``)."""
    from tests.hub_kube import HubKube

    fake = HubKube()
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(scope="module")
def podman_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """podman's environment with this module's own ``containers.conf``; skips without podman."""
    return podman_environment(tmp_path_factory.mktemp("podman"))
