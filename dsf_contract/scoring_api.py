"""The Scoring API's wire formats (``docs/scorer-guide.md``): ``GET /config`` and ``POST /scoring``."""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

from typing import Annotated

from pydantic import (
    Field,
    Strict,
)

from dsf_contract.fields import Items, Lenient, NonNegativeInt, SourceType, StrMap


class ConfigSourceParams(Lenient):
    query: str | None = None
    range: NonNegativeInt | None = None
    step: NonNegativeInt | None = None


class ConfigScoringParams(Lenient):
    name: str | None = None
    interval: NonNegativeInt | None = None


class ConfigSource(Lenient):
    type: SourceType | None = None
    host: str | None = None
    path: str | None = None
    params: ConfigSourceParams | None = None


class ConfigScoring(Lenient):
    host: str | None = None
    path: str | None = None
    params: ConfigScoringParams | None = None


class ScorerConfig(Lenient):
    """A scorer's ``GET /config`` answer: every field optional, unknown fields ignored."""

    name: str | None = None
    description: str | None = None
    source: ConfigSource | None = None
    scoring: ConfigScoring | None = None


class Series(Lenient):
    metric: StrMap
    values: Items[Annotated[tuple[float, str], Strict(False)]]


class ScoringRequest(Lenient):
    """``POST /scoring`` body: the concatenated ``query_range`` results."""

    data: Items[Series]


class ScoreResult(Lenient):
    metric: StrMap = Field(default_factory=dict)
    score: float


class ScoringResponse(Lenient):
    """``POST /scoring`` answer."""

    results: Items[ScoreResult]
