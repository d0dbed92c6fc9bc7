"""``python -m bench --quick``: every benchmark still runs and lands in the one table."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.fleet_repo import REPO_ROOT


@pytest.mark.integration
@pytest.mark.timeout(600)
def test_the_quick_benchmark_prints_one_table_with_every_group() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bench", "--quick"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0].startswith("machine: ")
    assert lines[1] == "| group | what | workload | figure | baseline | ratio | target | met |"
    rows = [line.split(" | ") for line in lines[3:] if line.startswith("| ")]
    assert {row[0].lstrip("| ") for row in rows} == {
        "render",
        "sync",
        "explain",
        "optimize",
        "agent",
        "commands",
        "shards",
        "validate",
        "backtest",
    }
    for row in rows:
        assert len(row) == 8 and row[3].strip()  # every row has a figure
