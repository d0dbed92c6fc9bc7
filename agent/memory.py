"""The memory budget: how many bytes of Prometheus answers the agent holds at once.

A cycle holds its answers about :data:`COST_PER_BYTE` times over (the bytes read, the text
they are checked as, then the request to the Scoring API). Left alone, twenty scorers
with 20 MB answers whose cycles overlap would need over a gigabyte at once. The budget
lets answers in as long as ``used <= capacity`` and makes the others wait for memory —
except the oldest cycle holding some, which always proceeds, so waiting can never
deadlock. After a big cycle the garbage it left is collected and the freed memory is
handed back to the system.

Sizing rule (``agent/README.md``): limit >= :data:`BASE_BYTES` + COST_PER_BYTE x the
largest answer; the budget then runs as many big answers at once as
``(limit - BASE_BYTES) / (COST_PER_BYTE x answer size)``.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import gc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctypes import _NamedFuncPointer  # typeshed's name for a looked-up C function

MIB = 1024 * 1024
#: Bytes of memory per byte of answer a cycle holds at its peak (measured; see README).
COST_PER_BYTE = 3
#: The process without answers: interpreter, libraries, hundreds of scorers' state.
BASE_BYTES = 96 * MIB
#: Bytes of an answer that are not counted: small answers, the common case, never wait.
FREE_BYTES = 256 * 1024
#: Cycles that held more than this give the freed memory back to the system.
TRIM_BYTES = 8 * MIB
#: cgroup v2, then v1; a limit this large means none.
CGROUP_LIMIT_FILES = (
    Path("/sys/fs/cgroup/memory.max"),
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
)
_NO_LIMIT = 1 << 60
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def container_limit(files: tuple[Path, ...] = CGROUP_LIMIT_FILES) -> int | None:
    """The memory limit of the container (cgroup), or None when there is none."""
    for path in files:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < _NO_LIMIT:
            return int(text)
        return None
    return None


def budget_for(limit: int | None) -> int | None:
    """Bytes of answers that fit in ``limit`` beside the base (None: no limit, no budget).

    A limit below the base still lets one answer at a time through (the oldest cycle
    always proceeds).
    """
    if limit is None:
        return None
    return max(limit - BASE_BYTES, 0) // COST_PER_BYTE


def _libc_function(name: str) -> _NamedFuncPointer | None:
    """A C library function, looked up among the symbols the interpreter already loaded
    (``dlopen(NULL)``), or None. Not ``ctypes.util.find_library``: it runs ``ldconfig``,
    ``gcc`` or ``ld`` to find the library, and the image has none of them."""
    try:
        function: _NamedFuncPointer = getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None
    return function


def _malloc_trim() -> Callable[[], None]:
    """glibc's ``malloc_trim(0)``: returns freed heap pages to the system (elsewhere: nothing)."""
    trim = _libc_function("malloc_trim")
    if trim is None:
        return lambda: None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def run() -> None:
        trim(0)

    return run


def _give_back() -> Callable[[], None]:
    """What runs after a big cycle: the cyclic garbage collector, then ``malloc_trim``.

    httpx's response and its body stream refer to each other, so a finished response —
    and the request it keeps, with its whole body: the Scoring API request is as big as
    the Prometheus answer — is freed only when the collector runs. Between cycles it
    seldom does (few allocations), and an idle agent held one to three answers' worth
    of such garbage for whole intervals; collecting it here frees them at once.
    """
    trim = _malloc_trim()

    def run() -> None:
        gc.collect()
        trim()

    return run


def tune_malloc() -> None:
    """Serve every allocation above 1 MiB from its own mapping, and every thread from one
    arena (glibc; elsewhere nothing).

    glibc raises its mmap threshold after each big free, up to 32 MiB: the next answers
    then land in the heap, which fragments and keeps its peak. A fixed threshold gives
    each big buffer back to the system the moment it is freed. A thread gets an arena of
    its own at its first allocation, and keeps what it grew: the endpoints' thread renders
    ``/metrics`` (hundreds of kB of short-lived text at 200 scorers) into one it would never
    reuse for anything else. The interpreter's lock serialises the threads anyway.
    """
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, 1024 * 1024)
        mallopt(_M_ARENA_MAX, 1)


def trimmed(render: Callable[[], bytes]) -> Callable[[], bytes]:
    """``render``, then the memory it freed handed back to the system (``malloc_trim``;
    elsewhere ``render`` alone).

    A ``/metrics`` scrape builds and drops a line of text per series (a few thousand at
    200 scorers); left in the heap, that garbage stays resident between scrapes.
    """
    trim = _malloc_trim()

    def run() -> bytes:
        text = render()
        trim()
        return text

    return run


class Reservation:
    """The memory one cycle holds; grows as its answers arrive."""

    def __init__(self, budget: MemoryBudget, key: str) -> None:
        self._budget = budget
        self.key = key
        self.held = FREE_BYTES  # answer bytes covered so far (the free part is not counted)
        self.counted = 0

    async def prepare(self) -> None:
        """Wait for the memory this cycle's previous answers needed, before any request
        starts (time spent waiting here does not count against a request's deadline)."""
        await self.grow_to(self._budget.last_size(self.key))

    async def grow_to(self, size: int) -> None:
        """Cover ``size`` bytes of answers in total, waiting for memory when the budget is spent."""
        if size > self.held:
            await self._budget._grow(self, size - self.held)


class MemoryBudget:
    """Bytes of answers in flight, bounded by ``capacity`` (None: unbounded)."""

    def __init__(self, capacity: int | None, *, trim: Callable[[], None] | None = None) -> None:
        self.capacity = capacity
        self.used = 0
        self.trims = 0
        self._holders: dict[Reservation, None] = {}  # in the order they started
        self._waiters: list[asyncio.Future[None]] = []
        self._last: dict[str, int] = {}  # answer bytes each key's last cycle held
        self._trim = trim if trim is not None else _give_back()

    @property
    def waiting(self) -> int:
        """Cycles waiting for memory to be given back."""
        return len(self._waiters)

    def last_size(self, key: str) -> int:
        """Answer bytes the last cycle of ``key`` held."""
        return self._last.get(key, 0)

    def forget(self, key: str) -> None:
        """Drop what is remembered of ``key`` (a removed scorer)."""
        self._last.pop(key, None)

    @contextlib.contextmanager
    def hold(self, key: str = "") -> Iterator[Reservation]:
        """A reservation for one cycle of ``key``, given back (and the memory trimmed) when
        it ends."""
        reservation = Reservation(self, key)
        self._holders[reservation] = None
        try:
            yield reservation
        finally:
            del self._holders[reservation]
            self.used -= reservation.counted
            if reservation.counted:
                self._last[key] = reservation.held
            else:
                self._last.pop(key, None)
            self._wake()
            if reservation.held - FREE_BYTES >= TRIM_BYTES:
                self.trims += 1
                self._trim()

    async def _grow(self, reservation: Reservation, size: int) -> None:
        while (
            self.capacity is not None
            and self.used + size > self.capacity
            and next(iter(self._holders)) is not reservation
        ):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(waiter)
        if reservation not in self._holders:
            return  # given back meanwhile: nothing to count
        self.used += size
        reservation.counted += size
        reservation.held += size

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
