"""One scorer's spec (and synced ``/config``) → its summary (``docs/architecture.md``, "Resolution").

Pure. Each summary field takes the first non-empty value (numbers: the first > 0) of
the scorer's synced ``/config`` document (``L``, only for ``Full`` scorers) and its
``spec`` (``S``), then falls back to the host of ``configURL``. Every missing or invalid
value is a problem naming the scorer file, the field, and where the value could come from.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from dsf_compile.inputs.located import Located
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.sync.lock import sha256
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.fields import check_http_url
from dsf_contract.problem import Problem
from dsf_contract.records import frozen
from dsf_contract.scoring_api import ScorerConfig
from dsf_contract.summary import Summary, range_step_problem


@frozen
class ResolvedScorer:
    """One scorer's summary (the same on every cluster) and where it was defined."""

    name: str
    summary: Summary
    located: Located[DynamicScorer]

    @property
    def score_name(self) -> str:
        return self.summary.scoreName

    @property
    def config_hash(self) -> str:
        return sha256(self.summary.model_dump(mode="json"))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def join_url(host: str, path: str) -> str:
    """``http://h:9090`` + ``/api/v1/query_range`` → ``http://h:9090/api/v1/query_range``."""
    if not path:
        return host
    return host.rstrip("/") + "/" + path.lstrip("/")


def field_at(obj: Any, *names: str) -> Any:
    """``obj.<names…>``, or None where a step is missing."""
    for name in names:
        if obj is None:
            return None
        obj = getattr(obj, name, None)
    return obj


class _Resolver:
    """Resolves one scorer, collecting problems located in its file."""

    def __init__(self, located: Located[DynamicScorer], config: ScorerConfig | None) -> None:
        self.located = located
        self.spec = located.model.spec
        self.config = config
        self.full = self.spec.configSyncMode == "Full"
        self.problems: list[Problem] = []

    def pick(self, path: tuple[str, ...], *, number: bool = False) -> tuple[Any, str]:
        """First non-empty value of L.<path>, S.<path>; returns (value, origin)."""
        for origin, root in (("/config", self.config), ("spec", self.spec)):
            value = field_at(root, *path)
            if (
                value is None
                or value == ""
                or (number and not (isinstance(value, int) and value > 0))
            ):
                continue
            return value, origin
        return None, ""

    def missing(self, path: tuple[str, ...], what: str) -> None:
        where = f"spec.{'.'.join(path)}"
        if self.full:
            where += f" or the scorer's /config ({'.'.join(path)})"
        self.problems.append(
            self.located.problem(
                ("spec", *path), f"{what} is missing after resolution: set {where}"
            )
        )

    def invalid(self, path: tuple[str, ...], origin: str, message: str) -> None:
        if origin == "/config":
            pointer: Pointer = ("spec", "configURL")
            message = f"/config {'.'.join(path)}: {message}"
        else:
            pointer = ("spec", *path)
        self.problems.append(self.located.problem(pointer, message))

    def endpoint(self, part: str) -> str | None:
        host, host_origin = self.pick((part, "host"))
        if host is None:
            host, host_origin = _origin(self.spec.configURL), "spec"
        path, _ = self.pick((part, "path"))
        url = join_url(str(host), str(path or ""))
        try:
            check_http_url(url)
        except ValueError as err:
            self.invalid((part, "host"), host_origin, f"endpoint {url!r} {err}")
            return None
        return url

    def resolve(self) -> ResolvedScorer | None:
        """The scorer's summary, or None with :attr:`problems` saying what is missing."""
        score_name = self.required(("scoring", "params", "name"), "the score name")
        source_type = self.required(("source", "type"), "the source type (Prometheus or None)")
        interval = self.required(
            ("scoring", "params", "interval"), "the scoring interval", number=True
        )
        scoring_endpoint = self.endpoint("scoring")
        source = self.source() if source_type == "Prometheus" else _NO_SOURCE
        scoring_auth = _secret_ref(self.spec, "scoring")
        if self.problems or scoring_endpoint is None:
            return None
        spec = self.spec
        summary = Summary(
            name=self.located.model.metadata.name,
            scoreName=score_name,
            sourceType=source_type,
            sourceEndpoint=source.endpoint,
            sourceEndpointAuthName=source.auth[0],
            sourceEndpointAuthKey=source.auth[1],
            sourceQuery=source.query,
            sourceRange=source.range,
            sourceStep=source.step,
            scoringEndpoint=scoring_endpoint,
            scoringInterval=interval,
            scoringEndpointAuthName=scoring_auth[0],
            scoringEndpointAuthKey=scoring_auth[1],
            location=spec.location,
            scoreDestination=spec.scoreDestination,
            scoreDimensionFormat=spec.scoreDimensionFormat,
        )
        return ResolvedScorer(self.located.model.metadata.name, summary, self.located)

    def required(self, path: tuple[str, ...], what: str, *, number: bool = False) -> Any:
        """The value at ``path`` (see :meth:`pick`), or None after saying it is missing."""
        value, _ = self.pick(path, number=number)
        if value is None:
            self.missing(path, what)
        return value

    def source(self) -> _Source:
        """A Prometheus source: its endpoint, query, range and step, and its Secret."""
        endpoint = self.endpoint("source") or ""
        query = self.required(("source", "params", "query"), "the PromQL query")
        range_, range_origin = self.pick(("source", "params", "range"), number=True)
        if range_ is None:
            self.missing(("source", "params", "range"), "the query range")
        step, step_origin = self.pick(("source", "params", "step"), number=True)
        if step is None:
            self.missing(("source", "params", "step"), "the query step")
        if range_ and step:
            problem = range_step_problem(range_, step)
            if problem is not None:
                field = "step" if step > range_ else "range"
                origin = step_origin if step > range_ else range_origin
                self.invalid(("source", "params", field), origin, problem)
        auth = _secret_ref(self.spec, "source")
        return _Source(endpoint, query or "", range_ or 0, step or 0, auth)


@frozen
class _Source:
    """What a summary says of the scorer's source (nothing for ``type: None``)."""

    endpoint: str
    query: str
    range: int
    step: int
    auth: tuple[str, str]


_NO_SOURCE = _Source("", "", 0, 0, ("", ""))


def _secret_ref(spec: Any, part: str) -> tuple[str, str]:
    """``(name, key)`` of ``spec.<part>.auth.tokenSecretRef``, or empty strings."""
    ref = field_at(spec, part, "auth", "tokenSecretRef")
    return (ref.name, ref.key) if ref else ("", "")


def resolve_scorer(
    located: Located[DynamicScorer], config: ScorerConfig | None
) -> tuple[ResolvedScorer | None, list[Problem]]:
    """Resolve one scorer per the precedence table; problems instead of a result when incomplete."""
    resolver = _Resolver(located, config)
    resolved = resolver.resolve()
    return resolved, resolver.problems
