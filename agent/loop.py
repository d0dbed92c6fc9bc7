"""Scheduling: one asyncio task per scorer, started, updated and stopped with the config.

A scorer's cycles run on a fixed grid ``base + k * interval``; ``base`` is offset from the
start by a stable per-scorer phase (a hash of the cluster and score names, at most 10 s),
so that hundreds of scorers with the same interval do not all fire in the same
millisecond — nor one scorer on every cluster of a fleet whose agents restarted together. The
first cycle runs within a second of start (spread by the same hash: a burst of hundreds
of simultaneous first cycles can saturate the loop for good); the next one on the first
grid slot at least one interval later. A cycle that overruns makes the scorer skip the slots it missed (counted)
instead of piling cycles up.

``/readyz`` fails when no cycle of any scorer has finished (succeeded or failed) for
:data:`STALL_INTERVALS` windows of the shortest interval, or of the request timeout when
that is longer: every request has a whole deadline, so a working agent ends some cycle
within a window even when every API it calls hangs; one that does not is stuck.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
import zlib
from collections.abc import AsyncIterator, Callable

from agent.config import ParsedConfig
from agent.cycle import CycleContext, CycleState, run_cycle
from agent.errors import ConfigError
from agent.logs import fields
from agent.metrics import ScorerMetrics
from dsf_contract.summary import Summary
from dsf_contract.summary import sanitize_score_name as sanitize_name

log = logging.getLogger("dsf.agent.loop")
MAX_PHASE_SECONDS = 10.0
#: Windows (the shortest interval, at least the request timeout) without a finished cycle
#: after which /readyz fails: a hanging API ends a cycle within one (its deadline), a
#: slot freed by it lets another end within the next; three leave room for a loaded machine.
STALL_INTERVALS = 3


def scorer_phase(key: str, interval: float) -> float:
    """Stable offset in ``[0, min(interval, 10 s))`` of a scorer's grid (``key``: the
    cluster and score names)."""
    return zlib.crc32(key.encode()) / 2**32 * min(interval, MAX_PHASE_SECONDS)


def next_slot(base: float, interval: float, not_before: float) -> float:
    """The first grid time ``base + k * interval`` (k >= 0) that is at or after ``not_before``."""
    if not_before <= base:
        return base
    steps = math.ceil((not_before - base) / interval - 1e-9)
    return base + steps * interval


class ScorerRunner:
    """The task running one scorer's cycles; its settings can change while it runs."""

    def __init__(
        self, summary: Summary, ctx: CycleContext, on_finished: Callable[[], None] = lambda: None
    ) -> None:
        self.summary = summary
        self._ctx = ctx
        self._on_finished = on_finished
        #: what the task waits on between cycles: True when the next slot is due, False
        #: when the settings changed (see :meth:`_wait_until`)
        self._woken: asyncio.Future[bool] | None = None
        self._task: asyncio.Task[None] | None = None
        self.counters = ScorerMetrics(ctx.metrics, summary.scoreName)
        self.cycles = 0
        self._phase_key = f"{ctx.settings.cluster_name}/{summary.scoreName}"

    def start(self) -> None:
        """Start the task; the first cycle runs at once."""
        self._task = asyncio.create_task(self._run(), name=f"scorer:{self.summary.scoreName}")

    def update(self, summary: Summary) -> None:
        """Use ``summary`` from the next cycle on (a new interval reschedules at once)."""
        self.summary = summary
        _wake(self._woken, False)

    async def stop(self) -> None:
        """Cancel the task, including a cycle in flight, and wait for it to end."""
        if self._task is None:
            return
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            if not self._task.cancelled():  # we are being cancelled ourselves
                raise

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        started = loop.time()
        # The first cycle runs within a second of start, spread by the same stable phase:
        # hundreds of scorers starting together would otherwise fire in one burst.
        scheduled = started + scorer_phase(self._phase_key, min(self.summary.scoringInterval, 1.0))
        state = CycleState()
        await asyncio.sleep(scheduled - loop.time())
        lag = self._ctx.metrics.start_lag
        grid = (0.0, 0.0)  # (interval, base) of the scorer's grid, while the interval stays
        while True:
            lag.observe(max(0.0, loop.time() - scheduled))
            await run_cycle(self._ctx, self.summary, self.counters, state)
            self.cycles += 1
            self._on_finished()
            while True:
                interval = float(self.summary.scoringInterval)
                if grid[0] != interval:
                    grid = (interval, started + scorer_phase(self._phase_key, interval))
                base = grid[1]
                target = next_slot(base, interval, scheduled + interval)
                now = loop.time()
                if target < now:
                    upcoming = next_slot(base, interval, now)
                    self.counters.missed_cycles.inc(round((upcoming - target) / interval))
                    target = upcoming
                if await self._wait_until(target):
                    break
            scheduled = target

    async def _wait_until(self, when: float) -> bool:
        """Sleep until ``when`` (loop time): True; False as soon as the settings change.

        A timer that sets a future, not ``asyncio.timeout`` around an event: that one
        ends every wait by cancelling the task and raising, 200 times a second."""
        loop = asyncio.get_running_loop()
        woken: asyncio.Future[bool] = loop.create_future()
        self._woken = woken
        timer = loop.call_at(when, _wake, woken, True)
        try:
            return await woken
        finally:
            timer.cancel()
            self._woken = None


