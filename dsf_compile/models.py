"""Frozen pydantic models of every document the project reads or writes.

The JSON Schemas in ``schemas/`` and the OpenAPI schemas of the rendered CRDs are
generated from these models (``dsf_compile.schemas``), so the models are the single
definition of every format: inputs (DynamicScorer, DynamicScoringConfig, ManagedCluster,
``dsf.yaml``), the lockfile, a scorer's ``/config`` document, the ``/scoring`` bodies
and the per-cluster summary list.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    RootModel,
    Strict,
    model_validator,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

API_GROUP = "dynamic-scoring.open-cluster-management.io"
API_VERSION = f"{API_GROUP}/v1alpha1"
CONFIG_NAME = "dynamic-scoring-config"

# --------------------------------------------------------------------------- types


class _CaseInsensitive:
    """Marks an enumeration that accepts any letter case and stores the canonical one.

    Inputs are validated against a case-insensitive pattern; the canonical form (what
    the compiler writes, and what the CRDs accept) is a plain ``enum``.
    """

    def __init__(self, *values: str) -> None:
        self.values = values
        self._canonical = {v.lower(): v for v in values}

    def fold(self, value: Any) -> Any:
        if isinstance(value, str):
            return self._canonical.get(value.lower(), value)
        return value

    def __get_pydantic_json_schema__(
        self, schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        if handler.mode == "serialization":
            return {"type": "string", "enum": list(self.values)}
        alternatives = "|".join(
            "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else re.escape(c) for c in v)
            for v in self.values
        )
        return {
            "type": "string",
            "pattern": f"^(?:{alternatives})$",
            "description": f"One of {', '.join(self.values)} (any letter case).",
        }


def _choice(marker: _CaseInsensitive) -> Any:
    return [BeforeValidator(marker.fold), marker]


_SYNC = _CaseInsensitive("Full", "None")
_SOURCE = _CaseInsensitive("Prometheus", "None")
_LOCATION = _CaseInsensitive("Internal", "External")
_DESTINATION = _CaseInsensitive("AddOnPlacementScore", "None")

SyncMode = Annotated[Literal["Full", "None"], *_choice(_SYNC)]
SourceType = Annotated[Literal["Prometheus", "None"], *_choice(_SOURCE)]
Location = Annotated[Literal["Internal", "External"], *_choice(_LOCATION)]
ScoreDestination = Annotated[Literal["AddOnPlacementScore", "None"], *_choice(_DESTINATION)]
Health = Literal["Active", "Inactive"]

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_RE = re.compile(f"^{_DNS_LABEL}$")
DNS_SUBDOMAIN_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
SECRET_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")
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


def _dns_subdomain(value: str) -> str:
    if len(value) > 253 or not DNS_SUBDOMAIN_RE.match(value):
        raise ValueError(
            "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', "
            "starting and ending with a letter or digit, at most 253 characters"
        )
    return value


def _dns_label(value: str) -> str:
    if len(value) > 63 or not DNS_LABEL_RE.match(value):
        raise ValueError(
            "must be a DNS-1123 label: lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters"
        )
    return value


def _secret_key(value: str) -> str:
    if len(value) > 253 or not SECRET_KEY_RE.match(value):
        raise ValueError(
            "must be a Secret key: letters, digits, '-', '_' or '.', at most 253 characters"
        )
    return value


def check_http_url(value: str, *, allow_path: bool = True) -> str:
    """An absolute ``http``/``https`` URL with a host and no credentials."""
    if any(c.isspace() for c in value):
        raise ValueError("must be a URL without white space")
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError as err:
        raise ValueError(f"is not a valid URL ({err})") from None
    if parts.scheme not in ("http", "https"):
        raise ValueError("must be an absolute http:// or https:// URL")
    if "@" in parts.netloc:
        raise ValueError("must not carry credentials (user:password@host); use a Secret reference")
    if not parts.hostname:
        raise ValueError("must name a host")
    if port == 0:
        raise ValueError("port must be between 1 and 65535")
    if not allow_path and parts.path not in ("", "/"):
        raise ValueError("must be scheme://host[:port] without a path")
    if parts.fragment:
        raise ValueError("must not have a #fragment")
    return value


def _check_dimension_format(value: str) -> str:
    unknown = sorted({p for p in PLACEHOLDER_RE.findall(value) if p not in PLACEHOLDERS})
    if unknown:
        allowed = ", ".join("${" + p + "}" for p in PLACEHOLDERS)
        shown = ", ".join("${" + p + "}" for p in unknown)
        raise ValueError(f"unknown placeholder {shown}; allowed: {allowed}")
    return value


DnsSubdomain = Annotated[
    str,
    AfterValidator(_dns_subdomain),
    Field(max_length=253, json_schema_extra={"pattern": DNS_SUBDOMAIN_RE.pattern}),
]
DnsLabel = Annotated[
    str,
    AfterValidator(_dns_label),
    Field(max_length=63, json_schema_extra={"pattern": DNS_LABEL_RE.pattern}),
]
SecretKey = Annotated[
    str,
    AfterValidator(_secret_key),
    Field(max_length=253, json_schema_extra={"pattern": SECRET_KEY_RE.pattern}),
]
_URL_SCHEMA = {"pattern": r"^[Hh][Tt][Tt][Pp][Ss]?://[^@/?#\s]+([/?][^\s#]*)?$"}
HttpUrl = Annotated[str, AfterValidator(check_http_url), Field(json_schema_extra=_URL_SCHEMA)]
DimensionFormat = Annotated[str, AfterValidator(_check_dimension_format), Field(min_length=1)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
StrMap = dict[str, str]
T = TypeVar("T")
#: A YAML/JSON list, stored as a tuple (frozen); its items keep their strict types.
Items = Annotated[tuple[T, ...], Strict(False)]


class Frozen(BaseModel):
    """Base of our own kinds: immutable, strict, unknown fields are errors."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Lenient(BaseModel):
    """Base of documents written by others (a scorer's ``/config``): extra fields ignored."""

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


