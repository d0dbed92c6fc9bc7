"""Stage 2 of a cycle: POST the series to the Scoring API and check every result.

The answer is walked one result at a time and refused as soon as it holds more than the
agent's result cap (``--max-results``): a scorer answering 150,000 results inside the
byte cap once took the agent to hundreds of MB, a 24 MB ``/metrics`` and half the cycles
of the other scorers. Only the labels the agent uses are kept of each result.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agent.answer import (
    Malformed,
    SeriesBlock,
    scoring_request,
    skip_space,
    walk_array,
    walk_object,
)
from agent.errors import Reason, ScoreError
from agent.transport import AgentClient, RequestSlots, fetch_answer
from dsf_contract.failures import RequestFailure
from dsf_contract.placement_scores import RESULT_LABELS as RESULT_LABELS
from dsf_contract.scoring_api import ScoreResult

#: Results one answer may hold (``--max-results``).
DEFAULT_MAX_RESULTS = 10_000

# NaN and Infinity are read as floats (some scorers send them), then skipped and counted.
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]  # public since Python 2, untyped in typeshed


@dataclass(frozen=True)
class Scored:
    """One usable result: the scorer's labels the agent uses and a finite score."""

    labels: dict[str, str]
    score: float


@dataclass(frozen=True)
class ScoringOutcome:
    """What a Scoring API answered: the usable results, in order, and how many were skipped."""

    results: list[Scored]
    skipped: int


class _Results:
    """The ``results`` of an answer, checked one by one as the walk meets them."""

    def __init__(self, max_results: int) -> None:
        self.max_results = max_results
        self.found = False
        self.usable: list[Scored] = []
        self.skipped = 0

    def member(self, text: str, key: str, at: int) -> int:
        if key != "results" or not text.startswith("[", at):
            if key == "results":
                self.found = False
            return int(_scan(text, at)[1])
        self.found, self.usable, self.skipped = True, [], 0
        return walk_array(text, at, lambda index: self._item(text, index))

    def _item(self, text: str, at: int) -> int:
        if len(self.usable) + self.skipped >= self.max_results:
            raise ScoreError(
                f"Scoring API answered more than {self.max_results} results (--max-results)",
                reason=Reason.TOO_MANY_RESULTS,
            )
        item, end = _scan(text, at)
        try:
            result = ScoreResult.model_validate(item)
        except ValidationError:
            self.skipped += 1
            return int(end)
        if not math.isfinite(result.score):
            self.skipped += 1
            return int(end)
        labels = {k: result.metric[k] for k in RESULT_LABELS if k in result.metric}
        self.usable.append(Scored(labels=labels, score=result.score))
        return int(end)


def parse_response(
    body: bytes | bytearray, *, max_results: int = DEFAULT_MAX_RESULTS
) -> ScoringOutcome:
    """Check a ``/scoring`` answer: a JSON object with a ``results`` list of at most
    ``max_results`` items is required; a result whose labels are not a string map or whose
    score is not a finite number is skipped and counted."""
    results = _Results(max_results)
    try:
        text = body.decode("utf-8")
        end = walk_object(text, skip_space(text, 0), results.member)
        if skip_space(text, end) != len(text):
            raise Malformed
    except (Malformed, StopIteration, ValueError, IndexError, RecursionError) as err:
        raise ScoreError(
            "Scoring API answered something that is not a JSON object",
            reason=RequestFailure.INVALID_RESPONSE,
        ) from err
    if not results.found:
        raise ScoreError(
            "Scoring API answer has no results list", reason=RequestFailure.INVALID_RESPONSE
        )
    return ScoringOutcome(results=results.usable, skipped=results.skipped)


async def request_scores(
    client: AgentClient,
    endpoint: str,
    series: list[SeriesBlock],
    *,
    token: str | None,
    max_bytes: int,
    slots: RequestSlots,
    max_results: int = DEFAULT_MAX_RESULTS,
) -> ScoringOutcome:
    """POST ``series`` (the checked Prometheus answers) to ``endpoint`` and return the
    validated results."""
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    body = scoring_request(series)
    raw = await fetch_answer(
        client,
        slots,
        "POST",
        endpoint,
        service="Scoring API",
        error=ScoreError,
        limit=max_bytes,
        headers=headers,
        content=body,
    )
    return parse_response(raw, max_results=max_results)