def _wake(woken: asyncio.Future[bool] | None, due: bool) -> None:
    """End a runner's wait (``due``: its slot came) unless it ended already."""
    if woken is not None and not woken.done():
        woken.set_result(due)


class Agent:
    """Owns the scorers: applies each new configuration, keeps the last good one."""

    def __init__(self, ctx: CycleContext) -> None:
        self._ctx = ctx
        self.runners: dict[str, ScorerRunner] = {}
        self.ready = asyncio.Event()
        #: When a cycle last finished, or the scorers last changed (time.monotonic()).
        self.progressed = time.monotonic()

    def finished(self) -> None:
        """A cycle ended (any outcome)."""
        self.progressed = time.monotonic()

    def stall_window(self) -> float:
        """Seconds without a finished cycle after which the agent is not ready."""
        if not self.runners:
            return math.inf
        shortest = min(runner.summary.scoringInterval for runner in self.runners.values())
        return STALL_INTERVALS * max(float(shortest), self._ctx.settings.request_timeout)

    def is_ready(self) -> bool:
        """``/readyz``: a configuration is loaded and cycles are finishing (any thread)."""
        if not self.ready.is_set():
            return False
        return time.monotonic() - self.progressed <= self.stall_window()

    async def apply(self, config: ParsedConfig) -> None:
        """Start new scorers, update changed ones, stop (and forget) removed ones.

        A scorer whose new summary was rejected keeps running with its previous settings.
        """
        wanted = {summary.scoreName: summary for summary in config.summaries}
        removed = [
            name
            for name in self.runners
            if name not in wanted and name not in config.rejected_score_names
        ]
        for name in removed:
            await self._stop(name)
        started = updated = 0
        for name, summary in wanted.items():
            runner = self.runners.get(name)
            if runner is None:
                runner = self.runners[name] = ScorerRunner(summary, self._ctx, self.finished)
                runner.start()
                started += 1
            elif runner.summary != summary:
                runner.update(summary)
                updated += 1
        self._ctx.metrics.scorers.set(len(self.runners))
        if started or updated:
            self.progressed = time.monotonic()  # new settings get a whole window
        log.info(
            "config_applied",
            extra=fields(
                scorers=len(self.runners),
                started=started,
                updated=updated,
                stopped=len(removed),
                rejected=len(config.problems),
            ),
        )

    async def _stop(self, name: str) -> None:
        runner = self.runners.pop(name)
        await runner.stop()
        self._ctx.metrics.forget(name)
        self._ctx.memory.forget(name)
        if self._ctx.hub is not None:
            self._ctx.hub.forget(sanitize_name(name))

    async def stop_all(self) -> None:
        """Stop every scorer at once (shutdown): thousands stopped one after the other, each
        waiting for its cancelled request to unwind, would outlast the grace period."""
        runners = list(self.runners.items())
        self.runners.clear()
        await asyncio.gather(*(runner.stop() for _, runner in runners), return_exceptions=True)
        for name, _ in runners:
            self._ctx.metrics.forget(name)
            if self._ctx.hub is not None:
                self._ctx.hub.forget(sanitize_name(name))

    async def follow(self, events: AsyncIterator[ParsedConfig | ConfigError]) -> None:
        """Apply every configuration ``events`` yields; on an error keep the last good one."""
        metrics = self._ctx.metrics
        async for event in events:
            if isinstance(event, ConfigError):
                metrics.reloads.labels("failure").inc()
                metrics.config_ok.set(0)
                log.error(
                    "config_rejected",
                    extra=fields(
                        reason=event.reason, error=str(event), kept_scorers=len(self.runners)
                    ),
                )
                continue
            for problem in event.problems:
                log.error("summary_rejected", extra=fields(problem=problem))
            await self.apply(event)
            metrics.reloads.labels("success").inc()
            metrics.config_ok.set(1)
            metrics.config_timestamp.set(self._ctx.wall_clock())
            metrics.invalid_summaries.set(len(event.problems))
            self.ready.set()
