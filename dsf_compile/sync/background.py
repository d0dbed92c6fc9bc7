"""A fetch of the scorers on an event loop of its own, in a thread, while the caller goes on.

``sync`` sends its requests as soon as it knows the scorers and its settings, and
validates the rest of the fleet while they are in flight: most of a fetch is waiting for
answers (a hanging scorer's whole timeout), and validating is most of the command's own
work. What the fetch reports comes back to the caller's thread: ``progress`` is called
there, for each scorer in the order they finished, only once the caller asks for the
result, so a fleet found invalid meanwhile prints nothing of a fetch it throws away.
:meth:`BackgroundFetch.cancel` stops the requests and waits for the thread: none is left
running.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable, Coroutine
from typing import Any

from dsf_compile.sync.fetch import Fetched
from dsf_compile.sync.lock import LockEntry

#: Told of each refreshed scorer as it finishes: its name and its new entry.
Progress = Callable[[str, LockEntry], None]
#: The fetch to run, given where to report each scorer.
Fetch = Callable[[Progress], Coroutine[Any, Any, Fetched]]
#: What the thread hands over: a scorer finished, or the fetch's end (its result or error).
_Event = tuple[str, LockEntry] | Fetched | BaseException
#: The turns of the event loop the fetch is given alone, before the caller's thread
#: competes with it for the interpreter: its scorers take their slots and connect (one
#: turn), the connections complete and the first requests are written (the next ones).
#: Only the speed depends on it: a fetch that needs more goes on beside the caller.
HEAD_START_TURNS = 8


class BackgroundFetch:
    """``fetch`` run at once in a thread; :meth:`result` or :meth:`cancel` end it.

    Made, it returns once the fetch has sent its first requests (:data:`HEAD_START_TURNS`).
    """

    def __init__(self, fetch: Fetch) -> None:
        self._events: queue.SimpleQueue[_Event] = queue.SimpleQueue()
        self._started = threading.Event()
        self._going = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None
        self._thread = threading.Thread(target=self._run, args=(fetch,), name="sync-fetch")
        self._thread.start()
        try:
            self._going.wait()
        except BaseException:  # interrupted (Ctrl-C): no fetch left behind
            self.cancel()
            raise

    def _run(self, fetch: Fetch) -> None:
        outcome: Fetched | BaseException
        try:
            outcome = asyncio.run(self._main(fetch))
        except BaseException as error:  # raised in the caller's thread, by result()
            outcome = error
        finally:
            self._started.set()  # also when the loop never started
            self._going.set()
        self._events.put(outcome)

    async def _main(self, fetch: Fetch) -> Fetched:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        self._started.set()
        fetching = asyncio.ensure_future(fetch(lambda name, entry: self._events.put((name, entry))))
        for _ in range(HEAD_START_TURNS):
            await asyncio.sleep(0)
        self._going.set()
        return await fetching

    def result(self, progress: Progress) -> Fetched:
        """Wait for the fetch, calling ``progress`` here for each scorer; its error raised here.

        Interrupted (Ctrl-C), it cancels the fetch before it raises.
        """
        try:
            while True:
                event = self._events.get()
                if isinstance(event, tuple):
                    progress(*event)
                elif isinstance(event, BaseException):
                    raise event
                else:
                    return event
        except BaseException:
            self.cancel()
            raise
        finally:
            self._thread.join()

    def cancel(self) -> None:
        """Stop the requests (their connections closed, nothing reported) and wait for the
        thread to end; nothing to do once it has."""
        self._started.wait()
        loop, task = self._loop, self._task
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing in flight
                loop.call_soon_threadsafe(task.cancel)
        self._thread.join()
