"""The history from a Prometheus-compatible API (Prometheus, VictoriaMetrics, Thanos Query).

GET only, through the project's HTTP module (:func:`dsf_transport.http.new_client`, answers
read with :func:`~dsf_transport.http.read_capped`), under one deadline for the whole read
and one byte cap for every answer together. Raw samples are read, so that a saved
history replays exactly as the source does: ``/api/v1/export`` where the server offers it
(VictoriaMetrics), else instant queries of ``dynamic_score{…}[D]`` over consecutive
windows of at most 6 hours (Prometheus, Thanos), which return every sample in the window.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

import orjson

from dsf_compile.backtest.history import (
    CLUSTER_LABEL,
    METRIC,
    SCORE_NAME_LABEL,
    HistoryReader,
    HistoryReadError,
    LineSplitter,
    Series,
)
from dsf_compile.errors import InputError, UsageError
from dsf_transport.http import (
    BodyTooLargeError,
    UserAgent,
    describe_failure,
    new_client,
    read_capped,
)

_NOT_AN_ANSWER = "not a Prometheus API answer nor an export line (is this the API's base URL?)"
#: A read-only bearer token for the history API (never on the command line, never printed).
TOKEN_VARIABLE = "DSF_HISTORY_TOKEN"
#: The longest window one instant query reads: 6 hours of 5,000 series scraped every 15 s
#: are 7.2 million samples, well within Prometheus' default --query.max-samples (50 million).
CHUNK_SECONDS = 6 * 3600


def read_api(base: str, reader: HistoryReader, timeout: float) -> list[Series]:
    """Every series the reader wants from the API at ``base``; HistoryReadError (exit 2)."""
    try:
        parts = urlsplit(base)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError as err:
        raise UsageError(f"--history: not a valid URL ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError("--history: not an http(s) URL")
    if parts.username is not None or parts.password is not None:
        # the URL is printed (the report's source, errors): a credential goes elsewhere
        raise UsageError(
            f"--history: no credentials in the URL; put a bearer token in ${TOKEN_VARIABLE}"
        )
    try:
        return asyncio.run(asyncio.wait_for(_read(base.rstrip("/"), reader), timeout))
    except TimeoutError:
        raise HistoryReadError(
            f"the history was not read within {timeout:g} s (history.timeoutSeconds)", base
        ) from None


#: Past this many characters the cluster matcher is left out of the query (the reader
#: keeps the inventory's clusters anyway): VictoriaMetrics refuses queries over 16 KiB.
MAX_MATCHER = 4096


def _selector(reader: HistoryReader) -> str:
    clusters = "|".join(sorted(_quote_regex(c) for c in reader.clusters))
    names = "|".join(sorted(_quote_regex(n) for n in reader.score_names))
    matchers = [f'{SCORE_NAME_LABEL}=~"{names}"']
    if len(clusters) <= MAX_MATCHER:
        matchers.insert(0, f'{CLUSTER_LABEL}=~"{clusters}"')
    return f"{METRIC}{{{','.join(matchers)}}}"


def _quote_regex(text: str) -> str:
    escaped = "".join("\\\\" + c if not (c.isalnum() or c in "-_") else c for c in text)
    return escaped.replace('"', '\\"')


class _Budget:
    """The byte cap shared by every answer of one read."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def spend(self, size: int, url: str) -> None:
        """Count ``size`` more bytes read; HistoryReadError past the cap."""
        self.left -= size
        if self.left < 0:
            raise HistoryReadError("the answers hold more than history.maxBytes", url)


async def _read(base: str, reader: HistoryReader) -> list[Series]:
    import httpx

    if not reader.clusters or not reader.score_names:
        return []
    budget = _Budget(reader.limits.maxBytes)
    timeout = httpx.Timeout(60.0)
    token = os.environ.get(TOKEN_VARIABLE, "")
    headers = {"Authorization": f"Bearer {token}"} if token else None
    async with new_client(
        UserAgent.BACKTEST, transport=None, timeout=timeout, headers=headers
    ) as client:
        exported = await _export(client, base, reader, budget)
        if not exported:
            await _instant_queries(client, base, reader, budget)
    return reader.series()