# ----------------------------------------------------------------- DynamicScorer


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


# --------------------------------------------------------- DynamicScoringConfig


class LabelSelectorRequirement(Frozen):
    key: str = Field(min_length=1)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Items[str] | None = None

    @model_validator(mode="after")
    def _values_fit_operator(self) -> LabelSelectorRequirement:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs a non-empty values list")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class LabelSelector(Frozen):
    """A Kubernetes label selector; an empty one selects every cluster."""

    matchLabels: StrMap | None = None
    matchExpressions: Items[LabelSelectorRequirement] | None = None


class Mask(Frozen):
    """Keeps the scores whose name matches ``scoreName`` off the matching clusters."""

    clusterName: str | None = Field(
        default=None, min_length=1, description="A cluster name or shell-style glob."
    )
    clusterSelector: LabelSelector | None = None
    scoreName: str = Field(min_length=1, description="A score name or shell-style glob.")

    @model_validator(mode="after")
    def _needs_cluster_part(self) -> Mask:
        if self.clusterName is None and self.clusterSelector is None:
            raise ValueError("a mask needs clusterName and/or clusterSelector")
        return self


class DynamicScoringConfigSpec(Frozen):
    masks: Items[Mask] = ()


class ConfigMeta(Frozen):
    name: Literal["dynamic-scoring-config"]
    namespace: DnsLabel | None = None
    labels: StrMap | None = None
    annotations: StrMap | None = None


class DynamicScoringConfig(Frozen):
    """The one ``DynamicScoringConfig`` (named ``dynamic-scoring-config``): the masks."""

    apiVersion: Literal["dynamic-scoring.open-cluster-management.io/v1alpha1"]
    kind: Literal["DynamicScoringConfig"]
    metadata: ConfigMeta
    spec: DynamicScoringConfigSpec = DynamicScoringConfigSpec()


# -------------------------------------------------------------------- inventory


class ClusterMeta(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    name: DnsLabel
    labels: StrMap = Field(default_factory=dict)


class ManagedCluster(BaseModel):
    """An inventory entry, as ``kubectl get managedclusters -o yaml`` prints it.

    Only ``metadata.name`` and ``metadata.labels`` are used; ``spec``, ``status`` and
    server-set metadata are accepted and ignored.
    """

    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)

    apiVersion: Literal["cluster.open-cluster-management.io/v1"]
    kind: Literal["ManagedCluster"]
    metadata: ClusterMeta


# --------------------------------------------------------------------- settings

#: What OCM's addon manager treats as a template variable (``{{NAME}}``, and anything else
#: between double braces that a user may have meant as one).
TEMPLATE_VARIABLE_RE = re.compile(r"\{\{(.*?)\}\}")


def _no_template_variable(value: str) -> str:
    # OCM substitutes {{…}} in the agent's AddOnTemplate and silently empties the ones it
    # does not know; the agent settings end up in that template (or beside it), so a
    # {{…}} here is refused instead of becoming an empty image or a broken proxy URL.
    found = TEMPLATE_VARIABLE_RE.search(value)
    if found:
        raise ValueError(
            f"{found.group(0)} looks like an OCM template variable; agent settings must not contain '{{{{…}}}}'"
        )
    return value


