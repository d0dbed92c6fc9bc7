"""The command-line contract of ``overview.md``: --version, global options on either side
of the command, --format per command (json records), the repository found upward,
--help with a description and an example, completion, colour only on a terminal, and
errors caught where they are made (``validate``, ``explain``)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from dsf_compile.commands.call import NO_SCORES_WARNING
from dsf_compile.commands.cli import run
from dsf_compile.commands.table import COMMANDS
from dsf_contract import __version__

AT = "2026-11-22T10:00:00Z"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def cli(*argv: str, err: io.StringIO | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    code = run(list(argv), out, err)
    return code, out.getvalue(), err.getvalue()


def break_a_scorer(fleet: Path) -> None:
    """One error in the example: ``spec.description`` read as a date."""
    scorer = fleet / "scorers/sample-scorer.yaml"
    text = scorer.read_text()
    scorer.write_text(
        text.replace("description: A sample scorer for time series data", "description: 2024-01-01")
    )


# ------------------------------------------------------------------------ --version


@pytest.mark.parametrize(
    ("program", "entry"),
    [
        ("dsf-compile", "from dsf_compile.commands.cli import main; main()"),
        ("dsf-agent", "from agent.__main__ import main; main()"),
        ("dsf-mcp", "from dsf_compile.commands.mcp_server import main; raise SystemExit(main())"),
    ],
)
def test_every_program_has_version(program: str, entry: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", entry, "--version"],
        capture_output=True,
        text=True,
        check=False,
        env={"PATH": "/usr/bin:/bin"},  # dsf-agent's required flags have variables: none set
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, f"{program} {__version__}\n", "")


# ------------------------------------------------------- global options, either side


def test_global_options_are_accepted_after_the_command(fleet: Path) -> None:
    before = cli("--root", str(fleet), "validate")
    assert before[0] == 0
    assert cli("validate", "--root", str(fleet)) == before
    github = cli("--root", str(fleet), "--format", "github", "validate")
    assert cli("validate", "--format", "github", "--root", str(fleet)) == github
    assert github[2].startswith("::notice file=placements/gpu-apps/policies.yaml,line=4,col=1::")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("render", "--format", "markdown"), "argument --format: invalid choice: 'markdown'"),
        (("--format", "markdown", "validate"), "validate: --format markdown: choose from"),
        (("optimize", "--format", "json"), "argument --format: invalid choice: 'json'"),
    ],
)
def test_format_has_the_choices_of_its_command(
    fleet: Path, argv: tuple[str, ...], message: str
) -> None:
    code, _, err = cli("--root", str(fleet), *argv)
    assert code == 2
    assert message in err


# ------------------------------------------------------------- the repository, upward


@pytest.mark.parametrize("folder", ["scorers", "rendered/clusters/worker01", "."])
def test_the_repository_is_found_from_a_subfolder(
    fleet: Path, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = cli("--root", str(fleet), "validate")
    monkeypatch.chdir(fleet / folder)
    assert cli("validate") == expected


def test_outside_any_repository_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("validate")
    assert (code, out) == (2, "")
    assert err == (
        "dsf-compile: error: not in a dsf repository: no dsf.yaml, nor scorers/ and "
        f"clusters/, in {tmp_path} or any folder above it (run it inside one, or give --root DIR)\n"
    )


def test_commands_that_need_no_repository_run_anywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = cli("completion", "bash")
    assert code == 0 and "dsf-compile" in out


# ------------------------------------------------------------------- --format json


def test_validate_json_lists_problems_as_records(fleet: Path) -> None:
    code, out, err = cli("--root", str(fleet), "validate", "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert (document["command"], document["ok"]) == ("validate", True)
    assert (document["scorers"], document["clusters"]) == (5, 3)
    assert document["problems"][0] == {
        "path": "placements/gpu-apps/policies.yaml",
        "line": 4,
        "column": 1,
        "severity": "info",
        "field": "kind",
        "message": document["problems"][0]["message"],
    }
    break_a_scorer(fleet)
    code, out, err = cli("--root", str(fleet), "validate", "--format", "json")
    assert (code, err) == (1, "")
    document = json.loads(out)
    assert document["ok"] is False
    errors = [p for p in document["problems"] if p["severity"] == "error"]
    assert [(p["path"], p["field"]) for p in errors] == [
        ("scorers/sample-scorer.yaml", "spec.description")
    ]
    assert errors[0]["line"] > 0 and errors[0]["column"] > 0


def test_diff_and_render_check_json_list_the_changes(fleet: Path) -> None:
    code, out, _ = cli("--root", str(fleet), "diff", "--format", "json")
    assert code == 0
    assert json.loads(out) | {"problems": []} == {
        "command": "diff",
        "ok": True,
        "problems": [],
        "stale": False,
        "changes": [],
    }
    scorer = fleet / "scorers/sample-scorer.yaml"
    scorer.write_text(scorer.read_text().replace('"${node};${namespace};${pod}"', '"${node}"'))
    for argv in (("diff", "--format", "json"), ("render", "--check", "--format", "json")):
        code, out, err = cli("--root", str(fleet), *argv)
        assert (code, err) == (1, "")
        document = json.loads(out)
        assert document["stale"] is True
        assert {"path", "change", "object"} == set(document["changes"][0])
        assert {c["change"] for c in document["changes"]} == {"changed"}
        assert all(c["path"].startswith("rendered/") for c in document["changes"])


def test_sync_json_says_what_it_learned(fleet: Path) -> None:
    # every scorer's host sent to a closed port on loopback: Inactive, at once
    hosts = sorted(
        line.split("//", 1)[1].split("/", 1)[0]
        for scorer in (fleet / "scorers").glob("*.yaml")
        for line in scorer.read_text().splitlines()
        if line.strip().startswith("configURL:")
    )
    resolve = [arg for host in hosts for arg in ("--resolve", f"{host}:127.0.0.1:1")]
    code, out, _ = cli(
        "--root", str(fleet), "sync", "--format", "json", "--allow-mass-failure", *resolve
    )
    document = json.loads(out)
    assert (code, document["command"], document["lockfile"]) == (0, "sync", "updated")
    assert (document["active"], len(document["inactive"])) == (0, 5)
    assert {p["severity"] for p in document["problems"]} == {"warning"}


# ----------------------------------------------------------------- --help, completion


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
def test_every_command_help_has_a_description_and_an_example(command: str) -> None:
    code, out, _ = cli(command, "--help")
    assert code == 0
    usage, description, *_ = out.split("\n\n")
    assert usage.startswith(f"usage: dsf-compile {command}")
    assert len(description.split()) >= 8
    example = out.split("\nexample:\n", 1)[1]
    assert example.lstrip().startswith(f"dsf-compile {command}")


def test_completion_scripts() -> None:
    code, bash, _ = cli("completion", "bash")
    assert code == 0
    assert "validate" in bash and "--format" in bash
    for shell in ("zsh", "fish"):
        code, text, _ = cli("completion", shell)
        assert code == 0 and "scorer-check" in text
    assert cli("completion", "tcsh")[0] == 2  # each shell's own check: tests/test_completion.py


# ------------------------------------------------------------------------- colour


def test_colour_only_on_a_terminal_and_never_with_no_color(
    fleet: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    break_a_scorer(fleet)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    _, _, plain = cli("--root", str(fleet), "validate")
    _, _, coloured = cli("--root", str(fleet), "validate", err=_Terminal())
    assert "\x1b[" not in plain
    assert ": \x1b[31merror\x1b[0m: spec.description" in coloured
    monkeypatch.setenv("NO_COLOR", "1")
    assert cli("--root", str(fleet), "validate", err=_Terminal())[2] == plain


# ------------------------------------------------------- errors where they are made


def test_validate_refuses_a_full_scorer_never_synced(fleet: Path) -> None:
    sample = (fleet / "scorers/sample-scorer.yaml").read_text()
    (fleet / "scorers/new.yaml").write_text(
        sample.replace("name: sample-scorer\n", "name: new-scorer\n", 1)
        .replace("sample_my_score", "new_score")
        .replace("sample-scorer.dynamic-scoring.svc", "new-scorer.dynamic-scoring.svc")
    )
    code, _, err = cli("--root", str(fleet), "validate")
    assert code == 1
    assert err.splitlines() == [
        "scorers/new.yaml:6:3: error: metadata.name: no entry in dsf.lock.json: "
        "run 'dsf-compile sync new-scorer'",
        "dsf-compile: 1 error(s)",
    ]


def test_validate_catches_a_typo_in_a_mask_score_name(fleet: Path) -> None:
    config = fleet / "clusters/dynamic-scoring-config.yaml"
    config.write_text(config.read_text().replace("llm_forecast_score", "llm_forcast_score"))
    code, _, err = cli("--root", str(fleet), "validate")
    assert code == 1
    assert err.splitlines()[0] == (
        "clusters/dynamic-scoring-config.yaml:9:7: error: spec.masks[0].scoreName: matches "
        "no score of any scorer (a typo?) (did you mean 'llm_forecast_score'?)"
    )


def test_read_only_commands_never_speak_of_writing(fleet: Path) -> None:
    break_a_scorer(fleet)
    for argv in (("validate",), ("diff",), ("render", "--check"), ("explain",)):
        code, _, err = cli("--root", str(fleet), *argv)
        # diff and render --check could not compare: 2 (fleet-repo.md's exit codes)
        assert code == (2 if argv in (("diff",), ("render", "--check")) else 1), argv
        assert err.endswith("dsf-compile: 1 error(s)\n"), argv
    assert cli("--root", str(fleet), "render")[2].endswith("1 error(s); nothing was written\n")


def test_explain_without_scores_says_so_first(fleet: Path) -> None:
    code, out, err = cli("--root", str(fleet), "explain", "--at", AT)
    assert code == 0
    assert err == f"dsf-compile: warning: {NO_SCORES_WARNING}\n"
    assert out.startswith(f"at {AT}\n")
    code, out, err = cli("--root", str(fleet), "explain", "--at", AT, "--format", "json")
    assert (code, err) == (0, "")
    assert json.loads(out)["warnings"] == [NO_SCORES_WARNING]
    code, out, err = cli(
        "--root", str(fleet), "explain", "--scores", str(fleet / "snapshots"), "--at", AT
    )
    assert "warning" not in err


@pytest.mark.parametrize(
    ("asked", "message"),
    [
        ("gpu-inferance", "no Placement gpu-inferance in placements/ (NAMESPACE/NAME) "
         "(did you mean 'gpu-inference'?)"),
        ("default/gpu-inferenc", "no Placement default/gpu-inferenc in placements/ "
         "(NAMESPACE/NAME) (did you mean 'default/gpu-inference'?)"),
    ],
)  # fmt: skip
def test_a_misspelled_placement_gets_a_suggestion(fleet: Path, asked: str, message: str) -> None:
    code, out, err = cli("--root", str(fleet), "explain", asked)
    assert (code, out) == (2, "")
    assert err == f"dsf-compile: error: {message}\n"


def test_a_bare_placement_name_is_default_or_its_only_namespace(fleet: Path) -> None:
    scores = str(fleet / "snapshots")
    named = cli(
        "--root", str(fleet), "explain", "default/gpu-inference", "--scores", scores, "--at", AT
    )
    assert named[0] == 0
    assert (
        cli("--root", str(fleet), "explain", "gpu-inference", "--scores", scores, "--at", AT)
        == named
    )
    # moved to another namespace (the only one holding it), still found by its name
    placement = fleet / "placements/gpu-inference.yaml"
    placement.write_text(placement.read_text().replace("namespace: default", "namespace: team-a"))
    code, out, err = cli(
        "--root", str(fleet), "explain", "gpu-inference", "--scores", scores, "--at", AT
    )
    assert code == 0, err
    assert "placement team-a/gpu-inference" in out


def test_a_missing_scores_folder_is_not_said_to_write(fleet: Path) -> None:
    code, out, err = cli("--root", str(fleet), "explain", "--scores", "nosuchdir/")
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == "dsf-compile: 1 error(s)"


def test_dsf_mcp_finds_its_repository_upward_too(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dsf_compile.commands.mcp_server import main; raise SystemExit(main())",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
        timeout=120,  # a hang guard, not a measure
    )
    assert done.returncode == 2
    assert done.stderr.startswith("dsf-mcp: error: not in a dsf repository: ")
