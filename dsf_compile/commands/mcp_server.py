"""``dsf-mcp``: the fleet's scorers, scores, Placements and optimizer, for AI assistants.

An MCP server (the official ``mcp`` SDK, ``pip install 'ocm-dynamic-scoring[mcp]'``), stdio by default,
streamable HTTP with ``--http HOST:PORT`` (:mod:`dsf_compile.commands.mcp_http`: Host/Origin
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
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

from pydantic import ConfigDict, Field

from dsf_compile.commands.mcp_fleet import Fleet
from dsf_compile.commands.mcp_models import (
    ExplainDocument,
    OptimizeReport,
    ScoreInfo,
    ScorerInfo,
    ValidationReport,
)
from dsf_compile.commands.parser import (
    CONTEXT,
    HUB_KUBECONFIG,
    ROOT,
    SCORES,
    Completion,
    Option,
    add_options,
)
from dsf_compile.commands.repository import find_repository
from dsf_compile.edges.hub import HubAccess
from dsf_compile.edges.untrusted import safe_message
from dsf_compile.errors import DsfError, InputError, UsageError
from dsf_contract import __version__

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

    from dsf_compile.commands.mcp_http import (
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


#: Where the scores come from: a snapshot or a hub, not both.
_SOURCE_OPTIONS = (
    SCORES.where("AddOnPlacementScores snapshot (file or folder; relative to --root)"),
    HUB_KUBECONFIG.where("read scores from a hub (list only)"),
)
#: Serving over HTTP instead of stdio.
_HTTP_OPTIONS = (
    Option("--http", "HOST:PORT", "streamable HTTP instead of stdio ([::1]:PORT for IPv6)"),
    Option(
        "--token-file",
        "PATH",
        "bearer token every HTTP request must carry (or the environment variable "
        "DSF_MCP_TOKEN); required to listen beyond loopback",
        complete=Completion.FILE,
    ),
    Option(
        "--allow-host",
        "NAME[:PORT]",
        "a Host header clients use to reach the server, besides its own address; repeatable",
        action="append",
        default=[],
    ),
)


def _parser() -> argparse.ArgumentParser:
    """``dsf-mcp``'s options."""
    parser = argparse.ArgumentParser(prog="dsf-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"dsf-mcp {__version__}")
    add_options(parser, (ROOT.where(ROOT.help, metavar=None),))
    add_options(parser.add_mutually_exclusive_group(), _SOURCE_OPTIONS)
    add_options(parser, (CONTEXT, *_HTTP_OPTIONS))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsf-mcp``."""
    args = _parser().parse_args(argv)
    try:
        root = find_repository(Path(".")) if args.root is None else Path(args.root)
    except UsageError as error:
        print(f"dsf-mcp: error: {error}", file=sys.stderr)
        return 2
    if not root.is_dir():
        print(f"dsf-mcp: error: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    if args.scores and args.context:
        print("dsf-mcp: error: --context reads the hub: drop --scores", file=sys.stderr)
        return 2
    hub = HubAccess(args.hub_kubeconfig, args.context)
    try:
        server = build_server(Fleet(root, args.scores, hub if hub.named_by_options else None))
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
