"""What ``scorer-check`` sends and how it reports: requests with a deadline, the lines printed.

Every request goes through :func:`request` on the one ``httpx.AsyncClient`` of the run:
no redirects, a capped body, and a deadline covering the whole exchange. Every line goes
through :class:`Report`, which redacts the token and escapes what the scorer said.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal, TextIO
from urllib.parse import urlsplit, urlunsplit

import httpx

from dsf_compile.edges.untrusted import safe_message
from dsf_contract.agent_cli import DEFAULT_MAX_SCORING_RESPONSE_BYTES
from dsf_contract.fields import check_http_url
from dsf_contract.records import frozen
from dsf_transport.http import BodyTooLargeError, read_capped

Status = Literal["PASS", "FAIL", "SKIP"]

SERIES_COUNT = 3
POINTS_PER_SERIES = 60
FIRST_TIMESTAMP = 1_718_600_000  # fixed, so a run is reproducible


@frozen
class CheckResult:
    """The outcome of one check; ``seconds`` is None for checks that make no request."""

    name: str
    status: Status
    reason: str
    seconds: float | None = None

    def format(self) -> str:
        """``PASS name  reason (12 ms)``."""
        timing = "" if self.seconds is None else f" ({self.seconds * 1000:.0f} ms)"
        return f"{self.status} {self.name:<16} {self.reason}{timing}"


@frozen
class Answer:
    """A scorer's answer: status, body (capped), time taken, any redirect target."""

    status: int
    body: bytes | bytearray
    seconds: float
    location: str | None


class RequestFailedError(Exception):
    """A request got no usable answer; the message is the reason shown to the user."""

    def __init__(self, reason: str, seconds: float) -> None:
        super().__init__(reason)
        self.seconds = seconds


@frozen
class Endpoints:
    """The URLs of one scorer: its ``/healthz``, its ``/config`` and their origin."""

    healthz: str
    config: str
    origin: str
    #: The /config URL was made from a base URL (the scorer may serve it elsewhere).
    guessed: bool = False


@dataclass
class Report:
    """The check lines, printed as they come with the token redacted, and their results."""

    out: TextIO
    token: str | None
    timeout: float = 10.0
    results: list[CheckResult] = field(default_factory=list)

    def add(self, name: str, status: Status, reason: str, seconds: float | None = None) -> bool:
        result = CheckResult(name, status, reason, seconds)
        self.results.append(result)
        self.print(result.format())
        return status == "PASS"

    def print(self, line: str) -> None:
        if self.token:
            # A scorer could echo the header back in an error text; never show it.
            line = line.replace(self.token, "***")
        print(safe_message(line), file=self.out, flush=True)


def generate_series(
    step: int, count: int = SERIES_COUNT, points: int = POINTS_PER_SERIES
) -> Iterator[dict[str, object]]:
    """``count`` deterministic series (rising, flat, falling...) of ``points`` values each."""
    for index in range(count):
        slope = (1 - index % 3) * 0.01
        yield {
            "metric": {
                "node": f"node-{index}",
                "namespace": "scorer-check",
                "pod": f"pod-{index}",
            },
            "values": [
                [FIRST_TIMESTAMP + i * step, f"{0.5 + index * 0.1 + slope * i:.4f}"]
                for i in range(points)
            ],
        }


def endpoints(url: str) -> Endpoints:
    """The scorer's endpoints from its base or ``/config`` URL; ValueError if not http(s)."""
    check_http_url(url)
    parts = urlsplit(url)
    origin = urlunsplit((parts.scheme, parts.netloc, "", "", ""))
    path = parts.path.rstrip("/")
    if path.endswith("/config"):
        config = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
        return Endpoints(healthz=f"{origin}/healthz", config=config, origin=origin)
    config = f"{origin}{path}/config"
    return Endpoints(healthz=f"{origin}/healthz", config=config, origin=origin, guessed=True)


async def request(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    timeout: float,
    limit: int,
    body: object = None,
    headers: dict[str, str] | None = None,
) -> Answer:
    """One request within ``timeout`` (the whole exchange), its body capped at ``limit``."""
    content = None if body is None else json.dumps(body).encode()
    all_headers = dict(headers or {})
    if content is not None:
        all_headers["Content-Type"] = "application/json"
    start = time.perf_counter()
    try:
        # A deadline for the whole exchange: httpx's timeouts apply to each read, which a
        # server sending a byte at a time never runs into.
        async with (
            asyncio.timeout(timeout),
            client.stream(method, url, content=content, headers=all_headers) as response,
        ):
            try:
                data = await read_capped(response, limit)
            except BodyTooLargeError:
                raise RequestFailedError(
                    f"{method} {url}: body larger than {limit} bytes",
                    time.perf_counter() - start,
                ) from None
            return Answer(
                response.status_code,
                data,
                time.perf_counter() - start,
                response.headers.get("Location"),
            )
    except TimeoutError:
        reason = f"{method} {url}: no complete answer within {timeout:g} s"
        raise RequestFailedError(reason, time.perf_counter() - start) from None
    except httpx.HTTPError as error:
        reason = f"{method} {url}: {type(error).__name__}: {error}"
        raise RequestFailedError(reason, time.perf_counter() - start) from None


async def post_scoring(
    client: httpx.AsyncClient,
    url: str,
    timeout: float,
    body: object,
    headers: dict[str, str],
) -> Answer:
    """A ``POST /scoring``, its answer capped as the agent caps it."""
    return await request(
        client,
        "POST",
        url,
        timeout=timeout,
        limit=DEFAULT_MAX_SCORING_RESPONSE_BYTES,
        body=body,
        headers=headers,
    )


def status_reason(answer: Answer) -> str:
    """The status with the start of the body, or where a redirect pointed."""
    if 300 <= answer.status < 400:
        return f"{answer.status} redirect to {answer.location or '?'} (redirects are not followed)"
    excerpt = answer.body[:120].decode("utf-8", "replace").strip()
    return f"{answer.status}" + (f": {excerpt}" if excerpt else "")
