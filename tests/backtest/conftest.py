"""The day of history the backtest tests replay (:mod:`tests.backtest.history_data`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.backtest import history_data


@pytest.fixture(scope="module")
def day() -> tuple[int, int, list[dict[str, Any]]]:
    start, end = history_data.window()
    return start, end, history_data.series(start, end)


@pytest.fixture(scope="module")
def export_file(tmp_path_factory: pytest.TempPathFactory, day: Any) -> Path:
    path = tmp_path_factory.mktemp("history") / "history.jsonl"
    path.write_text(history_data.export_text(day[2]))
    return path
