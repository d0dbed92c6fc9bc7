"""What ``dsf-mcp``'s tools answer: typed models, so that each tool publishes an output schema.

:class:`ExplainDocument` is ``explain --format json`` as ``docs/placements.md`` describes it. The
fields of the later explain steps (``decisionGroups``, ``placementDecisions``,
``conditions``, ``margins``) are optional: a document without them validates, and one with
them is typed. Fields this schema does not know pass through unchanged (``extra="allow"``)
rather than being dropped.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class ScorerInfo(BaseModel):
    name: str
    description: str
    scoreName: str | None
    addOnPlacementScore: str | None
    scoreDimensionFormat: str
    configSyncMode: str
    health: str | None
    reason: str


class ScoresAvailable(BaseModel):
    """The ``ScoresAvailable`` condition the agent keeps on the scores it writes."""

    status: str
    reason: str
    message: str


class ScoreInfo(BaseModel):
    cluster: str
    name: str
    items: dict[str, int]
    validUntil: str | None
    expired: bool = Field(description="validUntil is before the time asked about")
    scoresAvailable: ScoresAvailable | None = Field(
        description="the agent's ScoresAvailable condition, when the object has one"
    )
    warnings: list[str] = Field(description="why these scores should not be trusted, if any")
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
    files: list[str] = Field(description="plans that differ from the committed ones (git HEAD)")
    written: list[str] = Field(description="plans this call wrote into the working tree")
    objective: dict[str, int]
    leftOut: dict[str, list[str]] = Field(
        description="per plan, the target workloads that do not fit (empty when all fit)"
    )
    warnings: list[str]
    diff: str = Field(description="unified diff of the plans against the committed state")


# ------------------------------------------------------------------ explain


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Filtered(_Open):
    clusterSets: list[str]
    predicates: list[str]
    taints: list[str]


class Prioritizer(_Open):
    name: str
    weight: int
    scores: dict[str, int]


class DecisionGroup(_Open):
    groupName: str
    groupIndex: int
    clusters: list[str]


class PlacementDecisionRecord(_Open):
    name: str
    labels: dict[str, str]
    clusters: list[str]


class Condition(_Open):
    type: str
    status: str
    reason: str
    message: str


class ExplainedPlacement(_Open):
    namespace: str
    name: str
    simulated: bool
    clusterSets: list[str]
    filtered: Filtered
    prioritizers: list[Prioritizer]
    totals: dict[str, int]
    decisions: list[str]
    unscheduled: int
    decisionGroups: list[DecisionGroup] | None = None
    placementDecisions: list[PlacementDecisionRecord] | None = None
    conditions: list[Condition] | None = None
    margins: dict[str, int] | None = None
    warnings: list[str]


class ExplainDocument(_Open):
    at: str = Field(description="the moment of the replay, RFC 3339 UTC")
    placements: list[ExplainedPlacement]
