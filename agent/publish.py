"""Stage 4 of a cycle: write the AddOnPlacementScore of a scorer to the hub.

The object is created when missing (without status: the API drops status on create),
then its status is written through the status subresource with the last known
``resourceVersion``. A conflict means someone else wrote in between: re-read and retry a
bounded number of times. The synchronous ``kubernetes`` client runs in worker threads.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agent.dimensions import ScoreItem
from agent.errors import PublishError
from agent.kube import HubApi, RawResponse

GROUP = "cluster.open-cluster-management.io"
VERSION = "v1alpha1"
PLURAL = "addonplacementscores"
KIND = "AddOnPlacementScore"
MANAGED_BY = {"app.kubernetes.io/managed-by": "dsf-agent"}


def valid_until(now: datetime, interval: int) -> str:
    """RFC 3339 time three intervals after ``now``: Placement ignores the scores after it."""
    moment = now.astimezone(UTC) + timedelta(seconds=3 * interval)
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def placement_score_status(
    items: Sequence[ScoreItem], *, now: datetime, interval: int
) -> dict[str, Any]:
    """The ``status`` of an AddOnPlacementScore holding ``items`` (already sorted)."""
    return {"scores": [item.as_dict() for item in items], "validUntil": valid_until(now, interval)}


def placement_score_object(
    name: str,
    namespace: str,
    *,
    status: dict[str, Any] | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """A whole AddOnPlacementScore object, as sent on create (no status) or status write."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(MANAGED_BY)}
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    body: dict[str, Any] = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": metadata}
    if status is not None:
        body["status"] = status
    return body


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
        self._retries = retries
        # resourceVersion of our last write per object: the next write needs no read.
        self._versions: dict[str, str] = {}

    async def publish(self, name: str, status: dict[str, Any]) -> int:
        """Write ``status`` to object ``name``; returns how many conflicts were retried."""
        conflicts = 0
        for _ in range(self._retries + 1):
            version = self._versions.get(name)
            try:
                if version is None:
                    version = await asyncio.to_thread(self._current_version, name)
                self._versions[name] = await asyncio.to_thread(
                    self._write_status, name, status, version
                )
                return conflicts
            except _ConflictOrNotFound:
                self._versions.pop(name, None)
                conflicts += 1
        raise PublishError(
            f"AddOnPlacementScore {name!r}: still conflicting after {self._retries} retries",
            reason="conflict",
        )

    def forget(self, name: str) -> None:
        """Drop what is known about ``name`` (its scorer was removed)."""
        self._versions.pop(name, None)

    def _current_version(self, name: str) -> str:
        """Read the object, creating it first when it does not exist."""
        try:
            found = self._get(name)
        except _ConflictOrNotFound:  # 404: create it; 409 on create: another writer was faster
            try:
                found = self._create(name)
            except _ConflictOrNotFound:
                found = self._get(name)
        return str(found["metadata"]["resourceVersion"])

    def _write_status(self, name: str, status: dict[str, Any], version: str) -> str:
        body = placement_score_object(
            name, self._namespace, status=status, resource_version=version
        )
        written = self._checked(
            "replace_namespaced_custom_object_status",
            lambda: self._api.replace_namespaced_custom_object_status(
                GROUP,
                VERSION,
                self._namespace,
                PLURAL,
                name,
                body,
                _preload_content=False,
                _request_timeout=self._timeout,
            ),
        )
        return str(written["metadata"]["resourceVersion"])

    def _get(self, name: str) -> dict[str, Any]:
        return self._checked(
            "get_namespaced_custom_object",
            lambda: self._api.get_namespaced_custom_object(
                GROUP,
                VERSION,
                self._namespace,
                PLURAL,
                name,
                _preload_content=False,
                _request_timeout=self._timeout,
            ),
        )

    def _create(self, name: str) -> dict[str, Any]:
        return self._checked(
            "create_namespaced_custom_object",
            lambda: self._api.create_namespaced_custom_object(
                GROUP,
                VERSION,
                self._namespace,
                PLURAL,
                placement_score_object(name, self._namespace),
                _preload_content=False,
                _request_timeout=self._timeout,
            ),
        )

    def _checked(self, method: str, call: Callable[[], RawResponse]) -> dict[str, Any]:
        """Run ``call``; its JSON object, or the error its failure means."""
        from kubernetes.client.exceptions import ApiException

        try:
            response = call()
        except ApiException as err:
            if err.status in (404, 409):
                raise _ConflictOrNotFound from None
            status = err.status or 0
            raise PublishError(
                f"hub answered HTTP {status} to {method}", reason=f"http_{status // 100}xx"
            ) from None
        except Exception as err:  # urllib3 and socket errors: the hub cannot be reached
            raise PublishError(
                f"hub unreachable ({type(err).__name__})", reason="unreachable"
            ) from None
        try:
            document = json.loads(response.data)
        except ValueError:
            raise PublishError(
                f"hub answered non-JSON to {method}", reason="invalid_response"
            ) from None
        if not isinstance(document, dict) or not isinstance(document.get("metadata"), dict):
            raise PublishError(
                f"hub answered an unexpected object to {method}", reason="invalid_response"
            )
        return document