async def _get(
    client: Any, url: str, params: Sequence[tuple[str, str]], budget: _Budget
) -> tuple[int, bytes]:
    try:
        async with client.stream("GET", url, params=list(params)) as response:
            body = await read_capped(response, budget.left)
            budget.left -= len(body)
            return response.status_code, bytes(body)
    except BodyTooLargeError:
        raise HistoryReadError("the answers hold more than history.maxBytes", url) from None
    except Exception as err:
        failure = describe_failure(err)
        if failure is None:
            raise
        raise HistoryReadError(failure.words, url) from None


async def _export(client: Any, base: str, reader: HistoryReader, budget: _Budget) -> bool:
    """VictoriaMetrics' raw export, parsed line by line as it arrives (only the line being
    read is held); False when the server has none (Prometheus: 404)."""
    url = f"{base}/api/v1/export"
    params = [
        ("match[]", _selector(reader)),
        ("start", str(reader.start_ms // 1000)),
        ("end", str(-(-reader.end_ms // 1000))),
    ]
    try:
        async with client.stream("GET", url, params=params) as response:
            if response.status_code in (404, 405, 501):
                return False
            if response.status_code != 200:
                raise HistoryReadError(f"HTTP {response.status_code}", url)
            lines = LineSplitter(url)
            async for chunk in response.aiter_bytes():
                budget.spend(len(chunk), url)
                for number, line in lines.feed(chunk):
                    _export_line(url, reader, number, line)
            for number, line in lines.finish():
                _export_line(url, reader, number, line)
    except InputError as err:  # a line over the line cap: not an export
        raise HistoryReadError(err.problems[0].message, url) from None
    except HistoryReadError:
        raise
    except Exception as err:
        failure = describe_failure(err)
        if failure is None:
            raise
        raise HistoryReadError(failure.words, url) from None
    return True


def _export_line(url: str, reader: HistoryReader, number: int, line: bytes) -> None:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise HistoryReadError(_NOT_AN_ANSWER, url, number) from None
    if not isinstance(document, dict):
        raise HistoryReadError(_NOT_AN_ANSWER, url, number)
    problem = reader.add(document.get("metric"), document.get("timestamps"), document.get("values"))
    if problem is not None:
        raise HistoryReadError(problem, url, number)


async def _instant_queries(client: Any, base: str, reader: HistoryReader, budget: _Budget) -> None:
    """Every sample, six hours at a time: ``dynamic_score{…}[D]`` evaluated at each window's end."""
    url = f"{base}/api/v1/query"
    end = reader.end_ms
    while end >= reader.start_ms:
        length = min(CHUNK_SECONDS * 1000, end - reader.start_ms + 1)
        query = f"{_selector(reader)}[{length}ms]"
        status, body = await _get(
            client, url, [("query", query), ("time", f"{end / 1000:.3f}")], budget
        )
        for series in _matrix(url, status, body):
            problem = reader.add(series.get("metric"), *_pairs(series.get("values")))
            if problem is not None:
                raise HistoryReadError(problem, url)
        end -= length


def _matrix(url: str, status: int, body: bytes) -> list[dict[str, Any]]:
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise HistoryReadError(
            f"HTTP {status}, not a Prometheus API answer (is this the API's base URL?)", url
        ) from None
    if not isinstance(document, dict) or document.get("status") != "success":
        error = document.get("error") if isinstance(document, dict) else None
        raise HistoryReadError(f"HTTP {status}: {str(error or 'not a success')[:200]}", url)
    data = document.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if (
        not isinstance(data, dict)
        or data.get("resultType") != "matrix"
        or not isinstance(result, list)
    ):
        raise HistoryReadError("expected a matrix of samples", url)
    return [r for r in result if isinstance(r, dict)]


def _pairs(values: Any) -> tuple[Any, Any]:
    """Prometheus' ``[[seconds, "value"], …]`` as (milliseconds, values) lists."""
    if not isinstance(values, list):
        return None, None
    try:
        times = [round(float(p[0]) * 1000) for p in values]
        numbers = [p[1] for p in values]
    except (TypeError, ValueError, IndexError, KeyError, OverflowError):
        return None, None
    return times, numbers
