"""Where the configuration comes from: a file, polled, or the ConfigMap, watched through
the cluster API. Both yield what :mod:`agent.config` parses, when it changes (or on SIGHUP).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import orjson

from agent.config import (
    MAX_CONFIG_BYTES,
    ConfigEvent,
    load_config_json,
    parse_config_document,
    parse_config_text,
)
from agent.errors import ConfigError, Reason
from agent.kube import (
    EARLY_WATCH_ENDS_WARNED,
    ManagedClusterApi,
    RawResponse,
    api_budget,
    api_error_reason,
    bound_failure,
    interrupt,
    read_bounded,
)
from agent.logs import fields
from dsf_contract.failures import ApiFailure
from dsf_contract.summary import CONFIG_MAP_NAME
from dsf_transport.kube_bounds import Budget, within

# the ConfigMap's watch logs as the configuration it delivers
log = logging.getLogger("dsf.agent.config")


class WatchEndedError(Exception):
    """The API ended a watch with an ERROR event (410 Gone, ...): list again."""


class EarlyWatchEndError(WatchEndedError):
    """A watch ended before half its time without an event: not a change, and counted
    (``watch_ended``), so that an API or a proxy that ends every watch at once is waited
    out with the backoff instead of listed and watched again at once."""


class FileSource:
    """A configuration file, polled: catches in-place writes, renames and symlink swaps.

    The kubelet updates a mounted ConfigMap by re-pointing a ``..data`` symlink, which
    inotify on the file path misses; comparing the content every ``poll`` seconds sees
    every kind of update and costs one small read.
    """

    def __init__(self, path: Path, *, poll: float = 1.0) -> None:
        self._path = path
        self._poll = poll
        self._wake = asyncio.Event()
        self._forced = False

    def reload(self) -> None:
        """Read the file again now and yield it even if unchanged (SIGHUP)."""
        self._forced = True
        self._wake.set()

    async def events(self) -> AsyncIterator[ConfigEvent]:
        """Yield the parsed configuration (or its error) now and whenever it changes."""
        last: str | None = None
        while True:
            if self._forced:
                self._forced, last = False, None
            # Read and parse in a worker thread: an 8 MiB file takes a while to parse, and
            # the event loop runs every scorer meanwhile.
            event, digest = await asyncio.to_thread(self._read_and_parse, last)
            if digest != last:
                last = digest
                if event is not None:
                    yield event
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self._poll):
                    await self._wake.wait()

    def _read_and_parse(self, last: str | None) -> tuple[ConfigEvent | None, str]:
        """The event for the file's current content and its digest (``None``: unchanged)."""
        try:
            raw = self._read()
        except ConfigError as err:
            digest = f"error:{err}"
            return (err if digest != last else None), digest
        digest = hashlib.sha256(raw).hexdigest()
        if digest == last:
            return None, digest
        try:
            return parse_config_text(raw, self._path.name), digest
        except ConfigError as err:
            return err, digest

    def _read(self) -> bytes:
        try:
            with self._path.open("rb") as handle:
                return handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as err:
            raise ConfigError(
                f"cannot read {self._path}: {err.strerror or err}", reason=Reason.UNREADABLE
            ) from None


#: How long stop() waits for the watch thread (it sees the stop within a read slice).
_STOP_WAIT_SECONDS = 3.0


