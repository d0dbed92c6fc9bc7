"""The command line: exit codes and exact stderr, as scripts and CI depend on them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from dsf_compile import __version__
from tests.fleet_repo import cli, tree, without_example_image

#: What validate says about the example fleet's dsf.yaml without its ``agent.image`` line:
#: the image its example repository.url derives is published by nothing.
EXAMPLE_URL_WARNING = (
    "dsf.yaml:5:3: warning: repository.url: still the example's, so the agents would pull "
    "ghcr.io/example/dsf-fleet-agent:0.1.0, which nothing publishes: set it to this "
    "repository (its release workflow publishes ghcr.io/OWNER/NAME-agent:VERSION), or set "
    "agent.image (docs/install.md)"
)


#: The info lines validate prints for the example fleet (not findings: --strict keeps them).
EXAMPLE_INFO = [
    "placements/gpu-apps/policies.yaml:4:1: info: kind: Policy needs the governance policy "
    "framework on the hub (its propagator serves Policy and PlacementBinding; OCM's core "
    "does not), or the GitOps sync of rendered/ fails on an unknown kind (docs/install.md)",
    "placements/gpu-apps/workloads.yaml:4:1: info: kind: ManifestWorkReplicaSet needs the "
    "hub's ManifestWorkReplicaSet feature gate (ClusterManager "
    "spec.workConfiguration.featureGates, off by default): without it no ManifestWork is "
    "made from it (docs/install.md)",
]


def test_validate_the_example_fleet(fleet: Path) -> None:
    """The example is clean: ``--strict`` finds nothing (the info lines are not findings)."""
    for strict in ((), ("--strict",)):
        code, out, err = cli("--root", str(fleet), "validate", *strict)
        assert (code, out) == (0, "")
        assert err.splitlines() == [*EXAMPLE_INFO, "dsf-compile: 5 scorer(s), 3 cluster(s): valid"]


def test_the_example_url_without_an_image_is_warned_about(fleet: Path) -> None:
    without_example_image(fleet)
    code, out, err = cli("--root", str(fleet), "validate")
    assert (code, out) == (0, "")
    assert err.splitlines() == [
        EXAMPLE_URL_WARNING,
        *EXAMPLE_INFO,
        "dsf-compile: 5 scorer(s), 3 cluster(s): valid",
    ]


def test_the_example_image_is_this_release(fleet: Path) -> None:
    """The example runs the image ``agent/build-image.sh`` tags by default: the release's."""
    assert f"  image: localhost/dsf-agent:{__version__}\n" in (fleet / "dsf.yaml").read_text()


def test_render_check_after_render_and_after_an_edit(fleet: Path) -> None:
    assert cli("--root", str(fleet), "render", "--check")[0] == 0
    scorer = fleet / "scorers/sample-scorer.yaml"
    scorer.write_text(scorer.read_text().replace("${node};${namespace};${pod}", "${node};${pod}"))
    code, out, err = cli("--root", str(fleet), "render", "--check")
    assert code == 1
    assert (
        "changed: rendered/hub/dynamicscorers/sample-scorer.yaml  DynamicScorer open-cluster-management/sample-scorer"
        in out
    )
    assert '-              "scoreDimensionFormat": "${node};${namespace};${pod}"' in out
    assert '+              "scoreDimensionFormat": "${node};${pod}"' in out
    assert err.endswith("run 'dsf-compile render'\n")
    code, _, err = cli("--root", str(fleet), "render")
    assert code == 0 and "0 added, 4 changed, 0 removed" in err  # the scorer CR and its 3 clusters
    assert cli("--root", str(fleet), "render", "--check")[0] == 0
    assert cli("--root", str(fleet), "diff")[0] == 0


def test_diff_markdown(fleet: Path) -> None:
    (fleet / "rendered/clusters/worker01/manifestwork.yaml").write_text("stale\n")
    code, out, _ = cli("--root", str(fleet), "diff", "--format", "markdown")
    assert code == 1
    assert out.startswith("### dsf-compile diff\n\n0 added, 1 changed, 0 removed.\n")


