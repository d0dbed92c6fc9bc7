"""The compliance claim: upstream's policy watcher, inside the agent (agent.md).

The Policies of the namespace named after the cluster (where OCM's policy framework puts
them on the managed cluster) are listed, then watched until something changes or the poll
interval ends; their state is ``empty`` (none), ``noncompliant`` (one whose
``status.compliant`` is not ``Compliant``) or ``compliant``. The ClusterClaim ``NAME``
says ``empty`` and ``noncompliant`` at once, and ``compliant`` only once the Policies have
stayed compliant for the stable time (upstream's debounce against flapping). The claim is
read each round, created when missing, and replaced (with its ``resourceVersion``) only
when its value differs. Every failure is logged and counted
(``dynamic_scoring_failures_total{stage="compliance"}``); none touches scoring.

Like the ConfigMap's watch (:class:`agent.config_sources.ConfigMapSource`), it runs in a daemon
thread with the synchronous client, so that the process exits without waiting for it.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, Unpack

from agent.config import load_config_json
from agent.kube import RawCall, RawResponse, api_error_reason, interrupt
from agent.logs import fields
from agent.metrics import AgentMetrics
from dsf_contract.compliance import (
    CLAIM_GROUP,
    CLAIM_KIND,
    CLAIM_PLURAL,
    CLAIM_VERSION,
    POLICY_GROUP,
    POLICY_PLURAL,
    POLICY_VERSION,
)

log = logging.getLogger("dsf.agent.compliance")

POLICY = (POLICY_GROUP, POLICY_VERSION, POLICY_PLURAL)
CLAIM = (CLAIM_GROUP, CLAIM_VERSION, CLAIM_PLURAL)
EMPTY, NONCOMPLIANT, COMPLIANT = "empty", "noncompliant", "compliant"
STATES = (EMPTY, NONCOMPLIANT, COMPLIANT)
#: Policies read from one list answer at most (a namespace holds a handful).
MAX_POLICIES = 10_000


class ClaimApi(Protocol):
    """The part of ``CustomObjectsApi`` (on the managed cluster) the claim uses."""

    def list_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        *,
        resource_version: str | None = ...,
        timeout_seconds: int | None = ...,
        watch: bool | None = ...,
        **options: Unpack[RawCall],
    ) -> Any:
        """List (or, with ``watch=True``, watch) Policies."""
        ...

    def get_cluster_custom_object(
        self, group: str, version: str, plural: str, name: str, **options: Unpack[RawCall]
    ) -> Any:
        """Read the ClusterClaim."""
        ...

    def create_cluster_custom_object(
        self,
        group: str,
        version: str,
        plural: str,
        body: dict[str, Any],
        **options: Unpack[RawCall],
    ) -> Any:
        """Create the ClusterClaim."""
        ...

    def replace_cluster_custom_object(
        self,
        group: str,
        version: str,
        plural: str,
        name: str,
        body: dict[str, Any],
        **options: Unpack[RawCall],
    ) -> Any:
        """Replace the ClusterClaim."""
        ...


def policy_state(items: list[Any]) -> str:
    """``empty``, ``noncompliant`` (any Policy not ``Compliant``) or ``compliant``."""
    if not items:
        return EMPTY
    for item in items:
        status = item.get("status") if isinstance(item, dict) else None
        if not isinstance(status, dict) or status.get("compliant") != "Compliant":
            return NONCOMPLIANT
    return COMPLIANT


@dataclass
class Debounce:
    """What the claim should say: any state at once, but ``compliant`` only once stable."""

    stable_seconds: float
    compliant_since: float | None = None

    def claim(self, state: str, now: float) -> str | None:
        """The value to write now, or None to leave the claim as it is."""
        if state != COMPLIANT:
            self.compliant_since = None
            return state
        if self.compliant_since is None:
            self.compliant_since = now
        return COMPLIANT if now - self.compliant_since >= self.stable_seconds else None

    def wait(self, poll: float, now: float) -> float:
        """Seconds until the next look: the poll interval, or sooner when the claim is due."""
        if self.compliant_since is None:
            return poll
        due = self.compliant_since + self.stable_seconds - now
        return poll if due <= 0 else min(poll, due)


class ComplianceClaim:
    """The claim's loop on a daemon thread; :meth:`stop` ends it, even inside a watch."""

    def __init__(
        self,
        api: ClaimApi,
        namespace: str,
        name: str,
        metrics: AgentMetrics,
        *,
        poll: float = 30.0,
        stable: float = 120.0,
        timeout: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api, self._namespace, self._name = api, namespace, name
        self._metrics = metrics
        self._poll, self._timeout, self._clock = poll, timeout, clock
        self._debounce = Debounce(stable)
        self._stop = threading.Event()
        self._response: RawResponse | None = None

    def start(self) -> None:
        """Run the loop in the background."""
        threading.Thread(target=self._run, name="compliance-claim", daemon=True).start()

    def stop(self) -> None:
        """Ask the loop to end; a watch in progress is woken up."""
        self._stop.set()
        interrupt(self._response)

    def _run(self) -> None:
        failing: str | None = None
        while not self._stop.is_set():
            step = "list"
            try:
                version = self.round()
                failing = None
                step = "watch"
                self._watch(version, self._debounce.wait(self._poll, self._clock()))
            except Exception as err:  # a 403, a missing CRD, an outage: count, retry later
                if self._stop.is_set():
                    return
                reason = api_error_reason(err)
                self._metrics.compliance_failed(reason)
                log.log(
                    logging.WARNING if reason != failing else logging.DEBUG,
                    "compliance_claim_failed",
                    extra=fields(
                        step=step, reason=reason, error=f"{type(err).__name__}: {err}"[:300]
                    ),
                )
                failing = reason
                self._stop.wait(self._poll)

    def round(self) -> str:
        """Look at the Policies once and write the claim if due; the list's resourceVersion."""
        document = self._read(
            self._api.list_namespaced_custom_object(
                *POLICY[:2], self._namespace, POLICY[2], **self._request()
            ),
            "the Policy list",
        )
        items = document.get("items") if isinstance(document, dict) else None
        items = items[:MAX_POLICIES] if isinstance(items, list) else []
        state = policy_state(items)
        self._metrics.compliance_seen(state, STATES)
        value = self._debounce.claim(state, self._clock())
        if value is not None:
            self._ensure(value)
        metadata = document.get("metadata") if isinstance(document, dict) else None
        return str(metadata.get("resourceVersion", "")) if isinstance(metadata, dict) else ""

    def _ensure(self, value: str) -> None:
        from kubernetes.client.exceptions import ApiException

        try:
            claim = self._read(
                self._api.get_cluster_custom_object(*CLAIM, self._name, **self._request()),
                "the ClusterClaim",
            )
        except ApiException as err:
            if err.status != 404:
                raise
            body = {
                "apiVersion": f"{CLAIM[0]}/{CLAIM[1]}",
                "kind": CLAIM_KIND,
                "metadata": {"name": self._name},
                "spec": {"value": value},
            }
            self._api.create_cluster_custom_object(*CLAIM, body, **self._request()).release_conn()
            log.info("compliance_claim_created", extra=fields(claim=self._name, value=value))
            return
        spec = claim.get("spec") if isinstance(claim, dict) else None
        if isinstance(spec, dict) and spec.get("value") == value:
            return
        # A replace with the resourceVersion read: a concurrent writer makes it fail (409),
        # and the next round reads again.
        claim["spec"] = {**(spec if isinstance(spec, dict) else {}), "value": value}
        self._api.replace_cluster_custom_object(
            *CLAIM, self._name, claim, **self._request()
        ).release_conn()
        log.info("compliance_claim_written", extra=fields(claim=self._name, value=value))

    def _watch(self, version: str, seconds: float) -> None:
        """Wait up to ``seconds`` for a change to the Policies (any event ends the wait)."""
        from kubernetes.watch.watch import iter_resp_lines

        whole = max(1, math.ceil(seconds))
        response: RawResponse = self._api.list_namespaced_custom_object(
            *POLICY[:2],
            self._namespace,
            POLICY[2],
            watch=True,
            resource_version=version,
            timeout_seconds=whole,
            _preload_content=False,
            _request_timeout=(self._timeout, whole + self._timeout),
        )
        self._response = response
        try:
            for _ in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                return  # something changed (or the watch must restart): look again
        finally:
            self._response = None
            response.release_conn()

    def _request(self) -> RawCall:
        return {"_preload_content": False, "_request_timeout": self._timeout}

    @staticmethod
    def _read(response: RawResponse, what: str) -> Any:
        try:
            return load_config_json(response.data, what)
        finally:
            response.release_conn()
