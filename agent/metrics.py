"""Every metric the agent exposes, and the text ``/metrics`` serves of them.

Upstream's names are kept (``dynamic_score``, ``dynamic_scoring_requests_total`` and the
three ``*_seconds_total`` counters); the rest tell an operator *why* a scorer fails. The
names the compiler's rules and dashboard query come from :mod:`dsf_contract.metrics`.
Series that carry a score name are tracked per scorer so that a removed scorer leaves
nothing behind; every series is a plain number that writes its own line
(:mod:`agent.families`, in the text format of :mod:`agent.textformat`).
``dynamic_score`` is kept apart, as text each scorer's cycle renders
(:mod:`agent.exposition`); :meth:`AgentMetrics.exposition` is what ``/metrics`` serves.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from agent.exposition import ScoreSeries
from agent.families import Family, Histogram, Series, SeriesKey
from agent.score import RESULT_LABELS, Scored
from dsf_contract import metrics as names
from dsf_contract.agent_cli import Aggregation
from dsf_contract.placement_scores import group_by_key

MAX_LABEL_LENGTH = 256
SCORE_LABELS = (
    names.SCORE_CLUSTER_LABEL,
    *(f"ds_{label}" for label in RESULT_LABELS),
    names.SCORE_NAME_LABEL,
)
_LAG_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


@dataclass
class _Owned:
    """The labelled series one scorer created, so they can all be removed with it."""

    children: set[tuple[Family, SeriesKey]] = field(default_factory=set)


@dataclass(frozen=True)
class _Metric:
    """One metric as declared: its kind, name, help and labels."""

    kind: Literal["counter", "gauge", "histogram"]
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] = ()

    def declare(self) -> Family | Histogram:
        """The metric; a process-wide one (not labelled by score name first) is updated
        from several threads."""
        if self.kind == "histogram":
            return Histogram(self.name, self.help, self.buckets)
        shared = self.labels[:1] != (names.SCORER_LABEL,)
        return Family(self.kind, self.name, self.help, self.labels, shared=shared)


#: Every metric but ``dynamic_score``: attribute → how it is declared.
_METRICS: dict[str, _Metric] = {
    "requests": _Metric(
        "counter", names.REQUESTS, "Scoring cycles by outcome.", (names.SCORER_LABEL, "status")
    ),
    "fetch_seconds": _Metric(
        "counter",
        names.STAGE_SECONDS["fetch"],
        "Time spent querying the source.",
        (names.SCORER_LABEL,),
    ),
    "perform_seconds": _Metric(
        "counter",
        names.STAGE_SECONDS["perform"],
        "Time spent waiting for the Scoring API.",
        (names.SCORER_LABEL,),
    ),
    "send_seconds": _Metric(
        "counter",
        names.STAGE_SECONDS["send"],
        "Time spent publishing scores (metrics and AddOnPlacementScore).",
        (names.SCORER_LABEL,),
    ),
    "failures": _Metric(
        "counter",
        names.FAILURES,
        "Failed cycles by stage (secret, fetch, score, publish) and reason.",
        (names.SCORER_LABEL, "stage", "reason"),
    ),
    "skipped_results": _Metric(
        "counter",
        "dynamic_scoring_skipped_results",
        "Scoring API results skipped because their score was not a finite number or they were malformed.",
        (names.SCORER_LABEL,),
    ),
    "missed_cycles": _Metric(
        "counter",
        "dynamic_scoring_missed_cycles",
        "Scheduled cycles not run because the previous cycle of the scorer was still running.",
        (names.SCORER_LABEL,),
    ),
    "last_success": _Metric(
        "gauge",
        names.LAST_SUCCESS,
        "Unix time of the scorer's last fully successful cycle.",
        (names.SCORER_LABEL,),
    ),
    "enabled": _Metric(
        "gauge",
        names.SCORER_ENABLED,
        "1 when the scorer can run, 0 while it is disabled (a Secret it needs is missing).",
        (names.SCORER_LABEL,),
    ),
    "scorers": _Metric("gauge", names.SCORERS, "Scorers currently configured."),
    "reloads": _Metric(
        "counter",
        "dynamic_scoring_config_reloads",
        "Configuration loads by result; a failed load keeps the last good configuration.",
        ("result",),
    ),
    "config_api_errors": _Metric(
        "counter",
        "dynamic_scoring_config_api_errors",
        "Failed requests for the ConfigMap to the cluster API, by request (list or watch) "
        "and reason (forbidden: the agent's Role does not allow it).",
        ("request", "reason"),
    ),
    "config_ok": _Metric(
        "gauge",
        names.CONFIG_RELOAD_OK,
        "1 when the latest configuration could be used, 0 when the last good one is kept.",
    ),
    "config_timestamp": _Metric(
        "gauge",
        "dynamic_scoring_config_last_reload_success_timestamp_seconds",
        "Unix time of the last configuration that could be used.",
    ),
    "invalid_summaries": _Metric(
        "gauge",
        names.INVALID_SUMMARIES,
        "Summaries of the latest configuration that were rejected.",
    ),
    "start_lag": _Metric(
        "histogram",
        names.START_LAG,
        "Delay between a cycle's scheduled and actual start.",
        buckets=_LAG_BUCKETS,
    ),
    "hub_conflicts": _Metric(
        "counter",
        "dynamic_scoring_hub_conflicts",
        "AddOnPlacementScore writes retried after a resourceVersion conflict.",
        (names.SCORER_LABEL,),
    ),
    "hub_writes": _Metric(
        "counter",
        "dynamic_scoring_hub_writes",
        "AddOnPlacementScore status updates by result: written, or unchanged (not written: "
        "the hub holds these scores and they stay valid for more than 1.5 intervals).",
        (names.SCORER_LABEL, "result"),
    ),
    "compliance_state": _Metric(
        "gauge",
        "dynamic_scoring_compliance_state",
        "1 for the state of the cluster's Policies last seen (empty, noncompliant, "
        "compliant), 0 for the others; only when the compliance claim is on.",
        ("state",),
    ),
}


class AgentMetrics:
    """The agent's metrics; one instance per agent (tests make their own)."""

    requests: Family
    fetch_seconds: Family
    perform_seconds: Family
    send_seconds: Family
    failures: Family
    skipped_results: Family
    missed_cycles: Family
    last_success: Family
    enabled: Family
    scorers: Family
    reloads: Family
    config_api_errors: Family
    config_ok: Family
    config_timestamp: Family
    invalid_summaries: Family
    start_lag: Histogram
    hub_conflicts: Family
    hub_writes: Family
    compliance_state: Family

    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self._owned: dict[str, _Owned] = {}
        self.score = ScoreSeries(SCORE_LABELS)
        # everything but dynamic_score, written on each scrape: a dozen series per
        # scorer, whatever the scorers answer
        self._declared: list[Family | Histogram] = []
        for attr, metric in _METRICS.items():
            declared = metric.declare()
            self._declared.append(declared)
            setattr(self, attr, declared)

    def compliance_failed(self, reason: str) -> None:
        """Count a failed look at the Policies or write of the claim (no scorer: score_name "")."""
        self.failures.labels("", "compliance", reason).inc()

    def compliance_seen(self, state: str, states: Iterable[str]) -> None:
        """Show ``state`` as the one last seen."""
        for each in states:
            self.compliance_state.labels(each).set(1 if each == state else 0)

    def child(self, metric: Family, score_name: str, *labels: str) -> Series:
        """``metric`` labelled for ``score_name`` (first label) and ``labels``, tracked for removal."""
        key = (score_name, *labels)
        self._owned.setdefault(score_name, _Owned()).children.add((metric, key))
        return metric.labels(*key)

    def publish_scores(self, score_name: str, results: Iterable[Scored], how: Aggregation) -> int:
        """Set ``dynamic_score`` for the results and delete this scorer's series not among them.

        Returns the number of series now published.
        """
        folded = group_by_key(
            ((self._score_key(score_name, r.labels), r.score) for r in results), how
        )
        self.score.replace(score_name, folded)
        return len(folded)

    def exposition(self) -> bytes:
        """``/metrics``: the counters written now, in the order they were declared, then
        each scorer's scores as last rendered (every series' line up to its value was
        written once, when the series was made)."""
        counters = "".join(metric.text() for metric in self._declared)
        return counters.encode() + self.score.text()

    def forget(self, score_name: str) -> None:
        """Delete every series of a scorer that was removed from the configuration."""
        self.score.drop(score_name)
        owned = self._owned.pop(score_name, None)
        if owned is None:
            return
        for metric, labels in owned.children:
            metric.remove(*labels)

    def _score_key(self, score_name: str, labels: dict[str, str]) -> SeriesKey:
        return (
            self.cluster[:MAX_LABEL_LENGTH],
            *(labels.get(label, "")[:MAX_LABEL_LENGTH] for label in RESULT_LABELS),
            score_name[:MAX_LABEL_LENGTH],
        )


