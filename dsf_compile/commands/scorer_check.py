"""``dsf-compile scorer-check URL``: a conformance test of a live Scoring API.

Checks, in order, each printed as one ``PASS``/``FAIL``/``SKIP`` line with a short
reason and its timing: ``/healthz``, the ``/config`` document, the scoring endpoint it
names, a ``/scoring`` round trip with generated series and one with an empty ``data``
list, the response schema, finite scores, the auth behaviour (when a token is given),
and the latency of scoring. A check that cannot run because an earlier one failed is
``SKIP``ped. The network is touched only through the one ``httpx.AsyncClient`` made here
(its transport is injectable for tests), by :mod:`dsf_compile.commands.scorer_exchange`:
no redirects, capped bodies, and a deadline per request that covers the whole exchange,
so a server dripping one byte at a time cannot stretch it (the same ``asyncio.timeout`` that bounds each scorer's budget in sync).
Everything the scorer says is untrusted: JSON is parsed with bounded nesting, and every
line printed is redacted and escaped.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import TextIO

import httpx
from pydantic import ValidationError

from dsf_compile.commands.scorer_exchange import (
    POINTS_PER_SERIES,
    Answer,
    Endpoints,
    Report,
    RequestFailedError,
    Status,
    endpoints,
    generate_series,
    post_scoring,
    request,
    status_reason,
)
from dsf_compile.edges.untrusted import first_string_problem
from dsf_contract.bounded_json import load_json
from dsf_contract.fields import check_http_url
from dsf_contract.scoring_api import ScorerConfig, ScoringResponse
from dsf_contract.summary import range_step_problem
from dsf_contract.validation_errors import first_error
from dsf_transport.http import UserAgent, new_client

LATENCY_LIMIT_SECONDS = 5.0
MAX_CONFIG_BYTES = 1024 * 1024


def run_scorer_check(
    url: str,
    *,
    token: str | None,
    timeout: float,
    out: TextIO,
    transport: httpx.AsyncBaseTransport | None = None,
) -> bool:
    """Check the Scoring API at ``url`` (its base URL or its ``/config`` URL) against the contract.

    Prints one line per check and a summary to ``out``; returns True when no check failed.
    ``token`` is sent as ``Authorization: Bearer`` on scoring requests and is never printed.
    Each request, its answer included, must be over within ``timeout`` seconds.
    """
    report = Report(out, token or None, timeout)
    try:
        found = endpoints(url)
    except ValueError as error:
        # The URL is not echoed: a rejected one may carry user:password@.
        report.add("url", "FAIL", f"the URL {error}")
        return _summary(report, "the URL")
    asyncio.run(_run_checks(found, report, transport))
    return _summary(report, url)


async def _run_checks(
    endpoints: Endpoints, report: Report, transport: httpx.AsyncBaseTransport | None
) -> None:
    client = new_client(
        UserAgent.SCORER_CHECK,
        transport=transport,
        timeout=httpx.Timeout(report.timeout),
        headers={"Accept": "application/json"},
    )
    async with client:
        await _check_all(client, endpoints, report)


async def _check_all(client: httpx.AsyncClient, endpoints: Endpoints, report: Report) -> None:
    await _check_healthz(client, endpoints.healthz, report)
    config = await _check_config(client, endpoints, report)
    scoring_url = _check_scoring_endpoint(config, endpoints.origin, report)
    names = ("scoring", "scoring-empty", "response-schema", "finite-scores", "auth", "latency")
    if scoring_url is None or config is None:
        for name in names:
            report.add(name, "SKIP", "no scoring endpoint to call")
        return
    step = _positive(config.source.params.step if config.source and config.source.params else None)
    series_body = {"data": list(generate_series(step or 60))}
    with_series = await _check_scoring(client, scoring_url, series_body, report, "scoring")
    empty = await _check_scoring(client, scoring_url, {"data": []}, report, "scoring-empty")
    answers = [a for a in (with_series, empty) if a is not None]
    responses = _check_schema(answers, report, expected=2)
    _check_finite(responses, report)
    await _check_auth(client, scoring_url, series_body, with_series, report)
    _check_latency(answers, report)


async def _check_healthz(client: httpx.AsyncClient, url: str, report: Report) -> None:
    try:
        answer = await request(client, "GET", url, timeout=report.timeout, limit=MAX_CONFIG_BYTES)
    except RequestFailedError as error:
        report.add("healthz", "FAIL", str(error), error.seconds)
        return
    if answer.status == 200:
        report.add("healthz", "PASS", f"GET {url} -> 200", answer.seconds)
    else:
        report.add("healthz", "FAIL", f"GET {url} -> {status_reason(answer)}", answer.seconds)


async def _check_config(
    client: httpx.AsyncClient, endpoints: Endpoints, report: Report
) -> ScorerConfig | None:
    url = endpoints.config
    try:
        answer = await request(client, "GET", url, timeout=report.timeout, limit=MAX_CONFIG_BYTES)
    except RequestFailedError as error:
        report.add("config", "FAIL", str(error), error.seconds)
        return None
    if answer.status != 200:
        hint = (
            "; if the scorer serves its /config elsewhere (say /api/config), pass that URL"
            if endpoints.guessed and answer.status == 404
            else ""
        )
        report.add("config", "FAIL", f"GET {url} -> {status_reason(answer)}{hint}", answer.seconds)
        return None
    try:
        document = load_json(answer.body)  # bounded: a deeply nested answer is refused
    except ValueError as error:
        report.add("config", "FAIL", f"GET {url}: not JSON ({error})", answer.seconds)
        return None
    if not isinstance(document, dict):
        report.add(
            "config",
            "FAIL",
            f"GET {url}: a {type(document).__name__}, not a JSON object",
            answer.seconds,
        )
        return None
    try:
        config = ScorerConfig.model_validate(document)
    except ValidationError as error:
        report.add("config", "FAIL", f"GET {url}: {first_error(error)}", answer.seconds)
        return None
    found = first_string_problem(config.model_dump(mode="json", exclude_none=True))
    if found is not None:  # what sync would refuse to record
        report.add("config", "FAIL", f"GET {url}: {found}", answer.seconds)
        return None
    problems, missing = config_findings(config)
    if problems:
        report.add("config", "FAIL", f"GET {url}: {'; '.join(problems)}", answer.seconds)
        return None
    summary = _config_summary(config)
    if missing:
        summary += f"; the DynamicScorer spec must supply {', '.join(missing)}"
    report.add("config", "PASS", f"GET {url}: {summary}", answer.seconds)
    return config


def config_findings(config: ScorerConfig) -> tuple[list[str], list[str]]:
    """``(problems, missing)`` of a schema-valid ``/config`` document.

    Problems are values the compiler would reject (step above range, too many points);
    missing are the fields a scorer needs that the document leaves to the DynamicScorer
    spec — allowed by the contract (every field is optional), so only reported.
    """
    problems: list[str] = []
    missing: list[str] = []
    scoring_params = config.scoring.params if config.scoring else None
    if not (scoring_params and scoring_params.name):
        missing.append("scoring.params.name")
    if not (scoring_params and _positive(scoring_params.interval)):
        missing.append("scoring.params.interval")
    source = config.source
    if source is None or source.type is None:
        missing.append("source.type")
    if source is not None and source.type == "Prometheus":
        params = source.params
        if not (params and params.query):
            missing.append("source.params.query")
        range_ = _positive(params.range if params else None)
        step = _positive(params.step if params else None)
        if range_ is None:
            missing.append("source.params.range")
        if step is None:
            missing.append("source.params.step")
        if range_ is not None and step is not None:
            problem = range_step_problem(range_, step)
            if problem is not None:
                problems.append(f"source.params: {problem}")
    return problems, missing


def _config_summary(config: ScorerConfig) -> str:
    params = config.scoring.params if config.scoring else None
    parts = [repr(config.name) if config.name else "unnamed scorer"]
    if params and params.name:
        parts.append(f"score {params.name}")
    if params and _positive(params.interval):
        parts.append(f"every {params.interval} s")
    if config.source and config.source.type:
        parts.append(f"source {config.source.type}")
    return ", ".join(parts)


def _check_scoring_endpoint(config: ScorerConfig | None, origin: str, report: Report) -> str | None:
    if config is None:
        report.add("scoring-endpoint", "SKIP", "no valid /config")
        return None
    scoring = config.scoring
    host = scoring.host if scoring and scoring.host else origin
    path = scoring.path if scoring and scoring.path else "/scoring"
    where = "from /config" if scoring and scoring.path else "default path"
    # The compiler's join rule: host without its trailing '/', then '/', then the path.
    url = f"{host.rstrip('/')}/{path.lstrip('/')}"
    try:
        check_http_url(url)
    except ValueError as error:
        report.add("scoring-endpoint", "FAIL", f"{url}: {error}")
        return None
    report.add("scoring-endpoint", "PASS", f"{url} ({where})")
    return url


def _auth_header(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


async def _check_scoring(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, list[dict[str, object]]],
    report: Report,
    name: str,
) -> Answer | None:
    shown = (
        f"{len(body['data'])} series x {POINTS_PER_SERIES} points"
        if body["data"]
        else '{"data": []}'
    )
    try:
        answer = await post_scoring(client, url, report.timeout, body, _auth_header(report.token))
    except RequestFailedError as error:
        report.add(name, "FAIL", str(error), error.seconds)
        return None
    if answer.status != 200:
        hint = ""
        if answer.status in (401, 403) and not report.token:
            hint = " (the scorer wants a token: --token or $DSF_SCORER_TOKEN)"
        report.add(name, "FAIL", f"POST {shown} -> {status_reason(answer)}{hint}", answer.seconds)
        return None
    report.add(name, "PASS", f"POST {shown} -> 200, {len(answer.body)} bytes", answer.seconds)
    return answer


def _check_schema(
    answers: Sequence[Answer], report: Report, expected: int
) -> list[ScoringResponse]:
    if not answers:
        report.add("response-schema", "SKIP", "no scoring response")
        return []
    responses = []
    for answer in answers:
        try:
            responses.append(ScoringResponse.model_validate_json(answer.body))
        except ValidationError as error:
            report.add("response-schema", "FAIL", f"not a scoring response: {first_error(error)}")
            return []
    counted = " and ".join(str(len(r.results)) for r in responses)
    missing = (
        ""
        if len(answers) == expected
        else f" (only {len(answers)} of {expected} requests answered)"
    )
    status: Status = "PASS" if len(answers) == expected else "FAIL"
    report.add(
        "response-schema", status, f"valid ScoringResponse bodies with {counted} result(s){missing}"
    )
    return responses


def _check_finite(responses: Sequence[ScoringResponse], report: Report) -> None:
    if not responses:
        report.add("finite-scores", "SKIP", "no valid scoring response")
        return
    scores = [result.score for response in responses for result in response.results]
    bad = [score for score in scores if not math.isfinite(score)]
    if bad:
        report.add(
            "finite-scores", "FAIL", f"{len(bad)} of {len(scores)} score(s) not finite: {bad[0]}"
        )
        return
    if not scores:
        report.add("finite-scores", "PASS", "no scores returned")
        return
    low, high = min(scores), max(scores)
    clamped = "" if low >= -100 and high <= 100 else "; the agent clamps scores to [-100, 100]"
    report.add("finite-scores", "PASS", f"{len(scores)} score(s) in [{low:g}, {high:g}]{clamped}")


async def _check_auth(
    client: httpx.AsyncClient,
    url: str,
    body: dict[str, list[dict[str, object]]],
    with_token: Answer | None,
    report: Report,
) -> None:
    if not report.token:
        report.add("auth", "SKIP", "no token given (--token or $DSF_SCORER_TOKEN)")
        return
    seconds = 0.0
    outcomes = []
    # A wrong token must be refused too: a scorer that only checks the header is present is open.
    for label, headers in (
        ("no token", {}),
        ("wrong token", _auth_header(f"{report.token}-wrong")),
    ):
        try:
            answer = await post_scoring(client, url, report.timeout, body, headers)
        except RequestFailedError as error:
            report.add("auth", "FAIL", f"{label}: {error}", seconds + error.seconds)
            return
        seconds += answer.seconds
        if answer.status not in (401, 403):
            report.add(
                "auth",
                "FAIL",
                f"{label} -> {answer.status}, expected 401 or 403 (scoring is open)",
                seconds,
            )
            return
        outcomes.append(f"{label} -> {answer.status}")
    if with_token is None:
        report.add(
            "auth", "FAIL", f"{', '.join(outcomes)}, but the request with the token failed", seconds
        )
        return
    report.add("auth", "PASS", f"{', '.join(outcomes)}, token -> 200", seconds)


def _check_latency(answers: Sequence[Answer], report: Report) -> None:
    if not answers:
        report.add("latency", "SKIP", "no scoring response")
        return
    slowest = max(answer.seconds for answer in answers)
    verdict: Status = "PASS" if slowest <= LATENCY_LIMIT_SECONDS else "FAIL"
    report.add(
        "latency",
        verdict,
        f"slowest scoring request {slowest * 1000:.0f} ms (limit {LATENCY_LIMIT_SECONDS:g} s)",
    )


def _summary(report: Report, url: str) -> bool:
    counts = {
        status: sum(1 for r in report.results if r.status == status)
        for status in ("PASS", "FAIL", "SKIP")
    }
    ok = counts["FAIL"] == 0
    verdict = "conforms" if ok else "does NOT conform"
    report.print(
        f"scorer-check: {url} {verdict}: {counts['PASS']} passed, {counts['FAIL']} failed, "
        f"{counts['SKIP']} skipped"
    )
    return ok


def _positive(value: int | None) -> int | None:
    # The compiler treats 0 like an absent number (the first value > 0 wins).
    return value if value else None
