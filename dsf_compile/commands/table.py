"""``dsf-compile``'s commands: the :data:`COMMANDS` table and each command's options.

Adding a command is one entry here (its name, help, example, handler in
:mod:`dsf_compile.commands.handlers`, options and formats) — the parser, ``--help``,
the completion scripts and the docs' checks all read this table.
"""

from __future__ import annotations

from dsf_compile.commands import handlers
from dsf_compile.commands.backtest_options import BACKTEST_OPTIONS, HISTORY, MAX_CHANGES_PER_DAY
from dsf_compile.commands.call import SCORER_TOKEN_VARIABLE
from dsf_compile.commands.parser import (
    AT,
    CONTEXT,
    HUB_KUBECONFIG,
    SCORES,
    STRICT,
    Command,
    Completion,
    Option,
    seconds,
    state_options,
)

# ------------------------------------------------------------ each command's options


def _check(folder: str) -> Option:
    """``--check``: write nothing, exit 1 when ``folder`` is stale."""
    return Option(
        "--check", None, f"write nothing; exit 1 if {folder} is stale", action="store_true"
    )


_VALIDATE_OPTIONS = (STRICT,)
_SYNC_OPTIONS = (
    Option("names", "NAME", "refresh only these scorers", nargs="*"),
    STRICT.where("exit 1 when a scorer is Inactive"),
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
    HUB_KUBECONFIG.where(
        "kubeconfig of the hub, for --clusters (read-only: one list call; default: "
        "$KUBECONFIG, else ~/.kube/config)"
    ),
    CONTEXT,
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
_INIT_OPTIONS = (
    Option(
        "dir",
        "DIR",
        "the new repository's folder (default: this one)",
        complete=Completion.DIRECTORY,
        nargs="?",
        default=".",
    ),
    Option(
        "--action",
        "OWNER/REPO@REF",
        "the GitHub Action the workflows use (default: this project's repository at v<version>)",
        default=None,
    ),
)
_YES_NO = ("true", "false")
#: ``ci``'s options: each takes a value, and an empty one is "not given" (the action
#: passes its inputs as they are).
_CI_OPTIONS = (
    Option(
        "--base",
        "REF",
        "diff against this commit's rendered/ (default: the pull request's base, from "
        "$GITHUB_EVENT_PATH; none: the checks alone)",
        default="",
    ),
    SCORES.as_input(
        "AddOnPlacementScores to replay the decisions on (default: snapshots/ when it "
        "holds YAML or JSON files)"
    ),
    AT.as_input("judge the scores at this moment (default: diff's)"),
    HISTORY.as_input(
        "against the base: backtest the last 7 days of this history, base and head (default: none)"
    ),
    MAX_CHANGES_PER_DAY.as_input("backtest's gate (default: none)"),
    STRICT.as_input(
        "validate --strict", metavar="true|false", action=None, choices=_YES_NO, default="false"
    ),
    Option(
        "--comment",
        "true|false",
        "on a pull request, write the report as its one comment (GITHUB_TOKEN)",
        choices=_YES_NO,
        default="false",
    ),
    Option(
        "--report",
        "PATH",
        "write the Markdown report here too",
        complete=Completion.FILE,
        default="",
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
        "init",
        "make a fleet repository of its own: inputs, rendered/, workflows",
        "Write a fleet repository into DIR: dsf.yaml, an example scorer, cluster and "
        "Placement, snapshots/, rendered/ and schemas/ (rendered offline), the GitHub "
        "workflows using this project's action pinned by tag, and a README saying what to "
        "do next. Refuses (exit 2, nothing written) unless DIR is empty or a fresh 'git init'.",
        "dsf-compile init my-fleet\ndsf-compile init . --action acme/dsf@v0.1.0",
        handlers.handle_init,
        _INIT_OPTIONS,
        formats=(),
        repository=False,
        writes=True,
    ),
    Command(
        "ci",
        "a fleet's checks and its pull request's report (what the GitHub Action runs)",
        "Run validate, render --check and schemas --check; against a base commit (a pull "
        "request's, or --base) the diff of its rendered/ with the decisions replayed on the "
        "scores snapshot, and with --history a backtest against the base's run; then write "
        "one Markdown report (stdout, or the job summary and the pull request's comment "
        "under --format github). Exit 1 when a check fails.",
        "dsf-compile ci --base origin/main\n"
        "dsf-compile ci --format github --comment true --report report.md",
        handlers.handle_ci,
        _CI_OPTIONS,
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
        reads_every_option=True,
    ),
)
BY_NAME = {command.name: command for command in COMMANDS}
