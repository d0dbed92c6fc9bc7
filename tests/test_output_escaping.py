"""What the compiler prints of text it did not write: escaped for the format it prints in.

The escaping functions one by one, then whole commands (a subprocess, as a user runs
them) against a hostile snapshot of the hub and a hostile committed ``rendered/``: no
C0 or C1 control character reaches stdout or stderr but the line breaks the compiler
writes, and in Markdown nothing of theirs ends a table row or starts a heading.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from dsf_contract.escaping import (
    code_fence,
    github_message,
    github_property,
    json_text,
    markdown,
    terminal,
    terminal_lines,
)
from dsf_contract.problem import Problem
from tests.fleet_repo import copy_fleet, run_command

AT = "2026-11-22T10:00:00Z"
HOSTILE = "ok\x1b[2J\x1b]8;;https://evil.example\x1b\\link\x9b1m\u202e\r\n# Approved by @security-team | x |"
#: Control characters other than the line break (C0, DEL and C1).
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f]")


# ------------------------------------------------------------------ functions


def test_terminal_keeps_one_printable_line() -> None:
    shown = terminal(HOSTILE)
    assert shown.isprintable()
    assert shown.startswith(
        "ok\\x1b[2J\\x1b]8;;https://evil.example\\x1b\\link\\x9b1m\\u202e\\r\\n#"
    )
    assert terminal("worker01 ✓ ünïcode") == "worker01 ✓ ünïcode"
    assert terminal_lines("a\x1b\nb\x07") == "a\\x1b\nb\\x07"


@pytest.mark.parametrize(
    "text",
    [
        HOSTILE,
        "[click](https://evil.example)",
        "![x](y)",
        "<img src=x>",
        "`code`",
        "www.evil.example",
    ],
)
def test_markdown_cannot_end_a_row_or_open_anything(text: str) -> None:
    cell = markdown(text)
    assert "\n" not in cell and "\r" not in cell and cell.isprintable()
    # every character Markdown acts on is behind a backslash
    for special in "|`[]<>!@#&:*_~$":
        assert re.search(rf"(?<!\\)(\\\\)*{re.escape(special)}", cell) is None, (special, cell)
    assert "www\\." in markdown("www.evil.example")


def test_a_code_fence_is_longer_than_any_backtick_run_of_its_content() -> None:
    block = code_fence("a\n````\n```\nb\x1b\n", "diff")
    assert block.startswith("`````diff\n") and block.endswith("\n`````\n")
    assert "\x1b" not in block and "b\\x1b" in block


def test_github_workflow_commands_are_encoded_as_the_runner_decodes_them() -> None:
    assert github_message("50%\r\nnext") == "50%25%0D%0Anext"
    assert github_property("a,b:c%") == "a%2Cb%3Ac%25"
    problem = Problem("scorers/a,line=1::x.yaml", 3, 4, "spec.x", "bad\n::error::forged")
    line = problem.format_github()
    assert line == (
        "::error file=scorers/a%2Cline=1%3A%3Ax.yaml,line=3,col=4::spec.x: bad%0A::error::forged"
    )
    assert "\n" not in Problem("a.yaml", 1, 1, "f", "x\n\x1b[2J").format()


def test_json_text_escapes_what_json_dumps_leaves_raw() -> None:
    value = {"reason": "a\x1b\x9b\u202e\u2028b"}
    encoded = json_text(json.dumps(value, ensure_ascii=False, indent=2))
    assert encoded.isascii() and json.loads(encoded) == value


# ------------------------------------------------------------ whole commands


def command(root: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    result = run_command(root, *argv)
    return result


def assert_no_control_bytes(*texts: str) -> None:
    for text in texts:
        found = _CONTROL.search(text)
        assert found is None, (found, text[max(0, found.start() - 80) : found.end() + 80])
        assert "\u202e" not in text and "\u2028" not in text


@pytest.fixture
def hostile_hub(tmp_path: Path) -> Path:
    """The example fleet with a snapshot whose failing-score condition is hostile."""
    root = copy_fleet(tmp_path / "fleet")
    snapshot = root / "snapshots/addonplacementscores.yaml"
    text = snapshot.read_text(encoding="utf-8")
    condition = json.dumps(
        [{"type": "ScoresAvailable", "status": "False", "reason": HOSTILE, "message": HOSTILE}]
    )
    old = '      validUntil: "2026-11-24T00:00:00Z"\n'
    assert old in text
    snapshot.write_text(
        text.replace(old, old + f"      conditions: {condition}\n"), encoding="utf-8"
    )
    return root


@pytest.mark.parametrize("style", ["text", "markdown", "json"])
def test_explain_prints_a_hostile_hub_condition_escaped(hostile_hub: Path, style: str) -> None:
    scores = str(hostile_hub / "snapshots")
    result = command(hostile_hub, "explain", "--scores", scores, "--at", AT, "--format", style)
    assert result.returncode == 0, result.stderr
    assert_no_control_bytes(result.stdout, result.stderr)
    assert "failing on cluster" in result.stdout
    if style == "json":
        document = json.loads(result.stdout)
        warnings = [w for p in document["placements"] for w in p["warnings"]]
        assert any(HOSTILE in w for w in warnings)  # the same value, only escaped
    if style == "markdown":
        assert not any(line.startswith("# ") for line in result.stdout.splitlines())
        assert "\\# Approved by \\@security-team \\| x \\|" in result.stdout
        for line in result.stdout.splitlines():
            assert not line.startswith("|") or line.endswith("|"), line


def test_a_hostile_committed_file_is_shown_escaped_in_both_diff_formats(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    target = root / "rendered/hub/dynamicscorers/sample-scorer.yaml"
    target.write_text(
        target.read_text(encoding="utf-8") + "# \x1b[2J\x9b31m\n```\n</details>\n# Approved\n",
        encoding="utf-8",
    )
    scores = str(root / "snapshots")
    text = command(root, "diff", "--scores", scores, "--at", AT)
    assert text.returncode == 1
    assert_no_control_bytes(text.stdout, text.stderr)
    assert "-# \\x1b[2J\\x9b31m" in text.stdout
    md = command(root, "diff", "--format", "markdown", "--scores", scores, "--at", AT)
    assert md.returncode == 1
    assert_no_control_bytes(md.stdout, md.stderr)
    lines = md.stdout.splitlines()
    opening = next(i for i, line in enumerate(lines) if re.fullmatch("`{3,}diff", line))
    fence = lines[opening].removesuffix("diff")
    assert len(fence) >= 4  # longer than the ``` inside the file
    closing = lines.index(fence, opening + 1)
    assert "-```" in lines[opening:closing] and "-# Approved" in lines[opening:closing]
