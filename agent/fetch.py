"""Stage 1 of a cycle: Prometheus ``query_range`` → the series list sent to the scorer."""

from __future__ import annotations

from agent.answer import SeriesBlock, series_block
from agent.errors import FetchError
from agent.memory import Reservation
from agent.transport import AgentClient, RequestSlots, fetch_answer
from dsf_contract.summary import Summary


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


async def fetch_series(
    client: AgentClient,
    summary: Summary,
    *,
    token: str | None,
    now: float,
    max_bytes: int,
    slots: RequestSlots,
    memory: Reservation | None = None,
) -> list[SeriesBlock]:
    """Run every query of ``summary`` over ``[now - range, now]``; the series of each answer,
    checked but not decoded (see :mod:`agent.answer`).

    ``sourceType: None`` fetches nothing. Any failed query fails the whole fetch: a partial
    input would give the scorer a silently different picture of the cluster. ``memory``
    accounts the answers' bytes in the agent's memory budget as they arrive.
    """
    if summary.sourceType == "None":
        return []
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    collected: list[SeriesBlock] = []
    for query in split_queries(summary.sourceQuery):
        body = await fetch_answer(
            client,
            slots,
            "GET",
            summary.sourceEndpoint,
            service="Prometheus",
            error=FetchError,
            limit=max_bytes,
            headers=headers,
            params=range_params(query, now, summary),
            memory=memory,
        )
        collected.append(series_block(body))
        del body
    return collected
