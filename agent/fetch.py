"""Stage 1 of a cycle: Prometheus ``query_range`` → the series list sent to the scorer."""

from __future__ import annotations

from typing import Any

import httpx

from agent.errors import FetchError
from agent.transport import RequestSlots, decode_answer, read_capped, request_failures
from dsf_compile.contract import Summary


def split_queries(source_query: str) -> list[str]:
    """``sourceQuery`` split on ``;`` (upstream's separator), blanks dropped."""
    return [part.strip() for part in source_query.split(";") if part.strip()]


def range_params(query: str, now: float, summary: Summary) -> dict[str, str]:
    """The ``query_range`` parameters for one query ending at ``now`` (Unix seconds)."""
    end = int(now)
    return {
        "query": query,
        "start": str(end - summary.sourceRange),
        "end": str(end),
        "step": str(summary.sourceStep),
    }


def series_of(document: Any) -> list[Any]:
    """The ``data.result`` list of a Prometheus API answer, or :class:`FetchError`.

    Only the envelope and each series' shape are checked (``metric`` a map, ``values`` a
    list): the points are passed on untouched, and checking millions of them would cost
    more than the rest of the cycle.
    """
    if not isinstance(document, dict) or "status" not in document:
        raise FetchError("not a Prometheus API response", reason="invalid_response")
    if document["status"] != "success":
        error = str(document.get("error", ""))[:200]
        raise FetchError(
            f"Prometheus answered status {document['status']!r}: {error}", reason="query_error"
        )
    data = document.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(result, list):
        raise FetchError("Prometheus answer has no data.result list", reason="invalid_response")
    for series in result:
        if (
            not isinstance(series, dict)
            or not isinstance(series.get("metric"), dict)
            or not isinstance(series.get("values"), list)
        ):
            raise FetchError(
                "Prometheus answer holds a malformed series", reason="invalid_response"
            )
    return result


async def fetch_series(
    client: httpx.AsyncClient,
    summary: Summary,
    *,
    token: str | None,
    now: float,
    max_bytes: int,
    slots: RequestSlots,
) -> list[Any]:
    """Run every query of ``summary`` over ``[now - range, now]`` and concatenate the series.

    ``sourceType: None`` fetches nothing. Any failed query fails the whole fetch: a partial
    input would give the scorer a silently different picture of the cluster.
    """
    if summary.sourceType == "None":
        return []
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    collected: list[Any] = []
    for query in split_queries(summary.sourceQuery):
        with request_failures("Prometheus", FetchError):
            async with (
                slots.take(summary.sourceEndpoint),
                client.stream(
                    "GET",
                    summary.sourceEndpoint,
                    params=range_params(query, now, summary),
                    headers=headers,
                ) as response,
            ):
                if response.status_code != 200:
                    raise FetchError(
                        f"Prometheus answered HTTP {response.status_code}",
                        reason=f"http_{response.status_code // 100}xx",
                    )
                body = await read_capped(response, max_bytes)
        document = decode_answer(body, "Prometheus", FetchError)
        collected.extend(series_of(document))
    return collected
