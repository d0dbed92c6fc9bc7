"""The vocabulary every format shares: base models, names, URLs, enumerations.

The models of each format (``inputs/``, ``contract.py``, ``scoring_api.py``,
``sync/lock.py``) are built from these; the JSON Schemas in ``schemas/`` and the
OpenAPI schemas of the rendered CRDs are generated from those models
(``dsf_compile.schemas``), so the models are the single definition of every format.
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
    Strict,
)
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import core_schema

API_GROUP = "dynamic-scoring.open-cluster-management.io"
API_VERSION = f"{API_GROUP}/v1alpha1"

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
