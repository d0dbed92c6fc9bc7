"""Fixtures shared by the Placement tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fleet_repo import copy_fleet


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A copy of the example fleet's repository (a module may define its own)."""
    return copy_fleet(tmp_path / "fleet")
