"""``dsf-mcp``'s ``at`` argument at both ends of what RFC 3339 allows: clamped, never a crash.

The tool parses ``at`` with the same function as ``--at`` (``dsf_contract.fields.parse_time``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.fleet_repo import copy_fleet
from tests.placement.mcp_session import session_run, structured


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_explain_placement_clamps_an_at_beyond_the_range(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    _, results = asyncio.run(
        session_run(
            root,
            [
                ("explain_placement", {"at": "9999-12-31T23:59:59-14:00"}),
                ("explain_placement", {"at": "0001-01-01T00:00:00+14:00"}),
            ],
        )
    )
    late, early = (structured(result) for result in results)
    assert late["at"] == "9999-12-31T23:59:59.999999Z"
    assert early["at"] == "0001-01-01T00:00:00Z"
    assert late["placements"] and early["placements"]
