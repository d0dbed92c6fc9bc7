"""Configuration: the summary list, parsed from the ConfigMap's or a file's text.

Parsing is pure (:func:`parse_config_text`, :func:`parse_config_document`); the two
sources (:mod:`agent.config_sources`) only deliver raw documents and report when they
change. A document that cannot
be used at all raises :class:`ConfigError` and the caller keeps its last good
configuration; a single bad summary is reported and left out, and the others are used.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from agent.errors import ConfigError, Reason
from dsf_contract.bounded_json import MAX_JSON_DEPTH, load_json
from dsf_contract.failures import RequestFailure
from dsf_contract.fields import check_http_url
from dsf_contract.summary import CONFIG_MAP_KEY, Summary
from dsf_contract.summary import sanitize_score_name as sanitize_name
from dsf_contract.validation_errors import described

log = logging.getLogger("dsf.agent.config")
MAX_CONFIG_BYTES = (
    8 * 1024 * 1024
)  # a ConfigMap holds at most 1 MiB; anything far larger is not one


@dataclass(frozen=True)
class ParsedConfig:
    """A usable configuration: the good summaries, what was wrong with the others, and the
    score names of rejected summaries (their running scorers keep their last good settings)."""

    summaries: tuple[Summary, ...]
    problems: tuple[str, ...] = ()
    rejected_score_names: frozenset[str] = field(default_factory=frozenset)


def _semantic_problems(summary: Summary) -> list[str]:
    """What the schema cannot say: URLs, Prometheus fields, both-or-neither Secret refs."""
    problems: list[str] = []
    try:
        check_http_url(summary.scoringEndpoint)
    except ValueError as err:
        problems.append(f"scoringEndpoint {err}")
    if summary.sourceType == "Prometheus":
        try:
            check_http_url(summary.sourceEndpoint)
        except ValueError as err:
            problems.append(f"sourceEndpoint {err}")
        if not summary.sourceQuery.strip():
            problems.append("sourceQuery must not be empty when sourceType is Prometheus")
        if summary.sourceRange <= 0 or summary.sourceStep <= 0:
            problems.append("sourceRange and sourceStep must be > 0 when sourceType is Prometheus")
    for prefix in ("sourceEndpointAuth", "scoringEndpointAuth"):
        name, key = getattr(summary, f"{prefix}Name"), getattr(summary, f"{prefix}Key")
        if bool(name) != bool(key):
            problems.append(f"{prefix}Name and {prefix}Key must be set together")
    return problems


# ------------------------------------------------------------- bounded parsing
#
# A configuration is read from a file or an API that someone else writes: a 100,000-deep
# array, a 6,000-digit number or an 8 MiB alias bomb must give a ConfigError, never a
# RecursionError or ValueError that ends the follower. Both parsers are the compiler's
# bounded ones: JSON through dsf_compile.edges.untrusted (nesting and number length checked
# before Python's parser recurses), YAML through its loader (depth, aliases and bad
# scalars checked on libyaml's iterative event stream).


def load_config_json(text: str | bytes, what: str) -> Any:
    """``text`` parsed as JSON, bounded in size and depth; :class:`ConfigError` otherwise."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{what} is larger than {MAX_CONFIG_BYTES} bytes", reason=RequestFailure.TOO_LARGE
        )
    try:
        return load_json(text, max_depth=MAX_JSON_DEPTH)
    except ValueError as err:  # also a number too long, NaN, bytes that are not text
        if "nested deeper" in str(err):
            raise ConfigError(
                f"{what} nests deeper than {MAX_JSON_DEPTH} levels", reason=Reason.TOO_DEEP
            ) from None
        raise ConfigError(f"{what} is not valid JSON: {err}", reason=Reason.INVALID_JSON) from None


