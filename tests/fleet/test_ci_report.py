"""The report's text: what the inputs put in it is escaped, the cut keeps it well formed,
and the annotations are workflow commands nothing in a message can break out of."""

from __future__ import annotations

import re

from dsf_compile.ci.report import COMMENT_LIMIT, MARKER, cut, report
from dsf_compile.ci.steps import Outcome
from dsf_contract.problem import Problem

HOSTILE = Problem("scorers/x`<b>`.yaml", 3, 5, "spec.a|b", "<img src=x> | `x`\n::error::forged")


def test_what_the_inputs_say_is_escaped() -> None:
    text = report([Outcome("validate", "failed", "1 error(s) <b>", [HOSTILE])])
    assert text.startswith(MARKER + "\n## dsf-compile: ❌ `validate` fails")
    rest = text.removeprefix(MARKER)
    assert not re.findall(r"(?<!\\)[<>]", rest)
    (listed,) = [line for line in rest.splitlines() if line.startswith("- error")]
    assert not re.findall(r"(?<!\\)`", listed), listed
    assert "\n::error::forged" not in text


def test_an_annotation_stays_one_command() -> None:
    line = HOSTILE.format_github("validate: ")
    assert line.startswith("::error file=scorers/x`<b>`.yaml,line=3,col=5::validate: spec.a|b: ")
    assert "\n" not in line and "%0A::error::forged" in line
    assert Problem(".", 0, 0, "", "down").format_github("backtest: ") == "::error::backtest: down"
    info = Problem("a.yaml", 0, 0, "", "x", "info").format_github("validate: ")
    assert info == "::notice file=a.yaml::validate: x"


def test_the_cut_closes_an_open_code_block_and_says_where_the_rest_is() -> None:
    body = "head\n" + "````diff\n" + "+ line\n" * 20_000 + "````\n"
    shown = cut(body, COMMENT_LIMIT, "the job summary of RUN")
    assert len(shown) <= COMMENT_LIMIT < len(body)
    assert shown.count("\n````") == 2 and "\n````\n\n\n**Cut at 65,536 characters" in shown
    assert shown.endswith("the whole report is in the job summary of RUN.**\n")
    assert cut("short\n", COMMENT_LIMIT, "x") == "short\n"
