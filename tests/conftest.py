"""Fixtures shared by the compiler's tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fleet_repo import copy_fleet


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """The example fleet in a temporary folder, rendered/ included."""
    return copy_fleet(tmp_path / "fleet")
