"""Every metric the agent exposes, on an injected ``CollectorRegistry``.

Upstream's names are kept (``dynamic_score``, ``dynamic_scoring_requests_total`` and the
three ``*_seconds_total`` counters); the rest tell an operator *why* a scorer fails. The
names the compiler's rules and dashboard query come from :mod:`dsf_contract.metrics`.
Series that carry a score name are tracked per scorer so that a removed scorer leaves
nothing behind; they are plain numbers (:class:`ScorerSeries`), exposed as
prometheus_client exposes its own: a dozen prometheus_client children per scorer, each
with its lock and wrapper, held 1.9 MB for 200 scorers and a lock on every update.
``dynamic_score`` is kept apart, as text each scorer's cycle renders
(:mod:`agent.exposition`); :meth:`AgentMetrics.exposition` is what ``/metrics`` serves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from agent.exposition import ScoreSeries
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

SeriesKey = tuple[str, ...]


class ScorerSeries:
    """One series of a scorer's counter or gauge: a number the event loop updates (the
    scrape's thread only reads it), and its line's text up to the value."""

    __slots__ = ("prefix", "value")

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix
        self.value = 0.0

    def inc(self, amount: float = 1.0) -> None:
        """Add ``amount`` (a counter never goes down)."""
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount

    def set(self, value: float) -> None:
        """Set a gauge."""
        self.value = float(value)


class ScorerFamily:
    """A counter or gauge labelled by score name first: its series in the order they
    were made, collected as prometheus_client collects its metrics (the same text)."""

    def __init__(
        self, kind: Literal["counter", "gauge"], name: str, help: str, labels: tuple[str, ...]
    ) -> None:
        self._kind = kind
        self._name = name.removesuffix("_total") if kind == "counter" else name
        self._sample = f"{self._name}_total" if kind == "counter" else name
        self._help = help
        self._labels = labels
        self._series: dict[SeriesKey, ScorerSeries] = {}
        # HELP and TYPE as prometheus_client writes them for this family
        self._head = _rendered(Metric(self._name, help, kind))

    def labels(self, *values: str) -> ScorerSeries:
        """The series of ``values`` (one per label), made at first use."""
        key = tuple(str(value) for value in values)
        if len(key) != len(self._labels):
            raise ValueError(f"Incorrect label count (expected {len(self._labels)}, got {key})")
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = ScorerSeries(self._line_prefix(key))
        return series

    def _line_prefix(self, key: SeriesKey) -> str:
        """The series' sample line up to its value, as prometheus_client writes it (label
        names sorted, values escaped): written once, not on every scrape."""
        one = Metric(self._sample, "", "gauge")
        one.add_sample(self._sample, dict(zip(self._labels, key, strict=True)), 0.0)
        line = _rendered(one).rsplit("\n", 2)[-2]  # escaped: no line break inside
        return line.removesuffix(" 0.0")

    def remove(self, *values: str) -> None:
        """Drop the series of ``values``."""
        self._series.pop(tuple(str(value) for value in values), None)

    def describe(self) -> list[Metric]:
        """The family without samples (what a registry checks names against)."""
        return [Metric(self._name, self._help, self._kind)]

    def text(self) -> str:
        """The family as :meth:`collect` and ``generate_latest`` write it, from each series'
        line written once (the scrape's thread: no sample objects made per scrape)."""
        lines = [self._head]
        for series in list(self._series.values()):
            value = floatToGoString(series.value)  # type: ignore[no-untyped-call]  # untyped upstream
            lines.append(f"{series.prefix} {value}\n")
        return "".join(lines)

    def collect(self) -> list[Metric]:
        """The family and every series (the scrape's thread)."""
        family = Metric(self._name, self._help, self._kind)
        labels = self._labels
        for key, series in list(self._series.items()):
            family.add_sample(self._sample, dict(zip(labels, key, strict=True)), series.value)
        return [family]


class _Only:
    """One collector as a registry of its own: what ``generate_latest`` writes of it."""

    def __init__(self, collector: Metric | MetricWrapperBase) -> None:
        self._collector = collector

    def collect(self) -> Iterable[Metric]:
        if isinstance(self._collector, Metric):
            return [self._collector]
        return self._collector.collect()


def _rendered(collector: Metric | MetricWrapperBase) -> str:
    return generate_latest(_Only(collector)).decode()


@dataclass
class _Owned:
    """The labelled series one scorer created, so they can all be removed with it."""

    children: set[tuple[ScorerFamily, SeriesKey]] = field(default_factory=set)


@dataclass(frozen=True)
class _Metric:
    """One metric as declared to prometheus_client: its kind, name, help and labels."""

    kind: type[Counter] | type[Gauge] | type[Histogram]
    name: str
    help: str
    labels: tuple[str, ...] = ()
    buckets: tuple[float, ...] | None = None

    def declare(self, registry: CollectorRegistry) -> MetricWrapperBase | ScorerFamily:
        """The metric, registered on ``registry``; labelled by score name first, a
        :class:`ScorerFamily`."""
        if self.labels[:1] == (names.SCORER_LABEL,):
            kind: Literal["counter", "gauge"] = "counter" if self.kind is Counter else "gauge"
            family = ScorerFamily(kind, self.name, self.help, self.labels)
            registry.register(family)
            return family
        if self.buckets is not None:
            return Histogram(
                self.name, self.help, self.labels, buckets=self.buckets, registry=registry
            )
        return self.kind(self.name, self.help, self.labels, registry=registry)


#: Every metric but ``dynamic_score``: attribute → how it is declared.
_METRICS: dict[str, _Metric] = {
    "requests": _Metric(
        Counter, names.REQUESTS, "Scoring cycles by outcome.", (names.SCORER_LABEL, "status")
    ),
    "fetch_seconds": _Metric(
        Counter,
        names.STAGE_SECONDS["fetch"],
        "Time spent querying the source.",
        (names.SCORER_LABEL,),
    ),
    "perform_seconds": _Metric(
        Counter,
        names.STAGE_SECONDS["perform"],
        "Time spent waiting for the Scoring API.",
        (names.SCORER_LABEL,),
    ),
    "send_seconds": _Metric(
        Counter,
        names.STAGE_SECONDS["send"],
        "Time spent publishing scores (metrics and AddOnPlacementScore).",
        (names.SCORER_LABEL,),
    ),
    "failures": _Metric(
        Counter,
        names.FAILURES,
        "Failed cycles by stage (secret, fetch, score, publish) and reason.",
        (names.SCORER_LABEL, "stage", "reason"),
    ),
    "skipped_results": _Metric(
        Counter,
        "dynamic_scoring_skipped_results",
        "Scoring API results skipped because their score was not a finite number or they were malformed.",
        (names.SCORER_LABEL,),
    ),
    "missed_cycles": _Metric(
        Counter,
        "dynamic_scoring_missed_cycles",
        "Scheduled cycles not run because the previous cycle of the scorer was still running.",
        (names.SCORER_LABEL,),
    ),
    "last_success": _Metric(
        Gauge,
        names.LAST_SUCCESS,
        "Unix time of the scorer's last fully successful cycle.",
        (names.SCORER_LABEL,),
    ),
    "enabled": _Metric(
        Gauge,
        names.SCORER_ENABLED,
        "1 when the scorer can run, 0 while it is disabled (a Secret it needs is missing).",
        (names.SCORER_LABEL,),
    ),
    "scorers": _Metric(Gauge, names.SCORERS, "Scorers currently configured."),
    "reloads": _Metric(
        Counter,
        "dynamic_scoring_config_reloads",
        "Configuration loads by result; a failed load keeps the last good configuration.",
        ("result",),
    ),
    "config_api_errors": _Metric(
        Counter,
        "dynamic_scoring_config_api_errors",
        "Failed requests for the ConfigMap to the cluster API, by request (list or watch) "
        "and reason (forbidden: the agent's Role does not allow it).",
        ("request", "reason"),
    ),
    "config_ok": _Metric(
        Gauge,
        names.CONFIG_RELOAD_OK,
        "1 when the latest configuration could be used, 0 when the last good one is kept.",
    ),
    "config_timestamp": _Metric(
        Gauge,
        "dynamic_scoring_config_last_reload_success_timestamp_seconds",
        "Unix time of the last configuration that could be used.",
    ),
    "invalid_summaries": _Metric(
        Gauge, names.INVALID_SUMMARIES, "Summaries of the latest configuration that were rejected."
    ),
    "start_lag": _Metric(
        Histogram,
        names.START_LAG,
        "Delay between a cycle's scheduled and actual start.",
        buckets=_LAG_BUCKETS,
    ),
    "hub_conflicts": _Metric(
        Counter,
        "dynamic_scoring_hub_conflicts",
        "AddOnPlacementScore writes retried after a resourceVersion conflict.",
        (names.SCORER_LABEL,),
    ),
    "hub_writes": _Metric(
        Counter,
        "dynamic_scoring_hub_writes",
        "AddOnPlacementScore status updates by result: written, or unchanged (not written: "
        "the hub holds these scores and they stay valid for more than 1.5 intervals).",
        (names.SCORER_LABEL, "result"),
    ),
    "compliance_state": _Metric(
        Gauge,
        "dynamic_scoring_compliance_state",
        "1 for the state of the cluster's Policies last seen (empty, noncompliant, "
        "compliant), 0 for the others; only when the compliance claim is on.",
        ("state",),
    ),
}


class AgentMetrics:
    """The agent's metrics; one instance per registry (tests pass a fresh one)."""

    requests: ScorerFamily
    fetch_seconds: ScorerFamily
    perform_seconds: ScorerFamily
    send_seconds: ScorerFamily
    failures: ScorerFamily
    skipped_results: ScorerFamily
    missed_cycles: ScorerFamily
    last_success: ScorerFamily
    enabled: ScorerFamily
    scorers: Gauge
    reloads: Counter
    config_api_errors: Counter
    config_ok: Gauge
    config_timestamp: Gauge
    invalid_summaries: Gauge
    start_lag: Histogram
    hub_conflicts: ScorerFamily
    hub_writes: ScorerFamily
    compliance_state: Gauge

    def __init__(self, registry: CollectorRegistry, cluster: str) -> None:
        self.registry = registry
        self.cluster = cluster
        self._owned: dict[str, _Owned] = {}
        self.score = ScoreSeries(SCORE_LABELS)
        registry.register(self.score)
        # everything but dynamic_score, rendered by prometheus_client on each scrape: a
        # dozen series per scorer, whatever the scorers answer
        self._counters = counters = CollectorRegistry()
        registry.register(counters)
        self._declared: list[MetricWrapperBase | ScorerFamily] = []
        for attr, metric in _METRICS.items():
            declared = metric.declare(counters)
            self._declared.append(declared)
            setattr(self, attr, declared)

    def compliance_failed(self, reason: str) -> None:
        """Count a failed look at the Policies or write of the claim (no scorer: score_name "")."""
        self.failures.labels("", "compliance", reason).inc()

    def compliance_seen(self, state: str, states: Iterable[str]) -> None:
        """Show ``state`` as the one last seen."""
        for each in states:
            self.compliance_state.labels(each).set(1 if each == state else 0)

    def child(self, metric: ScorerFamily, score_name: str, *labels: str) -> ScorerSeries:
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
        """``/metrics``: the counters rendered now, in the order they were declared, then
        each scorer's scores as last rendered. Exactly what ``generate_latest`` writes of
        the counters; a scorer's family from its series' lines, written once each."""
        parts = [
            m.text().encode() if isinstance(m, ScorerFamily) else generate_latest(_Only(m))
            for m in self._declared
        ]
        return b"".join(parts) + self.score.text()

    def forget(self, score_name: str) -> None:
        """Delete every series of a scorer that was removed from the configuration."""
        self.score.drop(score_name)
        owned = self._owned.pop(score_name, None)
        if owned is None:
            return
        for metric, labels in owned.children:
            # A child that was never touched is unknown to prometheus_client.
            with contextlib.suppress(KeyError):
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
        self._failures: dict[tuple[str, str], ScorerSeries] = {}

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