BAD_INTERVAL = """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: bad
spec:
  description: broken
  configURL: http://bad.svc:8000/config
  configSyncMode: None
  scoreDestination: AddOnPlacementScore
  scoring:
    params:
      name: bad_score
      interval: 0
      extra: 1
"""


def test_problems_are_all_printed_sorted_and_nothing_is_written(fleet: Path) -> None:
    without_example_image(fleet)  # a warning too: errors first, then warnings
    (fleet / "scorers/bad.yaml").write_text(BAD_INTERVAL)
    before = tree(fleet / "rendered")
    code, out, err = cli("--root", str(fleet), "render")
    assert (code, out) == (1, "")
    assert err == (
        "scorers/bad.yaml:13:7: error: spec.scoring.params.interval: must be > 0\n"
        "scorers/bad.yaml:14:7: error: spec.scoring.params.extra: unknown field\n"
        f"{EXAMPLE_URL_WARNING}\n"
        "dsf-compile: 2 error(s); nothing was written\n"
    )
    assert tree(fleet / "rendered") == before


def test_github_annotations(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (fleet / "scorers/bad.yaml").write_text(BAD_INTERVAL)
    code, _, err = cli("--root", str(fleet), "--format", "github", "validate")
    assert code == 1
    assert (
        err.splitlines()[0]
        == "::error file=scorers/bad.yaml,line=13,col=7::spec.scoring.params.interval: must be > 0"
    )
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    assert cli("--root", str(fleet), "validate")[2].startswith(
        "::error file=scorers/bad.yaml,line=13"
    )


@pytest.mark.parametrize(
    "argv",
    [("frobnicate",), ("render", "--nope"), ("--root", "/nonexistent/dsf", "validate"), ()],
    ids=["unknown-command", "unknown-flag", "missing-root", "no-command"],
)
def test_usage_errors_exit_2(argv: tuple[str, ...]) -> None:
    code, _, err = cli(*argv)
    assert code == 2
    assert "dsf-compile: error:" in err
    assert "Traceback" not in err


def test_an_empty_folder_is_not_a_fleet(tmp_path: Path) -> None:
    code, _, err = cli("--root", str(tmp_path), "validate")
    assert code == 1
    assert "no scorers/ or clusters/ folder here" in err


def test_a_repository_with_only_inputs_works_with_defaults(fleet: Path) -> None:
    (fleet / "dsf.yaml").unlink()
    assert cli("--root", str(fleet), "validate")[0] == 0


def test_missing_lock_entry_points_at_the_scorer(fleet: Path) -> None:
    (fleet / "scorers/new.yaml").write_text(
        BAD_INTERVAL.replace("interval: 0", "interval: 30").replace("      extra: 1\n", "")
    )
    code, _, err = cli("--root", str(fleet), "render")
    assert code == 1
    assert (
        err.splitlines()[0]
        == "scorers/new.yaml:4:3: error: metadata.name: no entry in dsf.lock.json: run 'dsf-compile sync bad'"
    )


def test_console_script_runs_as_a_process(fleet: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from dsf_compile.commands.cli import main; main()",
            "--root",
            str(fleet),
            "render",
            "--check",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == "dsf-compile: rendered/ is up to date\n"


def test_validate_resolves_none_scorers_without_the_lockfile(fleet: Path) -> None:
    scorer = fleet / "scorers/static-scorers.yaml"
    scorer.write_text(
        scorer.read_text().replace("      name: example_powerconsumption_score\n", "")
    )
    code, _, err = cli("--root", str(fleet), "validate")
    assert code == 1
    assert err.splitlines()[0] == (
        "scorers/static-scorers.yaml:28:5: error: spec.scoring.params.name: "
        "the score name is missing after resolution: set spec.scoring.params.name"
    )


def test_an_unquoted_date_is_told_to_be_quoted(fleet: Path) -> None:
    scorer = fleet / "scorers/sample-scorer.yaml"
    scorer.write_text(
        scorer.read_text().replace(
            "description: A sample scorer for time series data", "description: 2024-01-01"
        )
    )
    code, _, err = cli("--root", str(fleet), "validate")
    assert code == 1
    assert (
        err.splitlines()[0]
        == 'scorers/sample-scorer.yaml:9:3: error: spec.description: must be a string (quote it: "2024-01-01")'
    )