def _load_yaml(text: str | bytes, source: str) -> Any:
    """The one YAML document of ``text``, read by the compiler's bounded loader."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ConfigError(
                f"{source} is not UTF-8 text (byte {err.start})", reason=Reason.INVALID_YAML
            ) from None
    # imported here, when a file is YAML: PyYAML is 1.4 MB of the agent's memory, and the
    # summaries a ConfigMap carries are JSON
    from dsf_contract.bounded_yaml import parse_yaml

    documents, problems = parse_yaml(text, source)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        reason = "too_deep" if "nested deeper" in problems[0].message else "invalid_yaml"
        raise ConfigError(f"neither JSON nor YAML: {problems[0].format()}{more}", reason=reason)
    if len(documents) > 1:
        raise ConfigError(
            f"{source} holds {len(documents)} YAML documents, expected one",
            reason=Reason.INVALID_DOCUMENT,
        )
    return documents[0].data if documents else None


def _summary_list(document: Any) -> list[Any]:
    """The summary list inside ``document``: a bare list, or a ConfigMap's ``data.summaries``."""
    if isinstance(document, list):
        return document
    if not isinstance(document, dict):
        raise ConfigError(
            "expected a JSON list of summaries or a ConfigMap", reason=Reason.INVALID_DOCUMENT
        )
    if document.get("kind") not in (None, "ConfigMap"):
        raise ConfigError(
            f"expected a ConfigMap, found kind {document.get('kind')!r}",
            reason=Reason.INVALID_DOCUMENT,
        )
    data = document.get("data")
    if not isinstance(data, dict) or CONFIG_MAP_KEY not in data:
        raise ConfigError(
            f"the ConfigMap has no data.{CONFIG_MAP_KEY} key", reason=Reason.MISSING_KEY
        )
    raw = data[CONFIG_MAP_KEY]
    if not isinstance(raw, str):
        raise ConfigError(f"data.{CONFIG_MAP_KEY} must be a string", reason=Reason.INVALID_DOCUMENT)
    inner = load_config_json(raw, f"data.{CONFIG_MAP_KEY}")
    if not isinstance(inner, list):
        raise ConfigError(
            f"data.{CONFIG_MAP_KEY} must be a JSON list", reason=Reason.INVALID_DOCUMENT
        )
    return inner


def parse_config_document(document: Any) -> ParsedConfig:
    """Validate every summary of ``document``; a bad one is reported and left out."""
    good: list[Summary] = []
    problems: list[str] = []
    rejected: set[str] = set()
    seen_names: dict[str, str] = {}
    for index, item in enumerate(_summary_list(document)):
        label = f"summaries[{index}]"
        score_name = item.get("scoreName") if isinstance(item, dict) else None
        if isinstance(score_name, str):
            label = f"{label} ({score_name})"
        try:
            summary = Summary.model_validate(item)
        except ValidationError as err:
            details = "; ".join(described(e) for e in err.errors())
            problems.append(f"{label}: {details}")
            if isinstance(score_name, str):
                rejected.add(score_name)
            continue
        issues = _semantic_problems(summary)
        object_name = sanitize_name(summary.scoreName)
        if summary.scoreName in {s.scoreName for s in good}:
            issues.append(f"scoreName {summary.scoreName!r} is used by an earlier summary")
        elif object_name in seen_names:
            issues.append(
                f"scoreName {summary.scoreName!r} gives the same AddOnPlacementScore name {object_name!r} "
                f"as {seen_names[object_name]!r}"
            )
        if issues:
            problems.append(f"{label}: {'; '.join(issues)}")
            rejected.add(summary.scoreName)
            continue
        seen_names[object_name] = summary.scoreName
        good.append(summary)
    # A scorer both kept (first) and rejected (duplicate) keeps its good settings.
    rejected -= {s.scoreName for s in good}
    return ParsedConfig(tuple(good), tuple(problems), frozenset(rejected))


def parse_config_text(text: str | bytes, source: str = "configuration") -> ParsedConfig:
    """Parse a file's content: the JSON summary list, or a ConfigMap in YAML or JSON.

    Never raises anything but :class:`ConfigError`, whatever ``text`` holds.
    """
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"configuration larger than {MAX_CONFIG_BYTES} bytes", reason=RequestFailure.TOO_LARGE
        )
    try:
        document = load_config_json(text, "the configuration")
    except ConfigError as err:
        if err.reason != Reason.INVALID_JSON:
            raise
        # Not JSON: YAML, or JSON refused for a number too long, which the YAML loader
        # then reports with its line and column.
        document = _load_yaml(text, source)
    if document is None:
        raise ConfigError("the configuration is empty", reason=Reason.EMPTY)
    return parse_config_document(document)


#: What a source yields: a usable configuration, or why the latest one is not.
ConfigEvent = ParsedConfig | ConfigError
