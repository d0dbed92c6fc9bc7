"""One scoring cycle of one scorer: secrets → fetch → score → publish → account.

Every failure is caught here, counted by stage and reason, and logged when it starts,
changes or ends (not on every repeat: 200 failing scorers at 1 s would bury the log).
A failed cycle changes nothing already published except the failure counters.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agent.errors import AgentError, Reason, ScoreError, SecretMissingError, condition_reason
from agent.fetch import fetch_series
from agent.logs import REDACTOR, fields
from agent.memory import MemoryBudget, Reservation, budget_for, container_limit
from agent.metrics import AgentMetrics, ScorerMetrics
from agent.placement_score import MAX_STORED_BYTES, placement_score_status, stored_size
from agent.publish import HubPublisher
from agent.score import Scored, request_scores
from agent.secrets import SecretStore
from agent.settings import RuntimeSettings
from agent.transport import AgentClient, RequestSlots
from dsf_contract.agent_cli import Aggregation
from dsf_contract.placement_scores import score_items
from dsf_contract.scores import SCORE_KIND
from dsf_contract.summary import Summary
from dsf_contract.summary import sanitize_score_name as sanitize_name

log = logging.getLogger("dsf.agent.cycle")


@dataclass
class CycleContext:
    """What every cycle shares: settings, the HTTP client, Secrets, metrics and the hub."""

    settings: RuntimeSettings
    client: AgentClient
    secrets: SecretStore
    metrics: AgentMetrics
    hub: HubPublisher | None = None
    wall_clock: Callable[[], float] = field(default=time.time)
    #: bounds the requests of all scorers together (in flight, and each one's duration)
    slots: RequestSlots = field(init=False)
    #: bounds the bytes of Prometheus answers held at once
    memory: MemoryBudget = field(init=False)

    def __post_init__(self) -> None:
        self.slots = RequestSlots(self.settings.request_timeout)
        limit = self.settings.memory_limit
        self.memory = MemoryBudget(budget_for(limit if limit is not None else container_limit()))


@dataclass
class CycleState:
    """Per-scorer memory between cycles: the current failure, to log only changes."""

    failure: tuple[str, str] | None = None


async def _token(secrets: SecretStore, name: str, key: str) -> str | None:
    return await secrets.token(name, key) if name and key else None


async def run_cycle(
    ctx: CycleContext, summary: Summary, counters: ScorerMetrics, state: CycleState
) -> bool:
    """Run one cycle; returns whether it succeeded. Never raises except on cancellation."""
    with ctx.memory.hold(summary.scoreName) as memory:  # released once the answers are gone
        await memory.prepare()
        return await _run_cycle(ctx, summary, counters, state, memory)


@dataclass
class _Progress:
    """The stage a cycle is in, for a failure that is not an :class:`AgentError`."""

    stage: str = "internal"


async def _run_cycle(
    ctx: CycleContext,
    summary: Summary,
    counters: ScorerMetrics,
    state: CycleState,
    memory: Reservation,
) -> bool:
    score_name = summary.scoreName
    progress = _Progress()
    try:
        await _stages(ctx, summary, counters, memory, progress)
    except AgentError as err:
        _record_failure(counters, state, score_name, err.stage, err.reason, str(err))
        await _report_on_hub(ctx, summary, err.stage, err.reason, str(err))
        return False
    except Exception as err:  # a bug must cost one cycle, not the scorer
        _record_failure(
            counters,
            state,
            score_name,
            progress.stage,
            type(err).__name__,
            repr(err)[:300],
            exc=err,
        )
        return False
    counters.success.inc()
    counters.last_success.set(ctx.wall_clock())
    if state.failure is not None:
        log.info("scorer_recovered", extra=fields(score_name=score_name, after=state.failure[0]))
        state.failure = None
    return True


async def _stages(
    ctx: CycleContext,
    summary: Summary,
    counters: ScorerMetrics,
    memory: Reservation,
    progress: _Progress,
) -> None:
    """Secrets → fetch → score → publish, each timed; raises on the first that fails."""
    progress.stage = "secret"
    source_token, scoring_token = await _tokens(ctx.secrets, summary, counters)
    progress.stage = "fetch"
    started = time.perf_counter()
    try:
        series = await fetch_series(
            ctx.client,
            summary,
            token=source_token,
            now=ctx.wall_clock(),
            max_bytes=ctx.settings.max_response_bytes,
            slots=ctx.slots,
            memory=memory,
        )
    finally:
        fetched = time.perf_counter()
        counters.fetch_seconds.inc(fetched - started)
    progress.stage = "score"
    try:
        outcome = await request_scores(
            ctx.client,
            summary.scoringEndpoint,
            series,
            token=scoring_token,
            max_bytes=ctx.settings.max_scoring_response_bytes,
            slots=ctx.slots,
            max_results=ctx.settings.max_results,
        )
    finally:
        scored = time.perf_counter()
        counters.perform_seconds.inc(scored - fetched)
    del series  # the input can be tens of MB; do not hold it while publishing
    if outcome.skipped:
        counters.skipped_results.inc(outcome.skipped)
    progress.stage = "publish"
    try:
        await _publish(ctx, summary, counters, outcome.results)
    finally:
        counters.send_seconds.inc(time.perf_counter() - scored)


async def _tokens(
    secrets: SecretStore, summary: Summary, counters: ScorerMetrics
) -> tuple[str | None, str | None]:
    """The source's and the Scoring API's tokens; a missing Secret disables the scorer."""
    try:
        source_token = await _token(
            secrets, summary.sourceEndpointAuthName, summary.sourceEndpointAuthKey
        )
        scoring_token = await _token(
            secrets, summary.scoringEndpointAuthName, summary.scoringEndpointAuthKey
        )
    except SecretMissingError:
        counters.enabled.set(0)
        raise
    counters.enabled.set(1)
    return source_token, scoring_token


async def _publish(
    ctx: CycleContext, summary: Summary, counters: ScorerMetrics, results: Sequence[Scored]
) -> None:
    """Publish ``results`` to ``/metrics``, then to the hub.

    The hub's object is built and checked first: scores it could not store are the
    scorer's fault, and nothing is published. Then /metrics, then the hub: the scores
    reach /metrics whether or not the hub takes them (a hub that is down or drips its
    answers must not hide them); a hub failure still fails the cycle, and the
    AddOnPlacementScore keeps its last good scores.
    """
    how = ctx.settings.aggregation_for(summary.scoreName)
    for_hub = _hub_status(ctx, summary, results, how)
    ctx.metrics.publish_scores(summary.scoreName, results, how)
    if for_hub is not None:
        await _write_hub(ctx, summary, counters, *for_hub)


def _hub_status(
    ctx: CycleContext, summary: Summary, results: Sequence[Scored], how: Aggregation
) -> tuple[datetime, dict[str, Any]] | None:
    """The AddOnPlacementScore status of ``results`` (None: not written to the hub);
    :class:`ScoreError` when the hub could not store it."""
    if ctx.hub is None or summary.scoreDestination != SCORE_KIND:
        return None
    items = score_items(
        results,
        template=summary.scoreDimensionFormat,
        cluster=ctx.settings.cluster_name,
        score_name=summary.scoreName,
        how=how,
    )
    now = datetime.fromtimestamp(ctx.wall_clock(), UTC)
    status = placement_score_status(items, now=now, interval=summary.scoringInterval)
    if stored_size(status) > MAX_STORED_BYTES:
        raise ScoreError(
            f"{len(items)} items make an AddOnPlacementScore of over "
            f"{MAX_STORED_BYTES} bytes, more than the hub stores",
            reason=Reason.STATUS_TOO_LARGE,
        )
    return now, status


async def _write_hub(
    ctx: CycleContext,
    summary: Summary,
    counters: ScorerMetrics,
    now: datetime,
    status: dict[str, Any],
) -> None:
    """Write ``status`` to the scorer's AddOnPlacementScore (within the hub's deadline)."""
    assert ctx.hub is not None  # _hub_status gave a status: there is a hub
    name = sanitize_name(summary.scoreName)
    if not ctx.hub.knows(name):
        await asyncio.sleep(first_write_delay(ctx.settings, summary.scoreName, summary))
    published = await ctx.hub.publish(name, status, now=now, interval=summary.scoringInterval)
    counters.hub_conflicts.inc(published.conflicts)
    (counters.hub_written if published.written else counters.hub_unchanged).inc()


def first_write_delay(settings: RuntimeSettings, score_name: str, summary: Summary) -> float:
    """How long the first hub write of a scorer after start waits: up to ``hub_spread``
    seconds, at most half an interval (the next cycle stays on time), by a hash of the
    cluster and score names.

    A fleet whose agents all restart together (a new image, a hub outage that ends) would
    otherwise read and write every AddOnPlacementScore of the fleet within the first
    second — 30 times the hub's usual rate at 30 s intervals (``docs/benchmarks.md``).
    The cycle itself still starts right after start (agent/README.md) and a failure shows at once;
    a successful first cycle's hub write waits (``dynamic_score`` is updated before it).
    """
    window = min(settings.hub_spread, summary.scoringInterval / 2)
    key = f"{settings.cluster_name}/{score_name}/hub".encode()
    return zlib.crc32(key) / 2**32 * window


async def _report_on_hub(
    ctx: CycleContext, summary: Summary, stage: str, reason: str, message: str
) -> None:
    """Say on the hub's AddOnPlacementScore why the scores are not fresh (not when the hub failed)."""
    if ctx.hub is None or summary.scoreDestination != SCORE_KIND or stage == "publish":
        return
    try:
        await ctx.hub.report_failure(
            sanitize_name(summary.scoreName),
            condition_reason(stage, reason),
            f"{stage} failed ({reason}): {REDACTOR.redact(message)}",
            datetime.fromtimestamp(ctx.wall_clock(), UTC),
        )
    except AgentError as err:  # the hub is unreachable too: the failure is counted already
        log.debug(
            "condition_not_written", extra=fields(score_name=summary.scoreName, error=str(err))
        )
    except Exception as err:  # a bug here must not end the scorer's task
        log.warning(
            "condition_not_written",
            extra=fields(score_name=summary.scoreName, error=repr(err)[:300]),
        )


def _record_failure(
    counters: ScorerMetrics,
    state: CycleState,
    score_name: str,
    stage: str,
    reason: str,
    message: str,
    *,
    exc: BaseException | None = None,
) -> None:
    counters.failed(stage, reason)
    level = logging.WARNING if state.failure != (stage, reason) else logging.DEBUG
    state.failure = (stage, reason)
    log.log(
        level,
        "cycle_failed",
        extra=fields(score_name=score_name, stage=stage, reason=reason, error=message),
        exc_info=exc,
    )
