"""The contract between the compiler and the agent: the summaries and where they live.

The compiler writes, and every agent reads, the ConfigMap named here, holding the JSON
list of :class:`Summary` under ``summaries``; both sides import this module so that a
name, a limit or a field exists once.
"""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

import re
from typing import Annotated, Generic, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    RootModel,
)

from dsf_contract.fields import (
    Items,
    Location,
    NonNegativeInt,
    PositiveInt,
    ScoreDestination,
    SourceType,
)

#: The DynamicScoringConfig's name, and the name of the ConfigMap that carries the summaries.
CONFIG_NAME = "dynamic-scoring-config"
CONFIG_MAP_NAME = CONFIG_NAME
#: The ConfigMap key holding the JSON list of summaries.
CONFIG_MAP_KEY = "summaries"
#: Where the agent and its ConfigMap live on a managed cluster unless ``dsf.yaml`` says otherwise.
DEFAULT_AGENT_NAMESPACE = "dynamic-scoring"
#: Prometheus refuses a range query with more points per series than this.
MAX_POINTS = 11_000


def range_step_problem(range_: int, step: int) -> str | None:
    """What is wrong with a query's ``range``/``step`` (seconds), or None when Prometheus accepts it."""
    if step > range_:
        return f"step {step} s is longer than range {range_} s"
    if range_ // step > MAX_POINTS:
        return f"range {range_} s / step {step} s is {range_ // step} points; Prometheus allows {MAX_POINTS}"
    return None


PLACEHOLDERS = (
    "scoreName",
    "cluster",
    "node",
    "device",
    "namespace",
    "app",
    "pod",
    "container",
    "meta",
)
PLACEHOLDER_RE = re.compile(r"\$\{([^}]*)\}")


def _check_dimension_format(value: str) -> str:
    unknown = sorted({p for p in PLACEHOLDER_RE.findall(value) if p not in PLACEHOLDERS})
    if unknown:
        allowed = ", ".join("${" + p + "}" for p in PLACEHOLDERS)
        shown = ", ".join("${" + p + "}" for p in unknown)
        raise ValueError(f"unknown placeholder {shown}; allowed: {allowed}")
    return value


DimensionFormat = Annotated[str, AfterValidator(_check_dimension_format), Field(min_length=1)]

_OUTSIDE = re.compile(r"[^a-z0-9.-]")
_DASHES = re.compile(r"-+")


def sanitize_score_name(score_name: str) -> str:
    """The AddOnPlacementScore name of a score.

    Lower-case; every character outside ``[a-z0-9.-]`` becomes ``-``; runs of ``-``
    collapse; leading/trailing ``-`` and ``.`` are trimmed; cut to 253 characters (then
    trailing non-alphanumerics trimmed); empty becomes ``score``; a non-alphanumeric
    first or last character gets ``a`` prepended/appended.

    >>> sanitize_score_name("sample_my_score"), sanitize_score_name("My Score@Name")
    ('sample-my-score', 'my-score-name')
    """
    name = _DASHES.sub("-", _OUTSIDE.sub("-", score_name.lower())).strip("-.")
    name = name[:253].rstrip("-.")
    if not name:
        return "score"
    if not name[0].isalnum():
        name = "a" + name
    if not name[-1].isalnum():
        name = name + "a"
    return name


class Summary(BaseModel):
    """One resolved scorer for one cluster: the agent's input (upstream's wire format)."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)

    name: str
    scoreName: str = Field(min_length=1)
    sourceType: SourceType
    sourceEndpoint: str
    sourceEndpointAuthName: str
    sourceEndpointAuthKey: str
    sourceQuery: str
    sourceRange: NonNegativeInt
    sourceStep: NonNegativeInt
    scoringEndpoint: str = Field(min_length=1)
    scoringInterval: PositiveInt
    scoringEndpointAuthName: str
    scoringEndpointAuthKey: str
    location: Location
    scoreDestination: ScoreDestination
    scoreDimensionFormat: str


#: The summary's keys in wire order (upstream's): the order of the model's fields.
SUMMARY_KEYS = tuple(Summary.model_fields)


_Root = TypeVar("_Root")


class _DeferredRoot(RootModel[_Root], Generic[_Root]):
    """A root model built on first use, like its subclasses.

    ``RootModel[X]`` is built when the class statement runs (pydantic's ``RootModel``
    does not defer), which made every command that imports this module build the
    summaries' schema; only ``dsf-compile schemas`` uses the list.
    """

    model_config = ConfigDict(defer_build=True)


class SummaryList(_DeferredRoot[Items[Summary]]):
    """The ``summaries`` key of the ConfigMap: a JSON list of summaries."""

    model_config = ConfigDict(defer_build=True, frozen=True, strict=True)
