"""``scorers/*.yaml``: the DynamicScorer, which registers one Scoring API."""

from __future__ import annotations

from typing import Literal

from pydantic import (
    Field,
)

from dsf_compile.contract import DimensionFormat
from dsf_compile.fields import (
    DnsLabel,
    DnsSubdomain,
    Frozen,
    HttpUrl,
    Location,
    PositiveInt,
    ScoreDestination,
    SecretKey,
    SourceType,
    StrMap,
    SyncMode,
)


class SecretRef(Frozen):
    """A key of a Secret in the agent namespace of every managed cluster."""

    name: DnsSubdomain
    key: SecretKey


class Auth(Frozen):
    """How to authenticate: a bearer token read from a Secret (never a literal token)."""

    tokenSecretRef: SecretRef


class SourceParams(Frozen):
    query: str | None = None
    range: PositiveInt | None = Field(default=None, description="Seconds of history to fetch.")
    step: PositiveInt | None = Field(default=None, description="Seconds between points.")


class ScoringParams(Frozen):
    name: str | None = Field(default=None, min_length=1, description="The score name.")
    interval: PositiveInt | None = Field(
        default=None, description="Seconds between scoring cycles."
    )


class SourceSpec(Frozen):
    type: SourceType | None = None
    host: HttpUrl | None = None
    path: str | None = None
    params: SourceParams | None = None
    auth: Auth | None = None


class ScoringSpec(Frozen):
    host: HttpUrl | None = None
    path: str | None = None
    params: ScoringParams | None = None
    auth: Auth | None = None


class DynamicScorerSpec(Frozen):
    description: str = Field(min_length=1)
    configURL: HttpUrl
    configSyncMode: SyncMode
    location: Location = "Internal"
    scoreDestination: ScoreDestination
    scoreDimensionFormat: DimensionFormat = "${scoreName}"
    source: SourceSpec | None = None
    scoring: ScoringSpec | None = None


class ObjectMeta(Frozen):
    name: DnsSubdomain
    namespace: DnsLabel | None = None
    labels: StrMap | None = None
    annotations: StrMap | None = None


class DynamicScorer(Frozen):
    """``scorers/*.yaml``: registers one Scoring API."""

    apiVersion: Literal["dynamic-scoring.open-cluster-management.io/v1alpha1"]
    kind: Literal["DynamicScorer"]
    metadata: ObjectMeta
    spec: DynamicScorerSpec
