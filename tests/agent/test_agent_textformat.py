"""``/metrics`` is byte for byte what ``prometheus_client`` writes of the same metrics.

The agent writes the text format itself (:mod:`agent.textformat`, :mod:`agent.families`)
and does not load ``prometheus_client``; here the same metrics are declared on a
``prometheus_client`` registry, given the same updates, and the two texts compared, with
``*_created`` series off as the agent has always served them.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import prometheus_client
import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client import metrics as prometheus_metrics
from prometheus_client.utils import floatToGoString

from agent import textformat
from agent.families import Family
from agent.families import Histogram as OurHistogram
from agent.metrics import _METRICS, AgentMetrics, ScorerMetrics
from agent.score import Scored
from tests.agent.conftest import CLUSTER

NUMBERS = [
    0.0,
    -0.0,
    1.0,
    0.1,
    -2e-7,
    1e-7,
    5e-324,
    123456.0,
    1234567.0,
    12345678.9,
    1e7,
    1.7e9,
    1e21,
    -1e21,
    1.5e300,
    math.inf,
    -math.inf,
    math.nan,
    2**53 + 1,
]


@pytest.fixture
def no_created(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """prometheus_client as the agent configured it: no ``*_created`` series."""
    monkeypatch.setattr(prometheus_metrics, "_use_created", False)
    yield


def theirs_of(registry: CollectorRegistry) -> SimpleNamespace:
    """Every metric the agent declares but ``dynamic_score``, declared to
    ``prometheus_client`` in the same order."""
    made: dict[str, Any] = {}
    for attr, metric in _METRICS.items():
        if metric.kind == "histogram":
            made[attr] = Histogram(
                metric.name, metric.help, metric.labels, buckets=metric.buckets, registry=registry
            )
        else:
            kind = Counter if metric.kind == "counter" else Gauge
            made[attr] = kind(metric.name, metric.help, metric.labels, registry=registry)
    return SimpleNamespace(**made)


def update(metrics: Any) -> None:
    """The same updates for both: scorers' series (tricky label values), process-wide
    ones, the histogram, and a scorer's series removed."""
    for name in ("s", 'q"uo\\te\nd\u2028\u00e9', "", "gone"):
        for status in ("success", "failure"):
            metrics.requests.labels(name, status).inc()
        metrics.failures.labels(name, "fetch", 'reason "x"\n').inc(2)
        metrics.fetch_seconds.labels(name).inc(0.125)
        metrics.last_success.labels(name).set(1.7e9)
        metrics.enabled.labels(name).set(1)
        metrics.hub_writes.labels(name, "written").inc(12345678.9)
    metrics.requests.remove("gone", "success")
    metrics.scorers.set(4)
    metrics.reloads.labels("success").inc()
    metrics.reloads.labels("failure").inc(3)
    metrics.config_api_errors.labels("watch", "forbidden").inc()
    metrics.config_ok.set(1)
    metrics.config_timestamp.set(1764390000.25)
    metrics.invalid_summaries.set(0)
    for lag in (0.0, 0.0005, 0.001, 0.003, 0.7, 31.0, 1e-9):
        metrics.start_lag.observe(lag)
    for state in ("empty", "noncompliant", "compliant"):
        metrics.compliance_state.labels(state).set(1 if state == "compliant" else 0)


@pytest.mark.usefixtures("no_created")
def test_the_exposition_is_byte_for_byte_prometheus_client_s() -> None:
    ours = AgentMetrics(CLUSTER)
    registry = CollectorRegistry()
    theirs = theirs_of(registry)
    # fresh: unlabelled series at 0, labelled families as their HELP and TYPE only
    assert ours.exposition() == generate_latest(registry) + ours.score.text()
    update(ours)
    update(theirs)
    ours.publish_scores("s", [Scored({"node": "n"}, 1.5)], "last")
    assert ours.exposition() == generate_latest(registry) + ours.score.text()


@pytest.mark.usefixtures("no_created")
def test_a_forgotten_scorer_leaves_what_prometheus_client_leaves_after_removals() -> None:
    ours = AgentMetrics(CLUSTER)
    registry = CollectorRegistry()
    theirs = theirs_of(registry)
    scorer = ScorerMetrics(ours, "gone")
    scorer.success.inc()
    scorer.failed("fetch", "timeout")
    theirs.requests.labels("gone", "success").inc()
    theirs.requests.labels("gone", "failure").inc()
    theirs.failures.labels("gone", "fetch", "timeout").inc()
    ours.forget("gone")
    for key in (("gone", "success"), ("gone", "failure")):
        theirs.requests.remove(*key)
    theirs.failures.remove("gone", "fetch", "timeout")
    assert ours.exposition() == generate_latest(registry) + ours.score.text()


@pytest.mark.parametrize("value", NUMBERS, ids=repr)
def test_numbers_are_written_as_prometheus_client_writes_them(value: float) -> None:
    assert textformat.number(value) == floatToGoString(value)


def test_the_content_type_is_prometheus_client_s() -> None:
    assert textformat.CONTENT_TYPE == prometheus_client.CONTENT_TYPE_LATEST


def test_a_histogram_counts_a_nan_in_no_bucket_but_in_its_sum(no_created: None) -> None:
    registry = CollectorRegistry()
    made = Histogram("lag_seconds", "Lag.", buckets=(0.5, 1.0), registry=registry)
    ours = OurHistogram("lag_seconds", "Lag.", (0.5, 1.0))
    for value in (0.25, math.nan, 2.0):
        made.observe(value)
        ours.observe(value)
    assert ours.text().encode() == generate_latest(registry)


def test_a_shared_family_loses_no_update_between_threads() -> None:
    family = Family("counter", "x_total", "x", ("request",), shared=True)

    def count() -> None:
        for _ in range(20_000):
            family.labels("watch").inc()

    threads = [threading.Thread(target=count) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert family.labels("watch").value == 80_000.0
