"""A whole-request deadline and a byte cap for the official ``kubernetes`` client.

The client's timeouts cannot bound a request: urllib3 applies its read timeout to each
socket read, so an API server (or anything on the path) that sends one byte every few
seconds never trips it, and ``response.data`` reads however much it is sent. Two hooks on
the client's connection pool do. Every byte of an answer (status line, headers, body) is
read through :class:`_CappedReader`, which counts it against the budget's bytes and gives
each socket read only the time left. And every new connection gets at most the time left
as its timeout, which Python counts over a whole connect, TLS handshake or request write
(not per read), so a server that drips its handshake is cut off at the deadline too. A
compressed answer is refused (it is never asked for, and would slip a small body past the
byte cap).

The budget in force is looked up when a connection opens and at every read, so one hooked
client serves both of dsf's uses: ``dsf-compile`` gives every read of one command the same
budget (one deadline for the whole hub read), ``dsf-agent`` gives each API request its own
(:func:`within`, in the thread that makes the request). A connection used outside any
budget keeps the client's own timeouts.
"""

from __future__ import annotations

import contextlib
import contextvars
import http.client
import io
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from dsf_transport.http import causes

__all__ = ["Budget", "StopReadError", "bound_pools", "current", "stop_in", "within"]


class StopReadError(Exception):
    """A budget ran out inside the client's read path.

    Not an ``OSError``: urllib3 neither retries it nor wraps it in its own errors.
    """


class Budget:
    """A deadline and a byte budget; thread-safe, shared by every connection that uses it."""

    def __init__(
        self,
        seconds: float,
        max_bytes: int,
        *,
        deadline_message: str,
        bytes_message: str,
        stop: threading.Event | None = None,
    ) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.bytes_left = max_bytes
        self.deadline_message = deadline_message
        self.bytes_message = bytes_message
        #: Set from another thread (shutdown): the request ends within a read slice.
        self.stop = stop
        self._lock = threading.Lock()

    def left(self) -> float:
        """Seconds left; raises :class:`StopReadError` once the deadline has passed."""
        if self.stop is not None and self.stop.is_set():
            raise StopReadError("stopped")
        left = self.ends - time.monotonic()
        if left <= 0:
            raise StopReadError(self.deadline_message)
        return left

    def passed(self) -> bool:
        """Whether the deadline has passed."""
        return time.monotonic() >= self.ends

    def spend(self, count: int) -> None:
        """Count ``count`` bytes read; raises :class:`StopReadError` past the budget."""
        with self._lock:
            self.bytes_left -= count
            over = self.bytes_left < 0
        if over:
            raise StopReadError(self.bytes_message)


def stop_in(err: BaseException) -> StopReadError | None:
    """A budget that ran out inside the client, however it was wrapped on the way out."""
    return next((c for c in causes(err) if isinstance(c, StopReadError)), None)


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar(
    "dsf_kube_budget", default=None
)


def current() -> Budget | None:
    """The budget :func:`within` set in this context, or None."""
    return _CURRENT.get()


@contextlib.contextmanager
def within(budget: Budget) -> Iterator[Budget]:
    """Every request this thread makes inside the block keeps to ``budget``."""
    token = _CURRENT.set(budget)
    try:
        yield budget
    finally:
        _CURRENT.reset(token)


#: Longest single wait of a socket read under a budget: how soon a stopped budget is seen.
_READ_SLICE = 1.0


class _CappedReader(io.RawIOBase):
    """A socket read as a file, each read bounded by the time left and counted against the bytes."""

    def __init__(
        self, sock: socket.socket, budget_of: Callable[[], Budget | None], keep: io.BufferedIOBase
    ) -> None:
        self._sock = sock
        self._budget_of = budget_of
        # The file http.client opened holds the socket open after the connection lets go
        # of it (a Connection: close answer); it is closed with this reader, never read.
        self._keep = keep

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        self._keep.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        budget = self._budget_of()
        if budget is None:
            return self._sock.recv_into(buffer)
        while True:  # in slices, so that a budget stopped from another thread ends it soon
            left = budget.left()
            self._sock.settimeout(min(left, _READ_SLICE))
            try:
                count = self._sock.recv_into(buffer)
            except TimeoutError:
                continue  # the next left() says whether the deadline has passed
            budget.spend(count)
            return count


def _response_class(budget_of: Callable[[], Budget | None]) -> type[http.client.HTTPResponse]:
    class CappedResponse(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            self.fp = io.BufferedReader(_CappedReader(sock, budget_of, self.fp))

        def begin(self) -> None:
            super().begin()
            encoding = (self.getheader("content-encoding") or "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise StopReadError(f"answer with Content-Encoding {encoding!r}, never asked for")

    return CappedResponse


def bound_pools(pool_manager: Any, budget_of: Callable[[], Budget | None] = current) -> None:
    """Make every connection ``pool_manager`` opens keep to ``budget_of()``'s deadline and bytes.

    ``pool_manager`` is an ``ApiClient``'s ``rest_client.pool_manager``; call this before
    the client's first request.
    """
    response_class = _response_class(budget_of)

    def watched_pool(pool_class: Any) -> Any:
        class Connection(pool_class.ConnectionCls):  # type: ignore[misc]
            def _new_conn(self) -> socket.socket:
                # connect, TLS handshake and request write: at most the time left (a
                # retry's too, not its first try's timeout)
                budget = budget_of()
                if budget is not None:
                    left = budget.left()
                    timeout: object = getattr(self, "timeout", None)
                    if not isinstance(timeout, int | float) or timeout > left:
                        self.timeout = left
                sock: socket.socket = super()._new_conn()
                return sock

        Connection.response_class = response_class
        return type(pool_class.__name__, (pool_class,), {"ConnectionCls": Connection})

    pool_manager.pool_classes_by_scheme = {
        scheme: watched_pool(cls) for scheme, cls in pool_manager.pool_classes_by_scheme.items()
    }
