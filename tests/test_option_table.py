"""The option table: each option defined once (a command giving it another role says so
with ``where``), a PATH or folder value completes file names, and one parser per kind of time."""

from __future__ import annotations

import argparse
import ast
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

import dsf_compile.commands
from dsf_compile.commands.cli import build_parser
from dsf_compile.commands.parser import COMPLETION_ATTRIBUTE, Completion, moment
from dsf_compile.errors import UsageError
from dsf_compile.times import parse_moment, window_bound

COMMANDS_DIR = Path(dsf_compile.commands.__file__).parent


def _defined_flags() -> Counter[str]:
    """Each ``Option("--flag", …)`` and ``add_argument("--flag", …)`` of ``commands/``."""
    found: Counter[str] = Counter()
    for source in COMMANDS_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.Call) and node.args):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            flag = getattr(node.args[0], "value", None)
            if name in ("Option", "add_argument") and isinstance(flag, str):
                found.update([flag] if flag.startswith("--") and flag != "--version" else [])
    return found


def test_each_option_is_defined_once() -> None:
    flags = _defined_flags()
    assert {"--decisions", "--hub-kubeconfig", "--scores", "--at", "--root"} <= set(flags)
    assert [flag for flag, count in flags.items() if count > 1] == []


def _actions(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.Action]]:
    out = [(parser.prog, action) for action in parser._actions]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _actions(sub)
    return out


def test_every_path_or_folder_value_completes_file_names() -> None:
    for prog, action in _actions(build_parser()):
        metavar = str(action.metavar or "")
        completion = getattr(action, COMPLETION_ATTRIBUTE, None)
        if "PATH" in metavar:
            assert completion is Completion.FILE, (prog, action.option_strings, metavar)
        elif metavar == "DIR":
            assert completion is Completion.DIRECTORY, (prog, action.option_strings)
        else:
            assert completion is None, (prog, action.option_strings, metavar)


def test_one_time_parser_with_its_two_variants() -> None:
    """``--at`` is RFC 3339 only; a backtest bound is RFC 3339 or a duration back from now."""
    now = datetime(2026, 11, 22, 10, tzinfo=UTC)
    assert moment("2026-11-22T10:00:00Z") == now == parse_moment("2026-11-22T12:00:00+02:00")
    with pytest.raises(argparse.ArgumentTypeError, match="not an RFC 3339 time"):
        moment("7d")
    assert window_bound("2026-11-22T10:00:00Z", now) == int(now.timestamp())
    assert window_bound("36h", now) == int(now.timestamp()) - 36 * 3600
    for wrong in ("7 days", "99999999w", "0001-01-01T00:00:00Z"):
        with pytest.raises(UsageError):
            window_bound(wrong, now)
