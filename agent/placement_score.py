"""The AddOnPlacementScore documents the agent writes: status, condition, whole object.

Pure: building a document and sizing it as the hub stores it. :mod:`agent.publish`
writes them to the hub.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from dsf_contract.placement_scores import StatusScore, validity_seconds
from dsf_contract.scores import (
    AGENT_MANAGED_BY,
    CONDITION_TYPE,
    OCM_CLUSTER_GROUP,
    SCORE_KIND,
    SCORE_VERSION,
)

#: The largest AddOnPlacementScore written, as the hub stores it (:func:`stored_size`):
#: etcd refuses a request over 1.5 MiB; 16 KiB are left to metadata and the condition.
MAX_STORED_BYTES = 1536 * 1024 - 16 * 1024
#: managedFields' entry per item beyond its name: ``"k:{\"name\":…}":{".":{},"f:name":{},"f:value":{}},``
_MANAGED_ITEM_BYTES = 50


def valid_until(now: datetime, interval: int) -> str:
    """RFC 3339 time three intervals after ``now``: Placement ignores the scores after it."""
    moment = now.astimezone(UTC) + timedelta(seconds=validity_seconds(interval))
    return moment.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def placement_score_status(
    items: Sequence[StatusScore], *, now: datetime, interval: int
) -> dict[str, Any]:
    """The ``status`` of an AddOnPlacementScore holding ``items`` (already sorted)."""
    return {"scores": [item.as_dict() for item in items], "validUntil": valid_until(now, interval)}


def stored_size(status: dict[str, Any]) -> int:
    """Bytes an AddOnPlacementScore with ``status`` takes on the hub, near enough: the status
    as compact JSON, and the ``managedFields`` the API server keeps beside it, which name
    every item once more (``scores`` is a list-map keyed by name)."""
    encoded = json.dumps(status, separators=(",", ":"), ensure_ascii=False).encode()
    names = sum(
        len(json.dumps(item.get("name", ""), ensure_ascii=False).encode()) + _MANAGED_ITEM_BYTES
        for item in status.get("scores", ())
    )
    return len(encoded) + names


def seconds_left(status: dict[str, Any], now: datetime) -> float:
    """Seconds until ``status``'s ``validUntil`` (0 when absent or unreadable)."""
    text = status.get("validUntil")
    try:
        until = datetime.fromisoformat(text) if isinstance(text, str) else None
    except ValueError:
        until = None
    if until is None or until.tzinfo is None:
        return 0.0
    try:
        return (until - now).total_seconds()
    except OverflowError:
        return 0.0


def scores_condition(
    *, ok: bool, reason: str, message: str, now: datetime, previous: dict[str, Any] | None
) -> dict[str, Any]:
    """The ``ScoresAvailable`` condition; its ``lastTransitionTime`` moves only when the status flips."""
    status = "True" if ok else "False"
    since = previous.get("lastTransitionTime") if previous is not None else None
    if not isinstance(since, str) or previous is None or previous.get("status") != status:
        since = now.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": CONDITION_TYPE,
        "status": status,
        "reason": reason,
        "message": message[:1024],
        "lastTransitionTime": since,
    }


def placement_score_object(
    name: str,
    namespace: str,
    *,
    status: dict[str, Any] | None = None,
    resource_version: str | None = None,
) -> dict[str, Any]:
    """A whole AddOnPlacementScore object, as sent on create (no status) or status write."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "labels": dict(AGENT_MANAGED_BY),
    }
    if resource_version is not None:
        metadata["resourceVersion"] = resource_version
    body: dict[str, Any] = {
        "apiVersion": f"{OCM_CLUSTER_GROUP}/{SCORE_VERSION}",
        "kind": SCORE_KIND,
        "metadata": metadata,
    }
    if status is not None:
        body["status"] = status
    return body
