"""The registry of ``validate``'s checks of ``placements/`` is what runs them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench.validate_bench import generate_fleet
from dsf_compile.pipeline.inputs import load_inputs
from dsf_compile.placement import checks
from dsf_compile.placement.published_scores import score_catalog

AT = datetime(2026, 11, 22, tzinfo=UTC)


def test_each_check_has_one_name_and_says_what_it_checks_in_one_line() -> None:
    names = [check.name for check in checks.CHECKS]
    assert len(names) == len(set(names))
    for check in checks.CHECKS:
        assert check.name == check.name.lower() and " " not in check.name
        assert check.what and "\n" not in check.what


def test_leaving_a_check_out_of_the_registry_leaves_out_its_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "fleet"
    generate_fleet(root, 40, 4, 8)
    inputs = load_inputs(root)
    catalog = score_catalog(inputs, None)
    _, warnings = checks.check_placements(inputs, catalog, AT)
    masked = [w for w in warnings if " is masked on " in w.message]
    assert masked  # the generated fleet masks scores

    kept = tuple(c for c in checks.CHECKS if c.name != "masked-scores")
    monkeypatch.setattr(checks, "CHECKS", kept)
    _, without = checks.check_placements(inputs, catalog, AT)
    assert without == [w for w in warnings if w not in masked]
