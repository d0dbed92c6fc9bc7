"""``dsf-compile``'s commands: the :data:`COMMANDS` table and each command's options.

Adding a command is one entry here (its name, help, example, handler in
:mod:`dsf_compile.commands.handlers`, options and formats) — the parser, ``--help``,
the completion scripts and the docs' checks all read this table.
"""

from __future__ import annotations

from pathlib import Path

from dsf_compile.commands import handlers
from dsf_compile.commands.backtest_options import BACKTEST_OPTIONS
from dsf_compile.commands.call import SCORER_TOKEN_VARIABLE
from dsf_compile.commands.parser import Command, Option, seconds, state_options

# ------------------------------------------------------------ each command's options


def _check(folder: str) -> Option:
    """``--check``: write nothing, exit 1 when ``folder`` is stale."""
    return Option(
        "--check", None, f"write nothing; exit 1 if {folder} is stale", action="store_true"
    )


_VALIDATE_OPTIONS = (
    Option(
        "--strict", None, "warnings are errors (exit 1 when there are any)", action="store_true"
    ),
)
_SYNC_OPTIONS = (
    Option("names", "NAME", "refresh only these scorers", nargs="*"),
    Option("--strict", None, "exit 1 when a scorer is Inactive", action="store_true"),
    Option(
        "--allow-mass-failure",
        None,
        "record the scorers Inactive even when most Active ones cannot be reached "
        "(sync.maxUnreachableFraction); once",
        action="store_true",
    ),
    Option(
        "--allow-mass-removal",
        None,
        "with --clusters: write the hub's list even when it removes most of "
        "clusters/discovered.yaml (sync.maxClusterRemovalFraction); once",
        action="store_true",
    ),
    Option(
        "--resolve",
        "HOST:PORT:ADDR[:PORT]",
        "connect to ADDR (and PORT) for HOST:PORT, like curl's --resolve/--connect-to; repeatable",
        action="append",
        default=[],
    ),
    Option(
        "--clusters",
        None,
        "instead of the scorers: list the hub's ManagedClusters into clusters/discovered.yaml",
        action="store_true",
    ),
    Option(
        "--hub-kubeconfig",
        "PATH",
        "kubeconfig of the hub, for --clusters (read-only: one list call)",
        type=Path,
        default=None,
    ),
)
_OPTIMIZE_OPTIONS = (
    *state_options(hub=True),
    Option(
        "--time-limit",
        "SECONDS",
        "stop the solver after this many seconds, an error (default: 60)",
        type=seconds,
        default=None,
    ),
)
_EXPLAIN_OPTIONS = (
    Option(
        "placements",
        "NAMESPACE/NAME",
        "these Placements (default: all); NAME alone is default/NAME, or the one "
        "namespace holding it",
        nargs="*",
    ),
    Option(
        "--verify",
        None,
        "replay on the hub's own state and compare with its PlacementDecisions "
        "(needs --hub-kubeconfig; exit 1 on any difference)",
        action="store_true",
    ),
    *state_options(hub=True),
)
_SCORER_CHECK_OPTIONS = (
    Option("url", None, "the scorer's base URL or its /config URL"),
    Option(
        "--token",
        None,
        f"bearer token for /scoring (default: ${SCORER_TOKEN_VARIABLE})",
        default=None,
    ),
    Option(
        "--timeout",
        None,
        "seconds each request may take in all, answer included (default 10)",
        type=seconds,
        default=10.0,
    ),
)
_COMPLETION_OPTIONS = (Option("shell", None, "the shell", choices=("bash", "zsh", "fish")),)


# ------------------------------------------------------------------- the commands

