"""One wording of pydantic's errors for every reader (``dsf_contract/validation_errors.py``):
the inputs, the lockfile, a scorer's ``/config`` answer, a hub object and the agent's
configuration say the same mistake the same way, chosen by pydantic's error type."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.config import parse_config_document
from dsf_compile.placement.verify import unreadable_reason
from dsf_compile.sync.lock import LOCKFILE, read_lockfile
from dsf_contract.scoring_api import ScorerConfig
from dsf_contract.summary import Summary
from dsf_contract.validation_errors import MESSAGES, described, error_message, first_error
from tests.agent.conftest import make_summary


def test_the_lockfile_words_its_errors_as_the_inputs_do(tmp_path: Path) -> None:
    (tmp_path / LOCKFILE).write_text(json.dumps({"version": 1, "scorers": {"a": {"mode": 3}}}))
    _, problems = read_lockfile(tmp_path)
    said = {p.field: p.message for p in problems}
    assert said["scorers.a.mode"] == "must be one of: Full, None; run 'dsf-compile sync'"
    assert said["scorers.a.configURL"] == "required field is missing; run 'dsf-compile sync'"


def test_the_agent_words_a_bad_summary_as_the_compiler_does() -> None:
    parsed = parse_config_document([make_summary(scoreName=7, extra=1)])
    assert parsed.summaries == ()
    (problem,) = parsed.problems
    assert "scoreName: must be a string" in problem
    assert "extra: unknown field" in problem


def test_a_scorer_answer_and_a_hub_object_share_the_wording() -> None:
    with pytest.raises(ValidationError) as caught:
        ScorerConfig.model_validate({"source": {"params": {"range": "3600"}}})
    assert first_error(caught.value) == "source.params.range: must be an integer"
    assert unreadable_reason(caught.value) == "source.params.range: must be an integer"


def test_an_error_about_the_whole_document_names_it() -> None:
    with pytest.raises(ValidationError) as caught:
        Summary.model_validate([])
    (error,) = caught.value.errors()
    assert described(error) == "(document): must be a mapping"


def test_the_kind_of_an_error_is_its_type_never_its_text() -> None:
    error = {"type": "missing", "loc": ("a",), "msg": "some other words", "input": {}}
    assert error_message(error) == "required field is missing"
    assert "missing" in MESSAGES
