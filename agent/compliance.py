"""The compliance claim: upstream's policy watcher, inside the agent (agent.md).

The Policies of the namespace named after the cluster (where OCM's policy framework puts
them on the managed cluster) are listed, in pages, then watched until something changes or
the poll interval ends; their state is ``empty`` (none), ``noncompliant`` (one whose
``status.compliant`` is not ``Compliant``) or ``compliant``. The ClusterClaim ``NAME``
says ``empty`` and ``noncompliant`` at once, and ``compliant`` only once the Policies have
stayed compliant for the stable time (upstream's debounce against flapping). The claim is
read each round, created when missing (labelled as the agent's), replaced (with its
``resourceVersion``) only when its value differs, and never taken over when the agent did
not make it. Every failure is logged and counted
(``dynamic_scoring_failures_total{stage="compliance"}``); none touches scoring.

Every request goes through :class:`agent.kube.BoundedCalls`: a deadline and a byte cap each,
so an API that drips, floods or sends an endless watch line costs one failed round, counted.
Rounds are paced: at most one a second, and a watch that ends early without a change (an
API or a proxy that closes it at once) is waited out with a bounded exponential backoff
rather than listed again at once.

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
from agent.errors import AgentError, Reason
from agent.kube import (
    EARLY_WATCH_ENDS_WARNED,
    BoundedCalls,
    RawCall,
    RawResponse,
    api_error_reason,
)
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
from dsf_contract.scores import AGENT_MANAGED_BY

log = logging.getLogger("dsf.agent.compliance")

POLICY = (POLICY_GROUP, POLICY_VERSION, POLICY_PLURAL)
CLAIM = (CLAIM_GROUP, CLAIM_VERSION, CLAIM_PLURAL)
EMPTY, NONCOMPLIANT, COMPLIANT = "empty", "noncompliant", "compliant"
STATES = (EMPTY, NONCOMPLIANT, COMPLIANT)
#: Policies read in one round at most (a namespace holds a handful), a page at a time.
MAX_POLICIES = 10_000
POLICY_PAGE = 50
#: Rounds (a list, maybe a claim write, a watch) start at least this far apart.
MIN_ROUND_SECONDS = 1.0
#: The first wait after a watch that ended early without a change; doubled up to the poll.
FIRST_BACKOFF_SECONDS = 1.0
#: How long stop() waits for the thread (it sees the stop within a read slice).
_STOP_WAIT_SECONDS = 3.0
#: Watch events that say the Policies changed (ERROR and BOOKMARK do not).
CHANGES = frozenset({"ADDED", "MODIFIED", "DELETED"})


class ClaimApi(Protocol):
    """The part of ``CustomObjectsApi`` (on the managed cluster) the claim uses."""

    def list_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        *,
        limit: int | None = ...,
        _continue: str | None = ...,
        resource_version: str | None = ...,
        timeout_seconds: int | None = ...,
        watch: bool | None = ...,
        **options: Unpack[RawCall],
    ) -> Any:
        """List (a page of) Policies, or with ``watch=True`` watch them."""
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


@dataclass
class Backoff:
    """Waits after watches that ended early: ``first``, doubled each time, at most ``most``."""

    first: float
    most: float
    next_wait: float = 0.0
    #: waits given since the last reset: the early ends in a row
    count: int = 0

    def next(self) -> float:
        """The wait now; the one after is twice as long (up to ``most``)."""
        wait = min(self.next_wait or self.first, self.most)
        self.next_wait = min(wait * 2, self.most)
        self.count += 1
        return wait

    def reset(self) -> None:
        """A watch ran its course: the next early end waits ``first`` again."""
        self.next_wait, self.count = 0.0, 0


def made_by_agent(claim: Any) -> bool:
    """Whether ``claim`` carries the label the agent puts on the claim it creates."""
    metadata = claim.get("metadata") if isinstance(claim, dict) else None
    labels = metadata.get("labels") if isinstance(metadata, dict) else None
    return isinstance(labels, dict) and all(
        labels.get(key) == value for key, value in AGENT_MANAGED_BY.items()
    )


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
        self._poll, self._clock = poll, clock
        self._debounce = Debounce(stable)
        self._backoff = Backoff(FIRST_BACKOFF_SECONDS, max(poll, FIRST_BACKOFF_SECONDS))
        self._stop = threading.Event()
        self._calls = BoundedCalls(timeout, stop=self._stop)
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Run the loop in the background."""
        self._thread = threading.Thread(target=self._run, name="compliance-claim", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Ask the loop to end; a request in progress ends within a read slice."""
        self._stop.set()
        # a daemon thread still reading when the interpreter finalizes can abort it
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(_STOP_WAIT_SECONDS)

    def _run(self) -> None:
        failing: str | None = None  # the reason being retried, logged once
        started = -math.inf
        while not self._stop.wait(max(0.0, started + MIN_ROUND_SECONDS - self._clock())):
            started = self._clock()
            step = "list"
            try:
                version = self.round()
                step = "watch"
                early = self._watch(version, self._debounce.wait(self._poll, self._clock()))
            except Exception as err:  # a 403, a missing CRD, an outage, a budget run out
                if self._stop.is_set():
                    return
                self._backoff.reset()
                reason, error, delay = api_error_reason(err), f"{type(err).__name__}: {err}", None
            else:
                if early is None:
                    self._backoff.reset()
                    if failing is not None:
                        log.info("compliance_claim_recovered", extra=fields(after=failing))
                    failing = None
                    continue
                reason, error, delay = Reason.WATCH_ENDED, early, self._backoff.next()
            delay = self._poll if delay is None else delay
            self._metrics.compliance_failed(reason)
            # one early end is an outage's or a restart's: said once they repeat
            quiet = 0 < self._backoff.count < EARLY_WATCH_ENDS_WARNED
            log.log(
                logging.WARNING if reason != failing and not quiet else logging.DEBUG,
                "compliance_claim_failed",
                extra=fields(step=step, reason=reason, error=error[:300], retry_seconds=delay),
            )
            failing = failing if quiet else reason
            self._stop.wait(delay)

    def round(self) -> str:
        """Look at the Policies once and write the claim if due; the list's resourceVersion."""
        state, version = self._policy_state()
        self._metrics.compliance_seen(state, STATES)
        value = self._debounce.claim(state, self._clock())
        if value is not None:
            self._ensure(value)
        return version

    def _policy_state(self) -> tuple[str, str]:
        """The Policies' state, read a page at a time (a noncompliant one ends the read),
        and the list's resourceVersion."""
        state, version, token, seen = EMPTY, "", None, 0
        while True:
            document = self._list_page(token)
            items = document.get("items") if isinstance(document, dict) else None
            items = items if isinstance(items, list) else []
            metadata = document.get("metadata") if isinstance(document, dict) else None
            metadata = metadata if isinstance(metadata, dict) else {}
            if token is None:  # every page of one list has the first one's resourceVersion
                version = str(metadata.get("resourceVersion", ""))
            seen += len(items)
            if seen > MAX_POLICIES:
                raise AgentError(
                    f"more than {MAX_POLICIES} Policies in the namespace {self._namespace}",
                    reason=Reason.TOO_MANY_RESULTS,
                )
            page = policy_state(items)
            if page == NONCOMPLIANT:
                return NONCOMPLIANT, version
            state = COMPLIANT if page == COMPLIANT else state
            token = metadata.get("continue")
            if not isinstance(token, str) or not token:
                return state, version

    def _list_page(self, token: str | None) -> Any:
        def call() -> RawResponse:
            response: RawResponse = self._api.list_namespaced_custom_object(
                *POLICY[:2],
                self._namespace,
                POLICY[2],
                limit=POLICY_PAGE,
                _continue=token,
                **self._options(),
            )
            return response

        return load_config_json(self._calls.read(call, "the Policy list"), "the Policy list")

    def _ensure(self, value: str) -> None:
        claim = self._read_claim()
        if claim is None:
            body = {
                "apiVersion": f"{CLAIM[0]}/{CLAIM[1]}",
                "kind": CLAIM_KIND,
                "metadata": {"name": self._name, "labels": dict(AGENT_MANAGED_BY)},
                "spec": {"value": value},
            }
            self._calls.read(
                lambda: self._api.create_cluster_custom_object(*CLAIM, body, **self._options()),
                "the ClusterClaim's creation",
            )
            log.info("compliance_claim_created", extra=fields(claim=self._name, value=value))
            return
        if not made_by_agent(claim):
            # another owner's claim (OCM's, a user's, upstream's policy watcher's): never
            # written; labelling it hands it over, as Helm adopts what carries its label
            label = ",".join(f"{k}={v}" for k, v in AGENT_MANAGED_BY.items())
            raise AgentError(
                f"ClusterClaim {self._name} exists and was not made by the agent (no label "
                f"{label}): left as it is; label it to hand it over, or name another claim",
                reason=Reason.NOT_OWNED,
            )
        spec = claim.get("spec")
        if isinstance(spec, dict) and spec.get("value") == value:
            return
        # A replace with the resourceVersion read: a concurrent writer makes it fail (409),
        # and the next round reads again.
        claim["spec"] = {**(spec if isinstance(spec, dict) else {}), "value": value}
        self._calls.read(
            lambda: self._api.replace_cluster_custom_object(
                *CLAIM, self._name, claim, **self._options()
            ),
            "the ClusterClaim's update",
        )
        log.info("compliance_claim_written", extra=fields(claim=self._name, value=value))

    def _read_claim(self) -> dict[str, Any] | None:
        """The ClusterClaim as the API holds it, or None when there is none."""
        from kubernetes.client.exceptions import ApiException

        try:
            body = self._calls.read(
                lambda: self._api.get_cluster_custom_object(*CLAIM, self._name, **self._options()),
                "the ClusterClaim",
            )
        except ApiException as err:
            if err.status != 404:
                raise
            return None
        claim = load_config_json(body, "the ClusterClaim")
        if not isinstance(claim, dict):
            raise AgentError("the ClusterClaim is not an object", reason=Reason.INVALID_DOCUMENT)
        return claim

    def _watch(self, version: str, seconds: float) -> str | None:
        """Wait up to ``seconds`` for a change to the Policies; ``None`` when one came or the
        watch ran its time, else why it ended early (to be waited out, not listed at once)."""
        whole = max(1, math.ceil(seconds))

        def call() -> RawResponse:
            response: RawResponse = self._api.list_namespaced_custom_object(
                *POLICY[:2],
                self._namespace,
                POLICY[2],
                watch=True,
                resource_version=version,
                timeout_seconds=whole,
                _preload_content=False,
                _request_timeout=(self._calls.timeout, whole + self._calls.timeout),
            )
            return response

        opened = self._clock()
        line = self._calls.first_line(call, "the Policy watch", whole)
        ended = "without an event"
        if line is not None:
            event = load_config_json(line, "a Policy watch event")
            kind = event.get("type") if isinstance(event, dict) else None
            if kind in CHANGES:
                return None
            ended = f"with a {str(kind)[:20]} event"  # an ERROR (410 Gone), a BOOKMARK
        lasted = self._clock() - opened
        if lasted >= seconds / 2:
            return None  # its time is up (or near enough): the poll interval passed
        return f"the Policy watch ended after {lasted:.1f} s {ended} (asked: {whole} s)"

    def _options(self) -> RawCall:
        return {"_preload_content": False, "_request_timeout": self._calls.timeout}
