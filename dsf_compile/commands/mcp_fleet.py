"""What ``dsf-mcp``'s tools do: :class:`Fleet`, the repository and where its scores come from.

Each tool is one method. The repository is validated once per call, as ``validate``
does, before the scores are read; what the validation loaded and resolved (the inputs,
the lockfile, each scorer) is what the tool goes on with, so that no tool loads the
inputs or resolves a scorer twice.
"""

from __future__ import annotations

import difflib
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from dsf_compile.commands.mcp_models import (
    ExplainDocument,
    OptimizeReport,
    ProblemRecord,
    ScoreInfo,
    ScorerInfo,
    ScoresAvailable,
    ValidationReport,
)
from dsf_compile.edges.untrusted import safe_message
from dsf_compile.errors import DsfError, InputError
from dsf_compile.hubread.state import HubState, read_hub, read_scores
from dsf_compile.times import parse_moment
from dsf_contract.scores import CONDITION_TYPE

if TYPE_CHECKING:
    from dsf_compile.edges.hub import HubAccess
    from dsf_compile.inputs.placements import AddOnPlacementScore
    from dsf_compile.pipeline.inputs import Validated

NO_SCORES = (
    "dsf-mcp was started without scores: restart it with --scores PATH (a snapshot file or "
    "folder, relative to --root) or --hub-kubeconfig PATH"
)


class Fleet:
    """The repository and where its scores come from; every tool reads through here.

    ``scores``, when relative, is relative to ``root`` (the snapshot is repository
    content); ``hub`` says where the hub's credentials are (a kubeconfig relative to the
    working directory, like kubectl's), None when the scores come from elsewhere.
    """

    def __init__(self, root: Path, scores: str | None, hub: HubAccess | None) -> None:
        self.root = root
        self.scores = str(root / scores) if scores and not Path(scores).is_absolute() else scores
        self.hub = hub

    def validated(self) -> Validated:
        """The repository as ``validate`` reads and checks it; InputError when it does not pass."""
        from dsf_compile.pipeline.inputs import validated_fleet

        return validated_fleet(self.root)

    def state(self) -> HubState:
        """The scores (and decisions) to replay against; read after :meth:`validated`."""
        if self.hub is not None:
            from dsf_compile.pipeline.inputs import load_settings

            return read_hub(self.hub, load_settings(self.root).hub)
        if self.scores:
            return HubState(read_scores(self.scores), ())
        return HubState(None, ())

    def list_scorers(self) -> list[ScorerInfo]:
        """``list_scorers``: each scorer of Git, its score and its health from the lockfile."""
        return _scorer_infos(self.validated())

    def get_scores(self, at: str | None) -> list[ScoreInfo]:
        """``get_scores``: the AddOnPlacementScores, each with its scorer's description."""
        moment = _moment(at)
        scorers = {s.addOnPlacementScore: s for s in self.list_scorers() if s.addOnPlacementScore}
        state = self.state()
        if state.scores is None:
            raise DsfError(NO_SCORES)
        out = [_score_info(score, scorers, moment) for score in state.scores]
        return sorted(out, key=lambda s: (s.cluster, s.name))

    def explain(self, placement: str | None, at: str | None) -> ExplainDocument:
        """``explain_placement``: ``explain --format json`` for one Placement or all."""
        from dsf_compile.pipeline.placements import explain_fleet
        from dsf_compile.placement.explain import explain_document

        moment = _moment(at)
        inputs = self.validated().inputs  # before the scores are read, and stricter than a load
        names = [placement] if placement else []
        results = explain_fleet(self.root, names, self.state(), moment, inputs=inputs)
        return ExplainDocument.model_validate(explain_document(results, moment))

    def validate(self) -> ValidationReport:
        from dsf_compile.pipeline.inputs import validate_fleet

        try:
            inputs = validate_fleet(self.root)
            problems = list(inputs.warnings)
        except InputError as error:
            problems = list(error.problems)
        from dsf_compile.commands.reporters import problem_record

        # the same record as every command's --format json
        records = [ProblemRecord(**problem_record(p)) for p in sorted(problems)]
        return ValidationReport(
            valid=not any(r.severity == "error" for r in records), problems=records
        )

    def optimize(self, at: str | None) -> OptimizeReport:
        from dsf_compile.edges.committed import committed_bytes
        from dsf_compile.inputs.load import MAX_FILE_BYTES
        from dsf_compile.pipeline.placements import optimize_fleet

        # validated before the scores are read; optimize_fleet reads nothing of
        # placements/optimized/ but the plans it replaces, through the safe reader
        moment = _moment(at)
        inputs = self.validated().inputs
        plans = optimize_fleet(self.root, self.state(), moment, inputs=inputs)
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
    """A tool's ``at``: RFC 3339 as ``--at`` takes it (the one time parser), else now."""
    return parse_moment(at) if at else datetime.now(UTC)


def _scorer_infos(validated: Validated) -> list[ScorerInfo]:
    """Each scorer with its published score, resolved as the validation resolved it."""
    from dsf_compile.placement.published_scores import score_catalog
    from dsf_compile.sync.lock import Lockfile
    from dsf_contract.summary import sanitize_score_name

    inputs, lock = validated.inputs, validated.lock or Lockfile()
    catalog = score_catalog(inputs, validated.lock, validated.resolutions)
    by_scorer = {s.scorer: s for s in catalog.scores.values()}
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


def _score_info(
    score: AddOnPlacementScore, scorers: dict[str, ScorerInfo], moment: datetime
) -> ScoreInfo:
    """One AddOnPlacementScore, flagged when expired at ``moment`` or failing."""
    from dsf_compile.placement.scheduler import format_time

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
        warnings.append(f"expired: validUntil {format_time(until)} is before {format_time(moment)}")
    if available is not None and available.status == "False":
        warnings.append(
            f"failing: ScoresAvailable is False ({available.reason}: {available.message})"
        )
    return ScoreInfo(
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
