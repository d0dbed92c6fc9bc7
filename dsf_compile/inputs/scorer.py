"""``scorers/*.yaml``: the DynamicScorer, which registers one Scoring API."""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

from typing import Annotated, Literal

from pydantic import AfterValidator, Field

from dsf_compile.inputs.metadata import ObjectMeta
from dsf_contract.fields import (
    API_VERSION,
    DnsSubdomain,
    Frozen,
    HttpUrl,
    Location,
    PlainText,
    PositiveInt,
    ScoreDestination,
    SecretKey,
    SourceType,
    SyncMode,
    exactly,
)
from dsf_contract.summary import DimensionFormat


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
    name: PlainText | None = Field(default=None, min_length=1, description="The score name.")
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


#: The description is written into the DynamicScorer CR on the hub; client-side apply
#: copies the whole object into an annotation, and all annotations share 256 KiB. A few
#: paragraphs are plenty for a description, and keep the CR far from that limit.
#: (A validator, not maxLength: the limit is the compiler's, the CRD need not carry it.)
MAX_DESCRIPTION_CHARACTERS = 4096


def _description_length(value: str) -> str:
    if len(value) > MAX_DESCRIPTION_CHARACTERS:
        raise ValueError(
            f"must be at most {MAX_DESCRIPTION_CHARACTERS} characters (it has {len(value)}); "
            "link to longer documentation instead"
        )
    return value


class DynamicScorerSpec(Frozen):
    description: Annotated[str, AfterValidator(_description_length)] = Field(min_length=1)
    configURL: HttpUrl
    configSyncMode: SyncMode
    location: Location = "Internal"
    scoreDestination: ScoreDestination
    scoreDimensionFormat: DimensionFormat = "${scoreName}"
    source: SourceSpec | None = None
    scoring: ScoringSpec | None = None


class DynamicScorer(Frozen):
    """``scorers/*.yaml``: registers one Scoring API."""

    apiVersion: Annotated[str, *exactly(API_VERSION)]
    kind: Literal["DynamicScorer"]
    metadata: ObjectMeta
    spec: DynamicScorerSpec