#: A string of the agent settings: no ``{{…}}`` (see :func:`_no_template_variable`).
AgentStr = Annotated[str, AfterValidator(_no_template_variable)]


class Toleration(Frozen):
    key: AgentStr | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: AgentStr | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None


class ResourceList(Frozen):
    cpu: AgentStr | None = None
    memory: AgentStr | None = None


class Resources(Frozen):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class ProxySettings(Frozen):
    httpProxy: AgentStr | None = None
    httpsProxy: AgentStr | None = None
    noProxy: AgentStr | None = None


class AgentOverride(Frozen):
    """Agent settings for the clusters this override selects (by name glob and/or labels)."""

    clusterName: str | None = Field(default=None, min_length=1)
    clusterSelector: LabelSelector | None = None
    image: AgentStr | None = Field(default=None, min_length=1)
    nodeSelector: dict[str, AgentStr] | None = None
    tolerations: Items[Toleration] | None = None
    resources: Resources | None = None
    proxy: ProxySettings | None = None

    @model_validator(mode="after")
    def _needs_cluster_part(self) -> AgentOverride:
        if self.clusterName is None and self.clusterSelector is None:
            raise ValueError("an override needs clusterName and/or clusterSelector")
        return self


class AgentSettings(Frozen):
    image: AgentStr = Field(default="quay.io/dynamic-scoring/dsf-agent:0.1.0", min_length=1)
    imagePullPolicy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    logLevel: Literal["debug", "info", "warning", "error"] = "info"
    serviceMonitor: bool = False
    resources: Resources = Resources(
        requests=ResourceList(cpu="50m", memory="64Mi"),
        limits=ResourceList(cpu="500m", memory="256Mi"),
    )
    overrides: Items[AgentOverride] = ()


class RepositorySettings(Frozen):
    url: str = "https://github.com/example/dsf-fleet.git"
    branch: str = Field(default="main", min_length=1)
    path: str = Field(default="rendered", min_length=1)


class SyncSettings(Frozen):
    timeoutSeconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    concurrency: Annotated[int, Field(ge=1, le=1024)] = 128
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    maxResponseBytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = 1024 * 1024
    allowedHosts: Items[str] = Field(
        default=(), description="Host names or globs sync may contact; empty allows every host."
    )
    resolve: dict[str, str] = Field(
        default_factory=dict,
        description="Connect to another address for a host:port, like curl --connect-to: {'svc.ns:8000': '127.0.0.1:18000'}.",
    )


class RenderSettings(Frozen):
    keepInactive: bool = False


class Settings(Frozen):
    """``dsf.yaml``: every key has a default."""

    hubNamespace: DnsLabel = "open-cluster-management"
    agentNamespace: DnsLabel = "dynamic-scoring"
    addonName: DnsLabel = "dynamic-scoring-framework"
    agent: AgentSettings = AgentSettings()
    repository: RepositorySettings = RepositorySettings()
    sync: SyncSettings = SyncSettings()
    render: RenderSettings = RenderSettings()


# ------------------------------------------------------------- /config document


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


# --------------------------------------------------------------------- lockfile


class LockEntry(Frozen):
    """What the last sync learned about one scorer."""

    mode: SyncMode
    configURL: str
    health: Health
    reason: str = ""
    specHash: str
    config: ScorerConfig | None = None
    contentHash: str


class Lockfile(Frozen):
    """``dsf.lock.json``."""

    version: Literal[1] = 1
    scorers: dict[str, LockEntry] = Field(default_factory=dict)


# ---------------------------------------------------------------------- summary

SUMMARY_KEYS = (
    "name",
    "scoreName",
    "sourceType",
    "sourceEndpoint",
    "sourceEndpointAuthName",
    "sourceEndpointAuthKey",
    "sourceQuery",
    "sourceRange",
    "sourceStep",
    "scoringEndpoint",
    "scoringInterval",
    "scoringEndpointAuthName",
    "scoringEndpointAuthKey",
    "location",
    "scoreDestination",
    "scoreDimensionFormat",
)


class Summary(BaseModel):
    """One resolved scorer for one cluster: the agent's input (upstream's wire format)."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

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


class SummaryList(RootModel[Items[Summary]]):
    """The ``summaries`` key of the ConfigMap: a JSON list of summaries."""

    model_config = ConfigDict(frozen=True, strict=True)


# ------------------------------------------------------------ /scoring bodies


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