class ScorerMetrics:
    """The series of one scorer, bound once: a cycle touches them without label lookups."""

    def __init__(self, metrics: AgentMetrics, score_name: str) -> None:
        self._metrics = metrics
        self.score_name = score_name
        child = metrics.child
        self.success = child(metrics.requests, score_name, "success")
        self.failure = child(metrics.requests, score_name, "failure")
        self.fetch_seconds = child(metrics.fetch_seconds, score_name)
        self.perform_seconds = child(metrics.perform_seconds, score_name)
        self.send_seconds = child(metrics.send_seconds, score_name)
        self.skipped_results = child(metrics.skipped_results, score_name)
        self.missed_cycles = child(metrics.missed_cycles, score_name)
        self.hub_conflicts = child(metrics.hub_conflicts, score_name)
        self.hub_written = child(metrics.hub_writes, score_name, "written")
        self.hub_unchanged = child(metrics.hub_writes, score_name, "unchanged")
        self.last_success = child(metrics.last_success, score_name)
        self.enabled = child(metrics.enabled, score_name)
        self._failures: dict[tuple[str, str], Series] = {}

    def failed(self, stage: str, reason: str) -> None:
        """Count a failed cycle, by stage and reason."""
        key = (stage, reason)
        counter = self._failures.get(key)
        if counter is None:
            counter = self._failures[key] = self._metrics.child(
                self._metrics.failures, self.score_name, *key
            )
        counter.inc()
        self.failure.inc()