#: Every command, in the order ``--help`` lists them. A command is one entry: its
#: handler calls the pipeline (imported when the command runs, so a command loads only
#: what it needs), reports, and returns the exit code.
COMMANDS: tuple[Command, ...] = (
    Command(
        "validate",
        "load and check the inputs; no network",
        "Load dsf.yaml, scorers/, clusters/ and placements/, check each document against "
        "its schema and every rule between them, and print every problem as "
        "PATH:LINE:COL. Exit 1 when there are errors. Never touches the network.",
        "dsf-compile validate --strict\ndsf-compile validate --format json | jq '.problems[]'",
        handlers.handle_validate,
        _VALIDATE_OPTIONS,
        formats=("text", "github", "json"),
    ),
    Command(
        "sync",
        "fetch each scorer's /config or /healthz into dsf.lock.json",
        "Ask each scorer (configSyncMode Full: its /config; None: its /healthz) and "
        "record what it said, Active or Inactive, in dsf.lock.json. The only command "
        "that reaches the scorers; with --clusters, lists the hub's ManagedClusters instead.",
        "dsf-compile sync\ndsf-compile sync sample-scorer --strict",
        handlers.handle_sync,
        _SYNC_OPTIONS,
        formats=("text", "github", "json"),
        writes=True,
    ),
    Command(
        "render",
        "write rendered/ from the inputs and the lockfile; no network",
        "Resolve every scorer against the lockfile and write every manifest the hub "
        "needs into rendered/, only the files that change. With --check, write nothing "
        "and exit 1 when rendered/ is stale.",
        "dsf-compile render\ndsf-compile render --check --format json",
        handlers.handle_render,
        (_check("rendered/"), *state_options(hub=False)),
        formats=("text", "github", "json"),
        writes=True,
    ),
    Command(
        "diff",
        "what render would change, object by object",
        "Show what 'render' would change in rendered/, as a unified diff, a Markdown "
        "pull-request comment or JSON records; with --scores, also the Placements whose "
        "decisions would move. Exit 1 when rendered/ is stale.",
        "dsf-compile diff --format markdown --scores snapshots/",
        handlers.handle_check,
        state_options(hub=False),
        formats=("text", "markdown", "github", "json"),
    ),
    Command(
        "optimize",
        "choose configurations and placements together; writes placements/optimized/",
        "Solve each PlacementOptimization (a MILP, with HiGHS) against the scores and "
        "write the proposal into placements/optimized/ for review.",
        "dsf-compile optimize --scores snapshots/ --time-limit 30",
        handlers.handle_optimize,
        _OPTIMIZE_OPTIONS,
        writes=True,
    ),
    Command(
        "explain",
        "which clusters each Placement picks, and why (OCM's scheduler, offline)",
        "Replay OCM's scheduler on the Placements of placements/ against a snapshot of "
        "AddOnPlacementScores (--scores) or a hub (--hub-kubeconfig): every filter, "
        "every prioritizer's score, the decisions. Without scores every AddOn score is 0.",
        "dsf-compile explain gpu-inference --scores snapshots/\n"
        "dsf-compile explain --verify --hub-kubeconfig hub.kubeconfig",
        handlers.handle_explain,
        _EXPLAIN_OPTIONS,
        formats=("text", "markdown", "github", "json"),
    ),
    Command(
        "backtest",
        "replay the Placements over the fleet's score history: decision changes, churn",
        "Replay every Placement of placements/ over recorded dynamic_score history (a "
        "Prometheus-compatible API or a VictoriaMetrics export file) with explain's "
        "scheduler, and report how often each would have changed its decisions.",
        "dsf-compile backtest --history http://vm.hub.example:8428 --from 7d --format markdown\n"
        "dsf-compile backtest --history history.jsonl.gz --steady 0,3 --max-changes-per-day 4",
        handlers.handle_backtest,
        BACKTEST_OPTIONS,
        formats=("text", "markdown", "json"),
    ),
    Command(
        "scorer-check",
        "conformance test of a live Scoring API",
        "Call a running Scoring API the way the agent does (/healthz, /config, /scoring) "
        "and check every answer against the contract. Exit 1 when one fails.",
        "dsf-compile scorer-check http://localhost:8000/config",
        handlers.handle_scorer_check,
        _SCORER_CHECK_OPTIONS,
        formats=(),
        repository=False,
    ),
    Command(
        "schemas",
        "write the JSON Schemas of every format into schemas/",
        "Generate the JSON Schemas of every input file, the lockfile and the wire "
        "formats from the models into schemas/; with --check, exit 1 if they are stale.",
        "dsf-compile schemas --check",
        handlers.handle_schemas,
        (_check("schemas/"),),
        writes=True,
    ),
    Command(
        "completion",
        "print a shell completion script",
        "Print a completion script for bash, zsh or fish, generated from these commands "
        "and options.",
        "dsf-compile completion bash > ~/.local/share/bash-completion/completions/dsf-compile\n"
        "dsf-compile completion fish > ~/.config/fish/completions/dsf-compile.fish",
        handlers.handle_completion,
        _COMPLETION_OPTIONS,
        formats=(),
        repository=False,
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}
