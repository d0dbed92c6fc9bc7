"""The registry of bad-input checks: every row names a real check, each once, in stage order."""

from __future__ import annotations

import importlib

from dsf_compile.inputs.checks import CHECKS, Stage, cross_file_checks


def test_every_named_check_exists_and_runs_where_its_stage_says() -> None:
    for check in CHECKS:
        if check.stage is Stage.CROSS_FILE:
            assert callable(check.run), check.name
            continue
        assert isinstance(check.run, str), check.name
        module, _, function = check.run.partition(":")
        assert callable(getattr(importlib.import_module(module), function)), check.name


def test_names_are_unique_and_rows_follow_the_pipeline() -> None:
    names = [check.name for check in CHECKS]
    assert len(names) == len(set(names))
    order = list(Stage)
    stages = [order.index(check.stage) for check in CHECKS]
    assert stages == sorted(stages)
    assert all(check.what and "\n" not in check.what for check in CHECKS)


def test_validate_runs_every_cross_file_check() -> None:
    # each cross-file rule is a function of the registry's: none is called beside it
    import dsf_compile.inputs.cross_file as cross_file

    listed = {check.run for check in cross_file_checks()}
    public = {
        getattr(cross_file, name)
        for name in dir(cross_file)
        if name.startswith("check_")
        and callable(getattr(cross_file, name))
        and getattr(cross_file, name).__module__ == cross_file.__name__
    }
    assert public == listed
