"""Stage 2 of a cycle: POST the series to the Scoring API and check every result."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import httpx
from pydantic import ValidationError

from agent.answer import SeriesBlock, scoring_request
from agent.errors import ScoreError
from agent.transport import RequestSlots, decode_answer, read_capped, request_failures
from dsf_compile.scoring_api import ScoreResult


@dataclass(frozen=True)
class Scored:
    """One usable result: the scorer's labels and a finite score."""

    labels: dict[str, str]
    score: float


@dataclass(frozen=True)
class ScoringOutcome:
    """What a Scoring API answered: the usable results, in order, and how many were skipped."""

    results: list[Scored]
    skipped: int


def parse_response(document: Any) -> ScoringOutcome:
    """Check a ``/scoring`` answer: a ``results`` list is required; a result whose labels are
    not a string map or whose score is not a finite number is skipped and counted."""
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise ScoreError("Scoring API answer has no results list", reason="invalid_response")
    usable: list[Scored] = []
    skipped = 0
    for item in document["results"]:
        try:
            result = ScoreResult.model_validate(item)
        except ValidationError:
            skipped += 1
            continue
        if not math.isfinite(result.score):
            skipped += 1
            continue
        usable.append(Scored(labels=result.metric, score=result.score))
    return ScoringOutcome(results=usable, skipped=skipped)


async def request_scores(
    client: httpx.AsyncClient,
    endpoint: str,
    series: list[SeriesBlock],
    *,
    token: str | None,
    max_bytes: int,
    slots: RequestSlots,
) -> ScoringOutcome:
    """POST ``series`` (the checked Prometheus answers) to ``endpoint`` and return the
    validated results."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = scoring_request(series)
    with request_failures("Scoring API", ScoreError):
        async with (
            slots.take(endpoint),
            client.stream("POST", endpoint, content=body, headers=headers) as response,
        ):
            if response.status_code != 200:
                raise ScoreError(
                    f"Scoring API answered HTTP {response.status_code}",
                    reason=f"http_{response.status_code // 100}xx",
                )
            raw = await read_capped(response, max_bytes)
    document = decode_answer(raw, "Scoring API", ScoreError)
    return parse_response(document)
