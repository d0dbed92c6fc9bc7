"""``render``'s cache protocol (``dsf_compile.commands.render_command``) and the CLI's command table."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from dsf_compile.commands import render_command
from dsf_compile.commands.cli import build_parser
from dsf_compile.commands.render_command import NOTHING_CHANGED, check, render
from dsf_compile.commands.table import COMMANDS
from dsf_compile.pipeline import render as pipeline
from dsf_compile.render import fastpath


def test_every_command_of_the_parser_has_a_handler() -> None:
    (commands,) = (
        action
        for action in build_parser()._actions
        if isinstance(action, argparse._SubParsersAction)
    )
    assert list(commands.choices) == [command.name for command in COMMANDS]


def test_a_render_remembers_and_the_next_one_takes_the_cache(fleet: Path) -> None:
    first = render(fleet)
    assert first.summary == "0 added, 0 changed, 0 removed"  # the committed tree is current
    assert fastpath.unchanged(fleet) == first.said
    again = render(fleet)
    assert again == render_command.Rendered(first.said, NOTHING_CHANGED)


def test_an_input_edited_while_rendering_is_not_vouched_for(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the inputs' digest is taken before the render: what changes meanwhile is a change
    real = pipeline.render_fleet
    scorer = fleet / "scorers" / "sample-scorer.yaml"

    def render_then_edit(root: Path, *, check: bool = False) -> pipeline.RenderResult:
        result = real(root, check=check)
        scorer.write_text(scorer.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
        return result

    monkeypatch.setattr(pipeline, "render_fleet", render_then_edit)
    render(fleet)
    assert fastpath.unchanged(fleet) is None


def test_a_check_compares_and_remembers_a_clean_tree(fleet: Path) -> None:
    assert fastpath.unchanged(fleet) is None  # no cache yet
    checked = check(fleet)
    assert checked.changes is not None and checked.changes.empty
    assert fastpath.unchanged(fleet) is not None
    assert check(fleet).changes is None  # the cache vouches now
    # with a hub state the caller needs the comparison itself: the cache is not asked
    compared = check(fleet, use_cache=False).changes
    assert compared is not None and compared.empty


def test_a_stale_check_is_not_remembered(fleet: Path) -> None:
    scorer = fleet / "scorers" / "sample-scorer.yaml"
    text = scorer.read_text(encoding="utf-8")
    scorer.write_text(text.replace("${node};${namespace};${pod}", "${node};${pod}"))
    checked = check(fleet)
    assert checked.changes is not None and not checked.changes.empty
    assert fastpath.unchanged(fleet) is None
