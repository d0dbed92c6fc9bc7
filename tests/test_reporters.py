"""The one table of output formats: every reporter of ``REPORTER_BY_NAME`` prints every
result type, each in its own format, and JSON holds the result as data (no text parsed back)."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from dsf_compile.backtest.report import Report, Window, format_markdown, format_text
from dsf_compile.commands.reporters import REPORTER_BY_NAME, Reporter, reporter_for
from dsf_compile.placement.verify import Outcome, Verdict, Verification
from dsf_compile.render.changes import Changes
from dsf_compile.render.changes_text import changes_markdown, changes_text
from dsf_contract.problem import Problem

AT = datetime(2026, 11, 22, tzinfo=UTC)
CHANGES = Changes(added={"hub/a.yaml": "kind: ConfigMap\nmetadata:\n  name: a\n"})
VERIFICATION = Verification((Verdict("default/gpu", Outcome.DIFFER, ("replay a; hub b",)),))
REPORT = Report(Window(0, 3600, 300, 12), "history.jsonl", ("a note",), ())
PROBLEM = Problem("scorers/a.yaml", 3, 5, "spec.x", "bad")


def run(reporter: Reporter, result: str) -> None:
    """Hand ``reporter`` one result of each type by name."""
    if result == "changes":
        reporter.changes(CHANGES, None)
    elif result == "unchanged":
        reporter.changes(None, None)
    elif result == "explanation":
        reporter.explanation([], AT)
    elif result == "verification":
        reporter.verification(VERIFICATION)
    else:
        reporter.backtest(REPORT)


def printed(name: str, result: str) -> tuple[str, str]:
    """stdout and stderr of the ``name`` reporter over one result, problems included."""
    out, err = io.StringIO(), io.StringIO()
    reporter = REPORTER_BY_NAME[name]("cmd", out, err)
    reporter.problems([PROBLEM])
    run(reporter, result)
    reporter.close(0)
    return out.getvalue(), err.getvalue()


RESULTS = ("changes", "unchanged", "explanation", "verification", "backtest")


@pytest.mark.parametrize("name", sorted(REPORTER_BY_NAME))
@pytest.mark.parametrize("result", RESULTS)
def test_every_format_prints_every_result_type(name: str, result: str) -> None:
    out, err = printed(name, result)
    if name == "json":
        document: dict[str, Any] = json.loads(out)
        assert document["problems"][0]["field"] == "spec.x" and err == ""
        keys = {
            "changes": {"stale", "changes"},
            "unchanged": {"stale", "changes"},
            "explanation": {"at", "placements"},
            "verification": {"placements", "unreadableClusters", "summary"},
            "backtest": {"from", "to", "step", "steps", "placements"},
        }[result]
        assert keys <= set(document), document
        return
    annotation = "::error file=scorers/a.yaml,line=3,col=5::spec.x: bad"
    expected_problem = annotation if name == "github" else "scorers/a.yaml:3:5: error: spec.x: bad"
    assert expected_problem in err
    if result == "unchanged" and name != "markdown":
        assert out == ""
    elif result != "verification":
        assert out, (name, result)


@pytest.mark.parametrize("name", ["text", "github", "markdown"])
def test_each_text_like_format_prints_its_own_words(name: str) -> None:
    markdown = name == "markdown"
    assert printed(name, "changes")[0] == (changes_markdown if markdown else changes_text)(CHANGES)
    assert printed(name, "backtest")[0] == (format_markdown if markdown else format_text)(REPORT)
    explained = printed(name, "explanation")[0]
    assert explained.startswith("Placements at `" if markdown else "at 2026-11-22T00:00:00Z")
    assert printed(name, "unchanged")[0] == (changes_markdown(Changes()) if markdown else "")


def test_verify_prints_drifts_on_stdout_and_the_summary_on_stderr() -> None:
    out, err = printed("text", "verification")
    assert out == "placement default/gpu differs from the hub:\n  replay a; hub b\n"
    assert "dsf-compile: 1 of 1 Placement differ from the hub's decisions" in err


def test_markdown_under_github_actions_annotates_problems_and_keeps_markdown() -> None:
    out, err = io.StringIO(), io.StringIO()
    reporter = reporter_for("markdown", "diff", out, err, {"GITHUB_ACTIONS": "true"})
    reporter.problems([PROBLEM])
    reporter.changes(CHANGES, None)
    assert err.getvalue().startswith("::error file=scorers/a.yaml,line=3,col=5::")
    assert out.getvalue() == changes_markdown(CHANGES)


def test_a_problem_about_no_file_or_line_is_annotated_without_them() -> None:
    assert Problem("", 0, 0, "", "down").format_github() == "::error::down"
    assert Problem("a.yaml", 0, 0, "", "x", "warning").format_github() == "::warning file=a.yaml::x"
