"""The memory budget of Prometheus answers: who waits, who proceeds, when memory is trimmed."""

from __future__ import annotations

import asyncio
import gc
import weakref
from pathlib import Path

import pytest

from agent import memory
from agent.memory import (
    BASE_BYTES,
    COST_PER_BYTE,
    FREE_BYTES,
    TRIM_BYTES,
    MemoryBudget,
    budget_for,
    container_limit,
    trimmed,
    tune_malloc,
)
from agent.settings import parse_settings


def test_the_limit_comes_from_the_cgroup(tmp_path: Path) -> None:
    v2, v1 = tmp_path / "memory.max", tmp_path / "limit_in_bytes"
    v2.write_text("536870912\n")
    assert container_limit((v2, v1)) == 512 * 2**20
    v2.write_text("max\n")
    assert container_limit((v2, v1)) is None
    v2.unlink()
    v1.write_text("9223372036854771712\n")  # cgroup v1 without a limit
    assert container_limit((v2, v1)) is None
    v1.unlink()
    assert container_limit((v2, v1)) is None


def test_the_budget_follows_the_sizing_rule() -> None:
    assert budget_for(None) is None
    assert budget_for(BASE_BYTES + COST_PER_BYTE * 1000) == 1000
    assert budget_for(BASE_BYTES // 2) == 0


def test_the_flag_and_environment_set_the_limit() -> None:
    assert parse_settings(["--cluster-name", "c"], {}).memory_limit is None
    assert (
        parse_settings(["--cluster-name", "c"], {"DSF_MEMORY_LIMIT": "1000"}).memory_limit == 1000
    )
    settings = parse_settings(["--cluster-name", "c", "--memory-limit", "2000"], {})
    assert settings.memory_limit == 2000


@pytest.mark.asyncio
async def test_a_spent_budget_makes_later_cycles_wait_and_the_oldest_proceed() -> None:
    trims: list[int] = []
    budget = MemoryBudget(10 * 2**20, trim=lambda: trims.append(1))
    big = FREE_BYTES + 9 * 2**20
    with budget.hold() as first, budget.hold() as second:
        await first.grow_to(big)
        assert budget.used == 9 * 2**20
        # the second cycle does not fit: it waits...
        waiting = asyncio.create_task(second.grow_to(big))
        for _ in range(100):  # the task's first turns, until it waits (no clock involved)
            if budget.waiting:
                break
            await asyncio.sleep(0)
        assert budget.waiting == 1 and not waiting.done()
        # ...while the oldest grows beyond the budget rather than deadlock
        await first.grow_to(2 * big)
        assert budget.used == 9 * 2**20 + big
        with budget.hold() as third:  # small answers never wait
            await third.grow_to(FREE_BYTES)
        assert not waiting.done()
    # (leaving the block released both; the waiter was woken and counted)
    await waiting
    assert budget.used == 0
    assert trims == [1]  # only the first cycle held more than the trim threshold


@pytest.mark.asyncio
async def test_a_waiting_cycle_proceeds_when_memory_is_given_back() -> None:
    budget = MemoryBudget(4 * 2**20, trim=lambda: None)
    order: list[str] = []

    async def cycle(name: str, hold_until: int) -> None:
        with budget.hold() as memory:
            await memory.grow_to(FREE_BYTES + 3 * 2**20)
            order.append(f"{name} in")
            for _ in range(100):  # until that many cycles wait (turns of the loop, no clock)
                if budget.waiting >= hold_until:
                    break
                await asyncio.sleep(0)
            assert budget.waiting >= hold_until
            order.append(f"{name} out")

    # a holds its memory until b waits for it; b, alone then, waits for nobody
    await asyncio.gather(cycle("a", 1), cycle("b", 0))
    assert order == ["a in", "a out", "b in", "b out"]
    assert budget.used == 0
    assert TRIM_BYTES > 3 * 2**20  # these cycles were too small to trim


@pytest.mark.asyncio
async def test_a_big_cycle_collects_the_garbage_cycles_it_left() -> None:
    # httpx's response and its stream refer to each other: without the collector, a
    # finished response keeps its request body alive until the next collection
    class Response:
        stream: object

    budget = MemoryBudget(None)  # the real give-back: collect, then malloc_trim
    gc.disable()  # the collector runs only when the budget runs it
    try:
        with budget.hold() as reservation:
            await reservation.grow_to(FREE_BYTES + TRIM_BYTES)
            response = Response()
            response.stream = response
            left = weakref.ref(response)
            del response
            assert left() is not None  # garbage, not freed by its reference count
        assert left() is None
    finally:
        gc.enable()


def test_every_thread_shares_one_arena_and_big_buffers_get_their_own_mapping(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int]] = []
    monkeypatch.setattr(memory, "_libc_function", lambda name: lambda *args: calls.append(args))
    tune_malloc()
    assert calls == [(-3, 1024 * 1024), (-8, 1)]  # M_MMAP_THRESHOLD, M_ARENA_MAX


def test_tune_malloc_does_nothing_without_mallopt(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_libc_function", lambda name: None)
    tune_malloc()  # musl and others: nothing to tune, nothing raised


def test_a_trimmed_render_gives_the_freed_memory_back_after_rendering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order: list[str] = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda: order.append("trim"))

    def render() -> bytes:
        order.append("render")
        return b"text"

    assert trimmed(render)() == b"text"
    assert order == ["render", "trim"]


def test_a_trimmed_render_runs_with_the_real_malloc_trim() -> None:
    assert trimmed(lambda: b"x")() == b"x"  # glibc's, or nothing elsewhere
