"""``dsf-mcp``: the fleet's scorers, scores, Placements and optimizer, for AI assistants.

An MCP server (the official ``mcp`` SDK, ``pip install 'ocm-dynamic-scoring[mcp]'``), stdio by default,
streamable HTTP with ``--http HOST:PORT``. Its tools read and propose, never apply:

- ``list_scorers``: the scorers of Git with their health from ``dsf.lock.json``;
- ``get_scores``: the AddOnPlacementScores (``--scores`` snapshot or ``--hub-kubeconfig``,
  list calls only), each annotated with its scorer's description and dimension format;
- ``explain_placement``: the ``explain`` JSON for one Placement or all;
- ``validate``: the problems of the repository, as records;
- ``optimize``: runs ``optimize`` into the working tree (``placements/optimized/`` only)
  and returns the diff, for a human to review and commit.

Nothing here writes to a cluster: changes reach the hub through Git.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from dsf_compile.errors import DsfError, InputError
from dsf_compile.fields import parse_time
from dsf_compile.placement.sources import HubState, read_hub, read_scores

try:
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
except ImportError:  # the server is an optional extra
    MCPServer = None  # type: ignore[assignment,misc]

T = TypeVar("T")
INSTALL_HINT = "dsf-mcp needs the MCP SDK: pip install 'ocm-dynamic-scoring[mcp]'"
_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "openWorldHint": False}


class ScorerInfo(BaseModel):
    name: str
    description: str
    scoreName: str | None
    addOnPlacementScore: str | None
    scoreDimensionFormat: str
    configSyncMode: str
    health: str | None
    reason: str


class ScoreInfo(BaseModel):
    cluster: str
    name: str
    items: dict[str, int]
    validUntil: str | None
    scorer: str | None
    description: str | None
    scoreDimensionFormat: str | None


class ProblemRecord(BaseModel):
    path: str
    line: int
    column: int
    field: str
    severity: str
    message: str


class ValidationReport(BaseModel):
    valid: bool
    problems: list[ProblemRecord]


class OptimizeReport(BaseModel):
    files: list[str]
    objective: dict[str, int]
    diff: str


class Fleet:
    """The repository and where its scores come from; every tool reads through here."""

    def __init__(self, root: Path, scores: str | None, hub_kubeconfig: str | None) -> None:
        self.root = root
        self.scores = scores
        self.hub_kubeconfig = hub_kubeconfig

    def state(self) -> HubState:
        if self.hub_kubeconfig:
            return read_hub(self.hub_kubeconfig)
        if self.scores:
            return HubState(read_scores(self.scores), ())
        return HubState(None, ())

    def list_scorers(self) -> list[ScorerInfo]:
        from dsf_compile.contract import sanitize_score_name
        from dsf_compile.pipeline import load_inputs
        from dsf_compile.placement.checks import score_catalog
        from dsf_compile.sync.lock import read_lockfile

        inputs = load_inputs(self.root)
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

    def get_scores(self) -> list[ScoreInfo]:
        scorers = {s.addOnPlacementScore: s for s in self.list_scorers() if s.addOnPlacementScore}
        state = self.state()
        out = []
        for score in state.scores or ():
            scorer = scorers.get(score.metadata.name)
            until = score.status.validUntil
            out.append(
                ScoreInfo(
                    cluster=score.metadata.namespace,
                    name=score.metadata.name,
                    items={item.name: item.value for item in score.status.scores},
                    validUntil=until.isoformat().replace("+00:00", "Z") if until else None,
                    scorer=scorer.name if scorer else None,
                    description=scorer.description if scorer else None,
                    scoreDimensionFormat=scorer.scoreDimensionFormat if scorer else None,
                )
            )
        return sorted(out, key=lambda s: (s.cluster, s.name))

    def explain(self, placement: str | None, at: str | None) -> dict[str, Any]:
        from dsf_compile.pipeline import explain_fleet
        from dsf_compile.placement.explain import explain_document

        moment = _moment(at)
        results = explain_fleet(self.root, [placement] if placement else [], self.state(), moment)
        document: dict[str, Any] = explain_document(results, moment)
        return document

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
        from dsf_compile.pipeline import optimize_fleet
        from dsf_compile.placement.proposal import OPTIMIZED_FOLDER

        folder = self.root / OPTIMIZED_FOLDER
        before = _texts(folder)
        plans = optimize_fleet(self.root, self.state(), _moment(at))
        after = _texts(folder)
        diff = "".join(
            line
            for name in sorted(set(before) | set(after))
            for line in difflib.unified_diff(
                before.get(name, "").splitlines(keepends=True),
                after.get(name, "").splitlines(keepends=True),
                f"a/{OPTIMIZED_FOLDER}/{name}",
                f"b/{OPTIMIZED_FOLDER}/{name}",
            )
        )
        return OptimizeReport(
            files=[p.path for p in plans if p.changed],
            objective={p.path: p.objective for p in plans},
            diff=diff,
        )


def _texts(folder: Path) -> dict[str, str]:
    if not folder.is_dir():
        return {}
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.yaml"))}


def _moment(at: str | None) -> datetime:
    return parse_time(at) if at else datetime.now(UTC)


def _answer(call: Callable[[], T]) -> T:
    """Run a tool's body; turn what the user can fix into a message the assistant reads.

    The SDK reports any other exception as a bare "Error executing tool", so the
    problems (``PATH:LINE:COL: error: FIELD: MESSAGE``), a missing ``--scores`` or a bad
    ``at`` would not reach the assistant.
    """
    try:
        return call()
    except InputError as error:
        lines = [p.format() for p in error.problems]
        count = sum(1 for p in error.problems if p.severity == "error")
        raise ToolError("\n".join([*lines, f"{count} error(s); nothing was written"])) from None
    except (DsfError, ValueError) as error:
        raise ToolError(str(error)) from None


def build_server(fleet: Fleet) -> Any:
    """The MCP server with the five tools, bound to ``fleet``."""
    if MCPServer is None:
        raise DsfError(INSTALL_HINT)
    server = MCPServer(
        name="dsf",
        instructions=(
            "Dynamic Scoring Framework for Open Cluster Management: scorers, their scores on "
            "the hub, how OCM Placements rank clusters by them, and an optimizer that proposes "
            "Placements as a change to review. Read-only toward every cluster."
        ),
    )
    read_only = ToolAnnotations(**_READ_ONLY)

    @server.tool(annotations=read_only)
    def list_scorers() -> list[ScorerInfo]:
        """The scorers defined in Git, their score names and their health from the last sync."""
        return _answer(fleet.list_scorers)

    @server.tool(annotations=read_only)
    def get_scores() -> list[ScoreInfo]:
        """The AddOnPlacementScores per cluster, with each scorer's description and dimension format."""
        return _answer(fleet.get_scores)

    @server.tool(annotations=read_only)
    def explain_placement(placement: str | None = None, at: str | None = None) -> dict[str, Any]:
        """Which clusters a Placement (NAMESPACE/NAME; all when empty) picks and why, as explain's JSON."""
        return _answer(lambda: fleet.explain(placement, at))

    @server.tool(annotations=read_only)
    def validate() -> ValidationReport:
        """The problems of the repository's inputs (errors and warnings), with file, line and field."""
        return _answer(fleet.validate)

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=True, openWorldHint=False
        )
    )
    def optimize(at: str | None = None) -> OptimizeReport:
        """Solve every PlacementOptimization, write placements/optimized/ in the working tree, return the diff."""
        return _answer(lambda: fleet.optimize(at))

    return server


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``dsf-mcp``."""
    parser = argparse.ArgumentParser(prog="dsf-mcp", description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="repository root (default: current directory)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--scores", metavar="PATH", help="AddOnPlacementScores snapshot (file or folder)"
    )
    source.add_argument(
        "--hub-kubeconfig", metavar="PATH", help="read scores from a hub (list only)"
    )
    parser.add_argument("--http", metavar="HOST:PORT", help="streamable HTTP instead of stdio")
    args = parser.parse_args(argv)
    root = Path(args.root)
    if not root.is_dir():
        print(f"dsf-mcp: error: --root {args.root}: not a directory", file=sys.stderr)
        return 2
    try:
        server = build_server(Fleet(root, args.scores, args.hub_kubeconfig))
        if args.http:
            host, _, port = args.http.rpartition(":")
            if not host or not port.isdigit():
                print(f"dsf-mcp: error: --http {args.http}: expected HOST:PORT", file=sys.stderr)
                return 2
            server.run("streamable-http", host=host, port=int(port))
        else:
            server.run()
    except DsfError as error:
        print(f"dsf-mcp: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
