"""Stage 4 of a cycle: write the AddOnPlacementScore of a scorer to the hub.

The object is created when missing (without status: the API drops status on create),
then its status is written through the status subresource with the last known
``resourceVersion``. A conflict means someone else wrote in between: re-read and retry a
bounded number of times. The synchronous ``kubernetes`` client runs in a few threads of
the publisher's own, so a slow hub never takes the threads secrets and the configuration
are read in. Each request has a deadline for the whole exchange and a cap on its answer
(:func:`agent.kube.read_bounded`), and a whole write — reads, retries and the wait for a
thread included — ends at the request timeout: a hub that sends a byte every few seconds
costs a cycle that much, never more.

The hub is written only when something changed: scores the object already holds, under
the same condition, are not written again until ``validUntil`` comes near (less than
:data:`REFRESH_INTERVALS` intervals ahead). At 10,000 clusters x 100 scorers every 30 s,
writing every cycle would be 33,000 writes a second (``docs/benchmarks.md``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from agent.errors import PublishError, Reason
from agent.kube import HubApi, ObjectsCall, RawResponse, api_budget, bound_failure, read_bounded
from agent.placement_score import placement_score_object, scores_condition, seconds_left
from dsf_contract.failures import RequestFailure, api_status_reason
from dsf_contract.scores import (
    CONDITION_TYPE,
    OCM_CLUSTER_GROUP,
    SCORE_PLURAL,
    SCORE_VERSION,
    ScoresReason,
)

#: Unchanged scores are written again once ``validUntil`` is less than this many intervals
#: ahead: the next cycle then still has half an interval of lag before they lapse, and
#: scores that never change are written every other cycle instead of every cycle.
REFRESH_INTERVALS = 1.5
T = TypeVar("T")
#: Threads making hub requests: writes of many scorers beyond these wait for one (within
#: their deadline), and never hold the threads the rest of the agent uses.
HUB_THREADS = 4


@dataclass(frozen=True)
class Published:
    """What :meth:`HubPublisher.publish` did: whether it wrote, and the conflicts it retried."""

    written: bool
    conflicts: int


class _ConflictOrNotFound(Exception):
    """The hub answered HTTP 409 (a write lost a race, or a create found the object) or
    HTTP 404 (the object does not exist, or vanished): both mean "read it again"."""


class HubPublisher:
    """Writes AddOnPlacementScores into one cluster namespace of the hub."""

    def __init__(
        self, custom_api: HubApi, namespace: str, *, timeout: float = 30.0, retries: int = 5
    ) -> None:
        self._api = custom_api
        self._namespace = namespace
        self._timeout = timeout
        # every request: the AddOnPlacementScores of the namespace, the body unparsed
        self._scores = ObjectsCall(
            group=OCM_CLUSTER_GROUP,
            version=SCORE_VERSION,
            namespace=namespace,
            plural=SCORE_PLURAL,
            _preload_content=False,
            _request_timeout=timeout,
        )
        self._retries = retries
        self._executor = ThreadPoolExecutor(HUB_THREADS, thread_name_prefix="dsf-hub")
        self._stop = threading.Event()
        # resourceVersion of our last write per object: the next write needs no read.
        self._versions: dict[str, str] = {}
        # the status we last wrote per object (after a start: what the hub held): a failed
        # cycle keeps its scores, changes only the condition, and writes nothing when the
        # condition is already that one
        self._written: dict[str, dict[str, Any]] = {}

    def close(self) -> None:
        """Stop: requests in flight end within a read slice, waiting ones never start."""
        self._stop.set()
        self._executor.shutdown(wait=False, cancel_futures=True)

    async def publish(
        self,
        name: str,
        status: dict[str, Any],
        *,
        now: datetime | None = None,
        interval: float | None = None,
    ) -> Published:
        """Write ``status`` (fresh scores) to object ``name`` with a True condition.

        With the scorer's ``interval``, the write is skipped when the object already holds
        these scores under the same condition and its ``validUntil`` is more than
        :data:`REFRESH_INTERVALS` intervals ahead; without it, the status is always written.
        The whole of it ends at the request timeout (:class:`PublishError`, ``timeout``).
        """
        return await self._bounded(name, self._publish(name, status, now, interval))

    async def _bounded(self, name: str, work: Coroutine[Any, Any, T]) -> T:
        try:
            async with asyncio.timeout(self._timeout):
                return await work
        except TimeoutError:
            raise PublishError(
                f"AddOnPlacementScore {name!r}: the hub did not complete the write within "
                f"{self._timeout:g} s",
                reason=RequestFailure.TIMEOUT,
            ) from None

    async def _publish(
        self, name: str, status: dict[str, Any], now: datetime | None, interval: float | None
    ) -> Published:
        now = now or datetime.now(UTC)
        previous = await self._condition(name)
        status = {
            **status,
            "conditions": [
                scores_condition(
                    ok=True,
                    reason=ScoresReason.PUBLISHED,
                    message="the last scoring cycle succeeded",
                    now=now,
                    previous=previous,
                )
            ],
        }
        held = self._written[name]
        if (
            interval is not None
            and held.get("scores") == status.get("scores")
            and held.get("conditions") == status["conditions"]
            # not near validUntil, nor past what this interval gives (it was shortened)
            and REFRESH_INTERVALS * interval <= seconds_left(held, now) <= 3 * interval + 1
        ):
            return Published(written=False, conflicts=0)
        conflicts = await self._write(name, status)
        self._written[name] = status
        return Published(written=True, conflicts=conflicts)

    async def report_failure(self, name: str, reason: str, message: str, now: datetime) -> bool:
        """Mark object ``name`` as failing (scores kept until ``validUntil``); False when unchanged."""
        return await self._bounded(name, self._report_failure(name, reason, message, now))

    async def _report_failure(self, name: str, reason: str, message: str, now: datetime) -> bool:
        previous = await self._condition(name)
        if previous is not None and (previous.get("status"), previous.get("reason")) == (
            "False",
            reason,
        ):
            return False  # already said: the hub is not written every cycle of an outage
        base = self._written.get(name, {})
        status = {
            **{k: v for k, v in base.items() if k != "conditions"},
            "conditions": [
                scores_condition(
                    ok=False, reason=reason, message=message, now=now, previous=previous
                )
            ],
        }
        await self._write(name, status)
        self._written[name] = status
        return True

    async def _condition(self, name: str) -> dict[str, Any] | None:
        """Our condition on ``name``: as last written, else as the hub holds it.

        A restarted agent reads the object once (the read that finds its
        ``resourceVersion`` anyway): a failure that outlives the restart keeps its
        ``lastTransitionTime``, and an unchanged condition is not written again.
        """
        if name not in self._written:
            version, status = await self._in_thread(self._read_or_create, name)
            self._versions[name] = version
            self._written[name] = status
        conditions = self._written[name].get("conditions")
        if not isinstance(conditions, list):
            return None
        return next(
            (c for c in conditions if isinstance(c, dict) and c.get("type") == CONDITION_TYPE),
            None,
        )

    async def _write(self, name: str, status: dict[str, Any]) -> int:
        conflicts = 0
        for _ in range(self._retries + 1):
            version = self._versions.get(name)
            try:
                if version is None:
                    version = (await self._in_thread(self._read_or_create, name))[0]
                self._versions[name] = await self._in_thread(
                    self._write_status, name, status, version
                )
                return conflicts
            except _ConflictOrNotFound:
                self._versions.pop(name, None)
                conflicts += 1
        raise PublishError(
            f"AddOnPlacementScore {name!r}: still conflicting after {self._retries} retries",
            reason=Reason.CONFLICT,
        )

    async def _in_thread(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` in one of the publisher's threads (cancelled while it waits)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, function, *args)

    def knows(self, name: str) -> bool:
        """Whether object ``name`` was read or written since the start (or since forgotten)."""
        return name in self._written

    def forget(self, name: str) -> None:
        """Drop what is known about ``name`` (its scorer was removed)."""
        self._versions.pop(name, None)
        self._written.pop(name, None)

    def _read_or_create(self, name: str) -> tuple[str, dict[str, Any]]:
        """The object's ``resourceVersion`` and status, creating it first when missing."""
        try:
            found = self._get(name)
        except _ConflictOrNotFound:  # 404: create it; 409 on create: another writer was faster
            try:
                found = self._create(name)
            except _ConflictOrNotFound:
                found = self._get(name)
        status = found.get("status")
        return str(found["metadata"]["resourceVersion"]), status if isinstance(status, dict) else {}

    def _write_status(self, name: str, status: dict[str, Any], version: str) -> str:
        body = placement_score_object(
            name, self._namespace, status=status, resource_version=version
        )
        written = self._request("replace_namespaced_custom_object_status", name=name, body=body)
        return str(written["metadata"]["resourceVersion"])

    def _get(self, name: str) -> dict[str, Any]:
        return self._request("get_namespaced_custom_object", name=name)

    def _create(self, name: str) -> dict[str, Any]:
        body = placement_score_object(name, self._namespace)
        return self._request("create_namespaced_custom_object", body=body)

    def _request(self, method: str, **arguments: Any) -> dict[str, Any]:
        """``HubApi.<method>`` on the AddOnPlacementScores of the namespace, with ``arguments``
        (its name, its body or both)."""
        call = getattr(self._api, method)
        return self._checked(method, lambda: call(**self._scores, **arguments))

    def _checked(self, method: str, call: Callable[[], RawResponse]) -> dict[str, Any]:
        """Run ``call`` within its deadline and byte cap; its JSON object, or the error it means."""
        from kubernetes.client.exceptions import ApiException

        budget = api_budget(f"hub {method}", self._timeout)
        budget.stop = self._stop
        try:
            body = read_bounded(call, budget)
        except ApiException as err:
            if err.status in (404, 409):
                raise _ConflictOrNotFound from None
            status = err.status or 0
            reason = api_status_reason(status)  # 401, 403: the hub credentials or RBAC
            raise PublishError(f"hub answered HTTP {status} to {method}", reason=reason) from None
        except Exception as err:  # urllib3 and socket errors: the hub cannot be reached
            bounded = bound_failure(err, budget)
            if bounded is not None:
                raise PublishError(bounded[1], reason=bounded[0]) from None
            raise PublishError(
                f"hub unreachable ({type(err).__name__})", reason=RequestFailure.UNREACHABLE
            ) from None
        try:
            document = json.loads(body)
        except ValueError:
            raise PublishError(
                f"hub answered non-JSON to {method}", reason=RequestFailure.INVALID_RESPONSE
            ) from None
        if not isinstance(document, dict) or not isinstance(document.get("metadata"), dict):
            raise PublishError(
                f"hub answered an unexpected object to {method}",
                reason=RequestFailure.INVALID_RESPONSE,
            )
        return document
