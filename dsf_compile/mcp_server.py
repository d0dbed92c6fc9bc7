"""``dsf-mcp``: the fleet's scorers, scores, Placements and optimizer, for AI assistants.

An MCP server (the official ``mcp`` SDK, ``pip install 'ocm-dynamic-scoring[mcp]'``), stdio by default,
streamable HTTP with ``--http HOST:PORT`` (:mod:`dsf_compile.mcp_http`: Host/Origin
checks, a bearer token off loopback). Its tools read and propose, never apply:

- ``list_scorers``: the scorers of Git with their health from ``dsf.lock.json``;
- ``get_scores``: the AddOnPlacementScores (``--scores`` snapshot or ``--hub-kubeconfig``,
  list calls only), each annotated with its scorer's description and dimension format,
  and flagged when expired or when its ``ScoresAvailable`` condition is False;
- ``explain_placement``: the ``explain`` JSON for one Placement or all;
- ``validate``: the problems of the repository, as records;
- ``optimize``: runs ``optimize`` into the working tree (``placements/optimized/`` only)
  and returns the diff against the committed plans.

Every tool but ``validate`` validates the repository first, as ``validate`` does, and
reads every file through the same size-bounded reader that refuses links, FIFOs and
devices; arguments a tool does not declare are refused. Nothing here writes to a
cluster: changes reach the hub through Git.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field

from dsf_compile.errors import DsfError, InputError, UsageError
from dsf_compile.hub_state import HubState, read_hub, read_scores
from dsf_compile.inputs.validate import Inputs
from dsf_compile.mcp_models import (
    ExplainDocument,
    OptimizeReport,
    ProblemRecord,
    ScoreInfo,
    ScorerInfo,
    ScoresAvailable,
    ValidationReport,
)
from dsf_compile.repository import find_repository
from dsf_compile.untrusted import safe_message
from dsf_contract import __version__
from dsf_contract.fields import parse_time
from dsf_contract.scores import CONDITION_TYPE

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.server.mcpserver.tools import Tool
    from mcp.types import ToolAnnotations
except ImportError:  # the server is an optional extra
    MCPServer = None  # type: ignore[assignment,misc]

T = TypeVar("T")
INSTALL_HINT = "dsf-mcp needs the MCP SDK: pip install 'ocm-dynamic-scoring[mcp]'"
NO_SCORES = (
    "dsf-mcp was started without scores: restart it with --scores PATH (a snapshot file or "
    "folder, relative to --root) or --hub-kubeconfig PATH"
)
AT_DESCRIPTION = (
    "the moment to judge validUntil and toleration times at: an RFC 3339 time with a zone, "
    "like 2026-11-22T10:00:00Z or 2026-11-22T12:00:00+02:00 (default: now)"
)
At = Annotated[str | None, Field(description=AT_DESCRIPTION)]


class Fleet:
    """The repository and where its scores come from; every tool reads through here.

    ``scores``, when relative, is relative to ``root`` (the snapshot is repository
    content); ``hub_kubeconfig`` is relative to the working directory, like kubectl's.
    """

    def __init__(self, root: Path, scores: str | None, hub_kubeconfig: str | None) -> None:
        self.root = root
        self.scores = str(root / scores) if scores and not Path(scores).is_absolute() else scores
        self.hub_kubeconfig = hub_kubeconfig

    def validated(self) -> Inputs:
        """The repository as ``validate`` reads and checks it; InputError when it does not pass."""
        from dsf_compile.pipeline import validate_fleet

        return validate_fleet(self.root)

    def state(self) -> HubState:
        """The scores (and decisions) to replay against; read after :meth:`validated`."""
        if self.hub_kubeconfig:
            from dsf_compile.pipeline import load_settings

            return read_hub(self.hub_kubeconfig, load_settings(self.root).hub)
        if self.scores:
            return HubState(read_scores(self.scores), ())
        return HubState(None, ())

    def list_scorers(self) -> list[ScorerInfo]:
        from dsf_compile.placement.published_scores import score_catalog
        from dsf_compile.sync.lock import read_lockfile
        from dsf_contract.summary import sanitize_score_name

        inputs = self.validated()
        lock, _ = read_lockfile(self.root)
        by_scorer = {s.scorer: s for s in score_catalog(inputs, lock).scores.values()}
        out = []
        for located in inputs.scorers:
            scorer = located.model
            name = scorer.metadata.name
            entry = lock.scorers.get(name)
            published = by_scorer.get(name)
            score_name = published.score_name if published else None
            out.append(
                ScorerInfo(
                    name=name,
                    description=scorer.spec.description,
                    scoreName=score_name,
                    addOnPlacementScore=sanitize_score_name(score_name) if score_name else None,
                    scoreDimensionFormat=scorer.spec.scoreDimensionFormat,
                    configSyncMode=scorer.spec.configSyncMode,
                    health=entry.health if entry else None,
                    reason=entry.reason if entry else "not synced yet",
                )
            )
        return out

    def get_scores(self, at: str | None) -> list[ScoreInfo]:
        from dsf_compile.placement.scheduler import format_time

        moment = _moment(at)
        scorers = {s.addOnPlacementScore: s for s in self.list_scorers() if s.addOnPlacementScore}
        state = self.state()
        if state.scores is None:
            raise DsfError(NO_SCORES)
        out = []
        for score in state.scores:
            scorer = scorers.get(score.metadata.name)
            until = score.status.validUntil
            expired = until is not None and moment > until
            condition = next((c for c in score.status.conditions if c.type == CONDITION_TYPE), None)
            available = (
                ScoresAvailable(
                    status=safe_message(condition.status),
                    reason=safe_message(condition.reason),
                    message=safe_message(condition.message),
                )
                if condition is not None
                else None
            )
            warnings = []
            if expired and until is not None:
                warnings.append(
                    f"expired: validUntil {format_time(until)} is before {format_time(moment)}"
                )
            if available is not None and available.status == "False":
                warnings.append(
                    f"failing: ScoresAvailable is False ({available.reason}: {available.message})"
                )
            out.append(
                ScoreInfo(
                    cluster=score.metadata.namespace,
                    name=score.metadata.name,
                    items={item.name: item.value for item in score.status.scores},
                    validUntil=format_time(until) if until else None,
                    expired=expired,
                    scoresAvailable=available,
                    warnings=warnings,
                    scorer=scorer.name if scorer else None,
                    description=scorer.description if scorer else None,
                    scoreDimensionFormat=scorer.scoreDimensionFormat if scorer else None,
                )
            )
        return sorted(out, key=lambda s: (s.cluster, s.name))

    def explain(self, placement: str | None, at: str | None) -> ExplainDocument:
        from dsf_compile.pipeline import explain_fleet
        from dsf_compile.placement.explain import explain_document

        moment = _moment(at)
        self.validated()  # before the scores are read, and stricter than explain's own load
        results = explain_fleet(self.root, [placement] if placement else [], self.state(), moment)
        return ExplainDocument.model_validate(explain_document(results, moment))

    def validate(self) -> ValidationReport:
        from dsf_compile.pipeline import validate_fleet

        try:
            inputs = validate_fleet(self.root)
            problems = list(inputs.warnings)
        except InputError as error:
            problems = list(error.problems)
        records = [
            ProblemRecord(
                path=p.path,
                line=p.line,
                column=p.column,
                field=p.field,
                severity=p.severity,
                message=p.message,
            )
            for p in sorted(problems)
        ]
        return ValidationReport(
            valid=not any(r.severity == "error" for r in records), problems=records
        )

    def optimize(self, at: str | None) -> OptimizeReport:
        from dsf_compile.committed import committed_bytes
        from dsf_compile.inputs.load import MAX_FILE_BYTES
        from dsf_compile.pipeline import optimize_fleet

        # validated before the scores are read; optimize_fleet reads nothing of
        # placements/optimized/ but the plans it replaces, through the safe reader
        moment = _moment(at)
        self.validated()
        plans = optimize_fleet(self.root, self.state(), moment)
        diffs: list[str] = []
        differing: list[str] = []
        for plan in plans:
            before = committed_bytes(self.root, plan.path, max_bytes=MAX_FILE_BYTES) or b""
            old = before.decode("utf-8", errors="replace")
            if old == plan.text:
                continue
            differing.append(plan.path)
            diffs += difflib.unified_diff(
                old.splitlines(keepends=True),
                plan.text.splitlines(keepends=True),
                f"a/{plan.path}",
                f"b/{plan.path}",
            )
        return OptimizeReport(
            files=differing,
            written=[p.path for p in plans if p.changed],
            objective={p.path: p.objective for p in plans},
            leftOut={p.path: list(p.left_out) for p in plans},
            warnings=[w.format() for p in plans for w in p.warnings],
            diff="".join(diffs),
        )


def _moment(at: str | None) -> datetime:
    return parse_time(at) if at else datetime.now(UTC)


def _answer(call: Callable[[], T], *, writes: bool = False) -> T:
    """Run a tool's body; turn what the user can fix into a message the assistant reads.

    The SDK reports any other exception as a bare "Error executing tool", so the
    problems (``PATH:LINE:COL: error: FIELD: MESSAGE``), a missing ``--scores`` or a bad
    ``at`` would not reach the assistant.
    """
    try:
        return call()
    except InputError as error:
        lines = [safe_message(p.format()) for p in sorted(error.problems)]
        count = sum(1 for p in error.problems if p.severity == "error")
        summary = f"{count} error(s)" + ("; nothing was written" if writes else "")
        raise ToolError("\n".join([*lines, summary])) from None
    except (DsfError, ValueError) as error:
        raise ToolError(safe_message(str(error))) from None


def _strict(tool: Any) -> Any:
    """Refuse arguments the tool does not declare (the SDK's argument model ignores them)."""
    loose = tool.fn_metadata.arg_model
    tool.fn_metadata.arg_model = type(
        loose.__name__,
        (loose,),
        {
            "model_config": ConfigDict(extra="forbid", arbitrary_types_allowed=True),
            "__module__": __name__,
        },
    )
    tool.parameters["additionalProperties"] = False
    return tool


def _tools(fleet: Fleet) -> list[Any]:
    read_only = ToolAnnotations(
        readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False
    )

    def list_scorers() -> list[ScorerInfo]:
        """The scorers defined in Git, their score names and their health from the last sync."""
        return _answer(fleet.list_scorers)

    def get_scores(at: At = None) -> list[ScoreInfo]:
        """The AddOnPlacementScores per cluster, with each scorer's description and dimension
        format; scores past their validUntil and scores whose ScoresAvailable condition is
        False are flagged (expired, scoresAvailable, warnings)."""
        return _answer(lambda: fleet.get_scores(at))

    def explain_placement(
        placement: Annotated[
            str | None,
            Field(
                description="NAMESPACE/NAME of one Placement, e.g. default/gpu-inference "
                "(default: every Placement)"
            ),
        ] = None,
        at: At = None,
    ) -> ExplainDocument:
        """Which clusters a Placement picks and why (OCM's scheduler replayed offline), as
        the JSON of dsf-compile explain --format json."""
        return _answer(lambda: fleet.explain(placement, at))

    def validate() -> ValidationReport:
        """The problems of the repository's inputs (errors and warnings), with file, line and field."""
        return _answer(fleet.validate)

    def optimize(at: At = None) -> OptimizeReport:
        """Solve every PlacementOptimization, write placements/optimized/ in the working
        tree (nothing else), and return the diff of the plans against the committed ones;
        workloads that do not fit are named in leftOut."""
        return _answer(lambda: fleet.optimize(at), writes=True)

    writes = ToolAnnotations(
        readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
    )
    return [
        _strict(Tool.from_function(list_scorers, title="List scorers", annotations=read_only)),
        _strict(Tool.from_function(get_scores, title="Get scores", annotations=read_only)),
        _strict(
            Tool.from_function(
                explain_placement, title="Explain a Placement", annotations=read_only
            )
        ),
        _strict(
            Tool.from_function(validate, title="Validate the repository", annotations=read_only)
        ),
        _strict(Tool.from_function(optimize, title="Optimize placements", annotations=writes)),
    ]


def build_server(fleet: Fleet) -> Any:
    """The MCP server with the five tools, bound to ``fleet``."""
    if MCPServer is None:
        raise DsfError(INSTALL_HINT)
    return MCPServer(
        name="dsf",
        title="Dynamic Scoring Framework",
        instructions=(
            "Dynamic Scoring Framework for Open Cluster Management: scorers, their scores on "
            "the hub, how OCM Placements rank clusters by them, and an optimizer that proposes "
            "Placements as a change to review. Read-only toward every cluster."
        ),
        tools=_tools(fleet),
    )


def serve_http(server: Any, args: argparse.Namespace) -> None:
    """Streamable HTTP with the Host/Origin checks and, when configured, the bearer token."""
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from dsf_compile.mcp_http import (
        BearerToken,
        allowed_hosts,
        check_can_start,
        parse_listen,
        read_token,
    )

    listen = parse_listen(args.http)
    token = read_token(os.environ, args.token_file)
    check_can_start(listen, token)
    hosts = allowed_hosts(listen, args.allow_host)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")],
    )
    app: Any = server.streamable_http_app(transport_security=security, host=listen.host)
    if token is not None:
        app = BearerToken(app, token)
    print(
        f"dsf-mcp: serving http://{listen.authority()}/mcp for Host {', '.join(hosts)}"
        f"{'; bearer token required' if token else ''}",
        file=sys.stderr,
    )
    uvicorn.Server(
        uvicorn.Config(app, host=listen.host, port=listen.port, log_level="warning")
    ).run()


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsf-mcp``."""
    parser = argparse.ArgumentParser(prog="dsf-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"dsf-mcp {__version__}")
    parser.add_argument(
        "--root",
        default=None,
        help="the repository (default: the nearest folder, from here upward, holding "
        "dsf.yaml or scorers/ and clusters/)",
    )
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--scores",
        metavar="PATH",
        help="AddOnPlacementScores snapshot (file or folder; relative to --root)",
    )
    source.add_argument(
        "--hub-kubeconfig", metavar="PATH", help="read scores from a hub (list only)"
    )
    parser.add_argument(
        "--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio ([::1]:PORT for IPv6)"
    )
    parser.add_argument(
        "--token-file",
        metavar="PATH",
        help="bearer token every HTTP request must carry (or the environment variable "
        "DSF_MCP_TOKEN); required to listen beyond loopback",
    )
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME[:PORT]",
        help="a Host header clients use to reach the server, besides its own address; repeatable",
    )
    args = parser.parse_args(argv)
    try:
        root = find_repository(Path(".")) if args.root is None else Path(args.root)
    except UsageError as error:
        print(f"dsf-mcp: error: {error}", file=sys.stderr)
        return 2
    if not root.is_dir():
        print(f"dsf-mcp: error: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    try:
        server = build_server(Fleet(root, args.scores, args.hub_kubeconfig))
        if args.http:
            serve_http(server, args)
        else:
            server.run()
    except DsfError as error:  # UsageError included
        print(f"dsf-mcp: error: {safe_message(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
