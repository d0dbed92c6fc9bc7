"""``dsf-compile``'s commands: the :data:`COMMANDS` table and each command's arguments.

Adding a command is one entry here (its name, help, example, formats, handler in
:mod:`dsf_compile.commands.handlers` and argument function) — the parser, ``--help``,
the completion scripts and the docs' checks all read this table.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.backtest.options import backtest_arguments
from dsf_compile.commands import handlers
from dsf_compile.commands import parser as cli_parser
from dsf_compile.commands.call import SCORER_TOKEN_VARIABLE

if TYPE_CHECKING:
    pass

# ------------------------------------------------------------ each command's arguments


def _validate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict", action="store_true", help="warnings are errors (exit 1 when there are any)"
    )


def _sync_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="refresh only these scorers")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a scorer is Inactive")
    parser.add_argument(
        "--allow-mass-failure",
        action="store_true",
        help="record the scorers Inactive even when most Active ones cannot be reached "
        "(sync.maxUnreachableFraction); once",
    )
    parser.add_argument(
        "--allow-mass-removal",
        action="store_true",
        help="with --clusters: write the hub's list even when it removes most of "
        "clusters/discovered.yaml (sync.maxClusterRemovalFraction); once",
    )
    parser.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="HOST:PORT:ADDR[:PORT]",
        help="connect to ADDR (and PORT) for HOST:PORT, like curl's --resolve/--connect-to; repeatable",
    )
    parser.add_argument(
        "--clusters",
        action="store_true",
        help="instead of the scorers: list the hub's ManagedClusters into clusters/discovered.yaml",
    )
    parser.add_argument(
        "--hub-kubeconfig",
        type=Path,
        default=None,
        metavar="PATH",
        help="kubeconfig of the hub, for --clusters (read-only: one list call)",
    )


def _render_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if rendered/ is stale"
    )
    cli_parser.add_state_options(parser, hub=False)


def _replay_arguments(parser: argparse.ArgumentParser) -> None:
    cli_parser.add_state_options(parser, hub=False)


def _optimize_arguments(parser: argparse.ArgumentParser) -> None:
    cli_parser.add_state_options(parser, hub=True)
    parser.add_argument(
        "--time-limit",
        type=cli_parser.seconds,
        default=None,
        metavar="SECONDS",
        help="stop the solver after this many seconds, an error (default: 60)",
    )


def _explain_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "placements",
        nargs="*",
        metavar="NAMESPACE/NAME",
        help="these Placements (default: all); NAME alone is default/NAME, or the one "
        "namespace holding it",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="replay on the hub's own state and compare with its PlacementDecisions "
        "(needs --hub-kubeconfig; exit 1 on any difference)",
    )
    cli_parser.add_state_options(parser, hub=True)


def _scorer_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="the scorer's base URL or its /config URL")
    parser.add_argument(
        "--token",
        default=None,
        help=f"bearer token for /scoring (default: ${SCORER_TOKEN_VARIABLE})",
    )
    parser.add_argument(
        "--timeout",
        type=cli_parser.seconds,
        default=10.0,
        help="seconds each request may take in all, answer included (default 10)",
    )


def _schemas_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if schemas/ is stale"
    )


def _completion_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell")


# ------------------------------------------------------------------- the commands

_Command = cli_parser.Command
#: Every command, in the order ``--help`` lists them. A command is one entry: its
#: handler calls the pipeline (imported when the command runs, so a command loads only
#: what it needs), reports, and returns the exit code.
COMMANDS: tuple[cli_parser.Command, ...] = (
    _Command(
        "validate",
        "load and check the inputs; no network",
        "Load dsf.yaml, scorers/, clusters/ and placements/, check each document against "
        "its schema and every rule between them, and print every problem as "
        "PATH:LINE:COL. Exit 1 when there are errors. Never touches the network.",
        "dsf-compile validate --strict\ndsf-compile validate --format json | jq '.problems[]'",
        handlers.handle_validate,
        _validate_arguments,
        formats=("text", "github", "json"),
    ),
    _Command(
        "sync",
        "fetch each scorer's /config or /healthz into dsf.lock.json",
        "Ask each scorer (configSyncMode Full: its /config; None: its /healthz) and "
        "record what it said, Active or Inactive, in dsf.lock.json. The only command "
        "that reaches the scorers; with --clusters, lists the hub's ManagedClusters instead.",
        "dsf-compile sync\ndsf-compile sync sample-scorer --strict",
        handlers.handle_sync,
        _sync_arguments,
        formats=("text", "github", "json"),
        writes=True,
    ),
    _Command(
        "render",
        "write rendered/ from the inputs and the lockfile; no network",
        "Resolve every scorer against the lockfile and write every manifest the hub "
        "needs into rendered/, only the files that change. With --check, write nothing "
        "and exit 1 when rendered/ is stale.",
        "dsf-compile render\ndsf-compile render --check --format json",
        handlers.handle_render,
        _render_arguments,
        formats=("text", "github", "json"),
        writes=True,
    ),
    _Command(
        "diff",
        "what render would change, object by object",
        "Show what 'render' would change in rendered/, as a unified diff, a Markdown "
        "pull-request comment or JSON records; with --scores, also the Placements whose "
        "decisions would move. Exit 1 when rendered/ is stale.",
        "dsf-compile diff --format markdown --scores snapshots/",
        handlers.handle_check,
        _replay_arguments,
        formats=("text", "markdown", "github", "json"),
    ),
    _Command(
        "optimize",
        "choose configurations and placements together; writes placements/optimized/",
        "Solve each PlacementOptimization (a MILP, with HiGHS) against the scores and "
        "write the proposal into placements/optimized/ for review.",
        "dsf-compile optimize --scores snapshots/ --time-limit 30",
        handlers.handle_optimize,
        _optimize_arguments,
        writes=True,
    ),
    _Command(
        "explain",
        "which clusters each Placement picks, and why (OCM's scheduler, offline)",
        "Replay OCM's scheduler on the Placements of placements/ against a snapshot of "
        "AddOnPlacementScores (--scores) or a hub (--hub-kubeconfig): every filter, "
        "every prioritizer's score, the decisions. Without scores every AddOn score is 0.",
        "dsf-compile explain gpu-inference --scores snapshots/\n"
        "dsf-compile explain --verify --hub-kubeconfig hub.kubeconfig",
        handlers.handle_explain,
        _explain_arguments,
        formats=("text", "markdown", "github", "json"),
    ),
    _Command(
        "backtest",
        "replay the Placements over the fleet's score history: decision changes, churn",
        "Replay every Placement of placements/ over recorded dynamic_score history (a "
        "Prometheus-compatible API or a VictoriaMetrics export file) with explain's "
        "scheduler, and report how often each would have changed its decisions.",
        "dsf-compile backtest --history http://vm.hub.example:8428 --from 7d --format markdown\n"
        "dsf-compile backtest --history history.jsonl.gz --steady 0,3 --max-changes-per-day 4",
        handlers.handle_backtest,
        backtest_arguments,
        formats=("text", "markdown", "json"),
    ),
    _Command(
        "scorer-check",
        "conformance test of a live Scoring API",
        "Call a running Scoring API the way the agent does (/healthz, /config, /scoring) "
        "and check every answer against the contract. Exit 1 when one fails.",
        "dsf-compile scorer-check http://localhost:8000/config",
        handlers.handle_scorer_check,
        _scorer_check_arguments,
        formats=(),
        repository=False,
    ),
    _Command(
        "schemas",
        "write the JSON Schemas of every format into schemas/",
        "Generate the JSON Schemas of every input file, the lockfile and the wire "
        "formats from the models into schemas/; with --check, exit 1 if they are stale.",
        "dsf-compile schemas --check",
        handlers.handle_schemas,
        _schemas_arguments,
        writes=True,
    ),
    _Command(
        "completion",
        "print a shell completion script",
        "Print a completion script for bash, zsh or fish, generated from these commands "
        "and options.",
        "dsf-compile completion bash > ~/.local/share/bash-completion/completions/dsf-compile\n"
        "dsf-compile completion fish > ~/.config/fish/completions/dsf-compile.fish",
        handlers.handle_completion,
        _completion_arguments,
        formats=(),
        repository=False,
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}