class ConfigMapSource:
    """The ConfigMap, listed and then watched through the API in a background thread.

    The synchronous client blocks in a watch for minutes; a daemon thread (rather than a
    worker of ``asyncio.to_thread``) lets the process exit without waiting for it.

    The list-then-watch loop is written here rather than taken from the client's
    ``watch.Watch().stream``: that helper retries a 410 only when no ``timeout_seconds``
    is given (then a watch may hang on a dead connection for ever), tracks the
    ``resourceVersion`` only when it deserializes every event into model objects, and can
    be interrupted from another thread only through its private ``_resp``. The loop below
    lists (the object and its ``resourceVersion``), watches from there with a bounded
    ``timeout_seconds``, and lists again when the watch ends for any reason, 410 Gone
    included, so no change is missed; events are parsed by :func:`load_config_json`, bounded.
    """

    def __init__(
        self,
        core_api: ManagedClusterApi,
        namespace: str,
        *,
        name: str = CONFIG_MAP_NAME,
        watch_seconds: int = 300,
        timeout: float = 30.0,
        max_backoff: float = 30.0,
        on_error: Callable[[str, str], None] = lambda request, reason: None,
    ) -> None:
        self._api, self._namespace, self._name = core_api, namespace, name
        self._watch_seconds, self._timeout, self._max_backoff = watch_seconds, timeout, max_backoff
        self._on_error = on_error
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._response: RawResponse | None = None
        # What was last delivered, and how many offers were made: the watch thread and a
        # reload thread both offer, under the lock.
        self._lock = threading.Lock()
        self._last: str | None = None
        self._offers = 0
        self._deliver: Callable[[ConfigEvent], None] = lambda event: None

    async def events(self) -> AsyncIterator[ConfigEvent]:
        """Yield the parsed configuration (or its error) now and whenever it changes."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ConfigEvent] = asyncio.Queue()

        def deliver(event: ConfigEvent) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed during shutdown
                loop.call_soon_threadsafe(queue.put_nowait, event)

        self._deliver = deliver
        self._thread = threading.Thread(target=self._run, name="configmap-watch", daemon=True)
        self._thread.start()
        try:
            while True:
                yield await queue.get()
        finally:
            self.stop()

    def stop(self) -> None:
        """Ask the watch thread to end (it also unblocks a watch in progress)."""
        self._stop.set()
        interrupt(self._response)
        # A daemon thread still reading when the interpreter finalizes can abort it (its
        # buffered reader's lock): the watch sees the stop within a read slice (its budget
        # is stopped too), so wait that long for it to end.
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(_STOP_WAIT_SECONDS)

    def reload(self) -> None:
        """List the ConfigMap again now and yield it even if unchanged (SIGHUP).

        The list runs on its own thread, beside the watch: a watch blocks until the API
        sends something, and the reload must not wait for that.
        """
        threading.Thread(target=self._reread, name="configmap-reread", daemon=True).start()

    def _reread(self) -> None:
        with self._lock:
            before = self._offers
        try:
            document = self._list_document()
        except Exception as err:  # the watch loop retries on its own; report and give up
            log.warning(
                "configmap_reread_failed", extra=fields(error=f"{type(err).__name__}: {err}"[:300])
            )
            return
        with self._lock:
            # The watch offered something while we listed: it is at least as new as our
            # list (or about to be delivered): offering ours now could go back in time.
            if self._offers == before:
                self._last = None
                self._offer_locked(_first_item(document))

    def _offer(self, obj: Any) -> None:
        with self._lock:
            self._offer_locked(obj)

    def _offer_locked(self, obj: Any) -> None:
        self._offers += 1
        try:
            event: ConfigEvent = parse_config_document(obj) if obj is not None else self._missing()
            digest = hashlib.sha256(orjson.dumps(obj, option=orjson.OPT_SORT_KEYS)).hexdigest()
        except ConfigError as err:
            event, digest = err, f"error:{err}"
        if digest != self._last:  # a resync or a label change would otherwise restart nothing
            self._last = digest
            self._deliver(event)

    def _run(self) -> None:
        backoff = initial = min(1.0, self._max_backoff)
        failing: str | None = None  # the kind of error being retried, logged once
        early = 0  # watches in a row that ended early without an event
        while not self._stop.is_set():
            request = "list"
            try:
                document = self._list_document()
                if failing is not None and failing != EarlyWatchEndError.__name__:
                    log.info("configmap_watch_recovered", extra=fields(after=failing))
                    failing = None
                self._offer(_first_item(document))
                request = "watch"
                self._watch_once(_resource_version(document))
                backoff, early = initial, 0  # the watch ran its course or saw a change
                if failing is not None:
                    log.info("configmap_watch_recovered", extra=fields(after=failing))
                    failing = None
            except Exception as err:  # API unreachable, 410 Gone, bad stream: list again
                if self._stop.is_set():
                    return
                early = early + 1 if isinstance(err, EarlyWatchEndError) else 0
                quiet = 0 < early < EARLY_WATCH_ENDS_WARNED
                failing = self._report(err, request, backoff, failing, quiet=quiet)
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff)

    def _report(
        self, err: Exception, request: str, backoff: float, failing: str | None, *, quiet: bool
    ) -> str | None:
        """Count and log a failed list or watch; the kind of error now being retried."""
        if isinstance(err, EarlyWatchEndError):
            self._on_error(request, Reason.WATCH_ENDED)
        elif not isinstance(err, WatchEndedError):  # a watch ending is routine
            self._on_error(request, api_error_reason(err))
        if isinstance(err, ConfigError):  # the API's answer itself was unusable
            with self._lock:
                if self._last != f"error:{err}":
                    self._last = f"error:{err}"
                    self._deliver(err)
        # An outage fails every retry the same way: say it once, repeats at debug
        # (the message is no key: urllib3's quote object addresses).
        kind = type(err).__name__
        log.log(
            logging.WARNING if kind != failing and not quiet else logging.DEBUG,
            "configmap_watch_error",
            extra=fields(error=f"{kind}: {err}"[:300], retry_seconds=backoff),
        )
        return failing if quiet else kind

    def _missing(self) -> ConfigError:
        return ConfigError(
            f"ConfigMap {self._namespace}/{self._name} not found", reason=ApiFailure.NOT_FOUND
        )

    def _budget(self, what: str, seconds: float) -> Budget:
        """A request's deadline and byte cap (agent/kube.py); stop() ends it within a second."""
        budget = api_budget(what, seconds)
        budget.stop = self._stop
        return budget

    def _list_document(self) -> dict[str, Any]:
        def call() -> RawResponse:
            response: RawResponse = self._api.list_namespaced_config_map(
                self._namespace,
                field_selector=f"metadata.name={self._name}",
                _preload_content=False,
                _request_timeout=self._timeout,
            )
            return response

        body = read_bounded(call, self._budget("the ConfigMap list", self._timeout))
        document = load_config_json(body, "the ConfigMap list")
        if not isinstance(document, dict):
            raise ConfigError("the ConfigMap list is not an object", reason=Reason.INVALID_DOCUMENT)
        return document

    def _watch_once(self, version: str) -> None:
        """:meth:`_watch`; :class:`EarlyWatchEndError` when it ended early with no event."""
        opened, offers = time.monotonic(), self._offers
        self._watch(version)
        lasted = time.monotonic() - opened
        if self._offers == offers and lasted < self._watch_seconds / 2:
            raise EarlyWatchEndError(f"watch ended after {lasted:.1f} s without an event")

    def _watch(self, version: str) -> None:
        # the whole watch within its timeoutSeconds plus the request timeout, its events
        # within the byte cap: past either it ends, and the caller lists again
        budget = self._budget("the ConfigMap watch", self._watch_seconds + self._timeout)
        try:
            with within(budget):
                self._watch_events(version)
        except Exception as err:
            bounded = bound_failure(err, budget)
            if bounded is None:
                raise
            raise WatchEndedError(f"watch ended: {bounded[1]}") from None

    def _watch_events(self, version: str) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        response: RawResponse = self._api.list_namespaced_config_map(
            self._namespace,
            field_selector=f"metadata.name={self._name}",
            watch=True,
            resource_version=version,
            timeout_seconds=self._watch_seconds,
            _preload_content=False,
            _request_timeout=(self._timeout, self._watch_seconds + self._timeout),
        )
        self._response = response
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    return
                event = load_config_json(line, "a watch event")
                kind = event.get("type") if isinstance(event, dict) else None
                if kind in ("ADDED", "MODIFIED"):
                    self._offer(event.get("object"))
                elif kind == "DELETED":
                    self._offer(None)
                elif kind == "ERROR":  # 410 Gone among others: the caller lists again
                    raise WatchEndedError(f"watch ended: {str(event.get('object'))[:200]}")
        finally:
            self._response = None
            response.release_conn()


def _first_item(document: dict[str, Any]) -> Any:
    """The ConfigMap of a list answer filtered by name, or ``None`` when there is none."""
    items = document.get("items")
    return items[0] if isinstance(items, list) and items else None


def _resource_version(document: dict[str, Any]) -> str:
    metadata = document.get("metadata")
    return str(metadata.get("resourceVersion", "")) if isinstance(metadata, dict) else ""
