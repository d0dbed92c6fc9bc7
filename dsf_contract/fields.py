"""The vocabulary every format shares: base models, names, URLs, enumerations.

The models of each format (the compiler's ``inputs/`` and ``sync/lock.py``, the
contract's ``summary.py`` and ``scoring_api.py``) are built from these; the JSON Schemas in ``schemas/`` and the
OpenAPI schemas of the rendered CRDs are generated from those models
(``dsf_compile.pipeline.schemas``), so the models are the single definition of every format.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal, TypeVar, get_args
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    GetJsonSchemaHandler,
    Strict,
    WithJsonSchema,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import PydanticCustomError, core_schema

API_GROUP = "dynamic-scoring.open-cluster-management.io"
#: The version of the dynamic-scoring API (its CRDs serve this one only).
API_GROUP_VERSION = "v1alpha1"
API_VERSION = f"{API_GROUP}/{API_GROUP_VERSION}"

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


def exactly(value: str) -> list[Any]:
    """``Annotated[str, *exactly(NAME)]``: a string that must be the constant ``NAME``.

    What ``Literal[...]`` gives (the same ``literal_error``, so the same located message,
    and ``const`` in the JSON Schema), for a value the contract names once in a constant:
    mypy takes no constant inside ``Literal``.
    """

    def check(found: Any) -> Any:
        if not isinstance(found, str) or found != value:
            raise PydanticCustomError(
                "literal_error", "Input should be {expected}", {"expected": repr(value)}
            )
        return found

    return [BeforeValidator(check), WithJsonSchema({"const": value, "type": "string"})]


def _choice(literal: Any) -> Any:
    """The metadata that makes ``literal`` (a ``Literal`` type) accept any letter case."""
    marker = _CaseInsensitive(*get_args(literal))
    return [BeforeValidator(marker.fold), marker]


# each enumeration's values written once: in its Literal, which the checks are built from
_Sync = Literal["Full", "None"]
_Source = Literal["Prometheus", "None"]
_Location = Literal["Internal", "External"]
# "AddOnPlacementScore": the agent writes that kind (scores.SCORE_KIND, which code compares with)
_Destination = Literal["AddOnPlacementScore", "None"]

SyncMode = Annotated[_Sync, *_choice(_Sync)]
SourceType = Annotated[_Source, *_choice(_Source)]
Location = Annotated[_Location, *_choice(_Location)]
ScoreDestination = Annotated[_Destination, *_choice(_Destination)]
Health = Literal["Active", "Inactive"]

_DNS_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_RE = re.compile(f"^{_DNS_LABEL}$")
DNS_SUBDOMAIN_RE = re.compile(rf"^{_DNS_LABEL}(\.{_DNS_LABEL})*$")
SECRET_KEY_RE = re.compile(r"^[-._a-zA-Z0-9]+$")


def _fitting(value: str, pattern: re.Pattern[str], most: int, message: str) -> str:
    """``value`` when it matches ``pattern`` in at most ``most`` characters; else the
    ``ValueError`` saying ``message``."""
    if len(value) > most or not pattern.fullmatch(value):
        raise ValueError(message)
    return value


def _dns_subdomain(value: str) -> str:
    return _fitting(
        value,
        DNS_SUBDOMAIN_RE,
        253,
        "must be a DNS-1123 subdomain: lower-case letters, digits, '-' and '.', "
        "starting and ending with a letter or digit, at most 253 characters",
    )


def is_dns_label(value: str) -> bool:
    """Whether ``value`` is a DNS-1123 label (a namespace's name, for one)."""
    return len(value) <= 63 and DNS_LABEL_RE.fullmatch(value) is not None


def _dns_label(value: str) -> str:
    return _fitting(
        value,
        DNS_LABEL_RE,
        63,
        "must be a DNS-1123 label: lower-case letters, digits and '-', "
        "starting and ending with a letter or digit, at most 63 characters",
    )


def _secret_key(value: str) -> str:
    return _fitting(
        value,
        SECRET_KEY_RE,
        253,
        "must be a Secret key: letters, digits, '-', '_' or '.', at most 253 characters",
    )


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


#: Kubernetes label rules (apimachinery ``IsQualifiedName`` and ``IsValidLabelValue``).
_LABEL_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_NAME_RE = re.compile(f"^{_LABEL_NAME}$")
LABEL_KEY_RE = re.compile(rf"^({_DNS_LABEL}(\.{_DNS_LABEL})*/)?{_LABEL_NAME}$")
LABEL_VALUE_RE = re.compile(rf"^({_LABEL_NAME})?$")
#: The annotations written on one of our objects, keys and values together. Kubernetes
#: allows 256 KiB for all of an object's annotations, and client-side apply (kubectl,
#: Argo CD's default) copies the whole object into one more annotation: a quarter leaves
#: room for that copy, the description and the compiler's own annotations.
MAX_ANNOTATIONS_BYTES = 64 * 1024


#: Characters that act on a terminal or a reader rather than show: C0 and C1 controls
#: (line breaks and ESC included), line and paragraph separators, bidi overrides.
_ACTING = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def check_plain_text(value: str) -> str:
    """A name that reaches printed output: one line, nothing a terminal or a reader acts on."""
    found = _ACTING.search(value)
    if found is not None:
        raise ValueError(
            f"holds the control character U+{ord(found.group()):04X} at position {found.start()}: "
            "names are printed by validate, explain and diff, one line each"
        )
    return value


def check_label_key(value: str) -> str:
    """A label or annotation key: ``[prefix/]name``, the prefix a DNS subdomain."""
    prefix, slash, name = value.rpartition("/")
    if slash:
        _fitting(
            prefix,
            DNS_SUBDOMAIN_RE,
            253,
            f"key {value!r}: the prefix before '/' must be a DNS-1123 subdomain "
            "(lower-case letters, digits, '-' and '.'), at most 253 characters",
        )
    _fitting(
        name,
        LABEL_NAME_RE,
        63,
        f"key {value!r}: the name{' after /' if slash else ''} must be at most 63 letters, "
        "digits, '-', '_' or '.', starting and ending with a letter or digit",
    )
    return value


def check_label_value(value: str) -> str:
    """A label value: empty, or at most 63 letters, digits, ``-``, ``_``, ``.``."""
    return _fitting(
        value,
        LABEL_VALUE_RE,
        63,
        "must be a label value: empty, or at most 63 letters, digits, '-', '_' or '.', "
        "starting and ending with a letter or digit",
    )


def _annotations_size(value: dict[str, str]) -> dict[str, str]:
    size = sum(len(k.encode()) + len(v.encode()) for k, v in value.items())
    if size > MAX_ANNOTATIONS_BYTES:
        raise ValueError(
            f"annotations total {size} bytes, more than {MAX_ANNOTATIONS_BYTES}: with their copy "
            "in client-side apply's last-applied annotation they would pass Kubernetes' 256 KiB"
        )
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
# Label keys and values, and the integer bounds, are checked by validators only: as
# JSON Schema keywords they would reach the rendered CRDs (a pattern on a map's keys
# becomes patternProperties, which a structural CRD schema may not hold).
#: A name that is printed (score names, globs): no control characters or line breaks.
PlainText = Annotated[str, AfterValidator(check_plain_text)]
LabelKey = Annotated[str, AfterValidator(check_label_key)]
LabelValue = Annotated[str, AfterValidator(check_label_value)]
#: Kubernetes labels (and selectors' ``matchLabels``): keys and values checked as the API does.
Labels = dict[LabelKey, LabelValue]
#: Annotations: label-style keys, free values, MAX_ANNOTATIONS_BYTES in all.
Annotations = Annotated[dict[LabelKey, str], AfterValidator(_annotations_size)]
#: Integers as Kubernetes (Go) and the agent hold them. (No input maps to an int32 field.)
INT64_MAX = 2**63 - 1


def _int64(value: int) -> int:
    if value > INT64_MAX:
        raise ValueError(f"must be <= {INT64_MAX} (a 64-bit integer)")
    if value < -INT64_MAX - 1:
        raise ValueError(f"must be >= {-INT64_MAX - 1} (a 64-bit integer)")
    return value


_INT64 = [AfterValidator(_int64), Field(json_schema_extra={"format": "int64"})]
Int64 = Annotated[int, *_INT64]
PositiveInt = Annotated[int, Field(gt=0), *_INT64]
NonNegativeInt = Annotated[int, Field(ge=0), *_INT64]
StrMap = dict[str, str]
T = TypeVar("T")
#: A YAML/JSON list, stored as a tuple (frozen); its items keep their strict types.
Items = Annotated[tuple[T, ...], Strict(False)]


class Frozen(BaseModel):
    """Base of our own kinds: immutable, strict, unknown fields are errors."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid", strict=True)


class Lenient(BaseModel):
    """Base of documents written by others (a scorer's ``/config``): extra fields ignored."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore", strict=True)


# ------------------------------------------------- OCM's own field types

# A qualified label or taint key, as the CRDs write it.
_QUALIFIED_KEY_RE = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$"
)


def matches(pattern: re.Pattern[str], what: str) -> Any:
    def check(value: str) -> str:
        if not pattern.fullmatch(value):  # not match(): "$" lets a trailing line break through
            raise ValueError(f"must be {what}")
        return value

    return AfterValidator(check)


QualifiedKey = Annotated[
    str,
    Field(max_length=316),
    matches(_QUALIFIED_KEY_RE, "a qualified key like 'gpu' or 'example.com/gpu'"),
]


#: The first and last moments Python can hold, in UTC. RFC 3339 writes times Python can
#: parse but not convert to UTC (``0001-01-01T00:00:00+14:00`` is in year 0): such a time
#: is clamped to these, which keeps its order against every other time — long expired,
#: or valid for ever — where refusing it would throw away a whole snapshot for one field.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


def in_utc(moment: datetime) -> datetime:
    """``moment`` (aware) in UTC, clamped to [EARLIEST, LATEST]."""
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        # only a zone offset pushes a parsed time past the range: east of UTC at year 1
        offset = moment.utcoffset()
        return EARLIEST if offset is not None and offset > timedelta(0) else LATEST


def add_seconds(moment: datetime, seconds: int) -> datetime:
    """``moment + seconds``, saturating at EARLIEST and LATEST (int64 seconds overflow a timedelta)."""
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return LATEST if seconds > 0 else EARLIEST


def parse_time(text: str) -> datetime:
    """An RFC 3339 time with its zone (``2026-11-22T10:00:00Z``), in UTC; ValueError saying what is wrong.

    Every time the compiler reads (``--at``, a snapshot's ``validUntil``, a taint's
    ``timeAdded``, MCP arguments) comes through here or :data:`Time`, so each use can
    compare, convert and print it without overflowing (see :data:`EARLIEST`).
    """
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an RFC 3339 time like 2026-11-22T10:00:00Z") from None
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} needs a time zone, like 2026-11-22T10:00:00Z")
    return in_utc(moment)


def _parse_time(value: object) -> object:
    # YAML reads an unquoted timestamp as a datetime, JSON leaves it a string.
    if isinstance(value, str):
        return parse_time(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("must carry a time zone (RFC 3339, like 2026-01-01T00:00:00Z)")
        return in_utc(value)
    return value


#: An RFC 3339 time with its zone (``2026-01-01T00:00:00Z``).
Time = Annotated[datetime, BeforeValidator(_parse_time)]
