"""The agent's metrics read as Prometheus reads them: what ``/metrics`` serves
(:meth:`agent.metrics.AgentMetrics.exposition`), parsed by ``prometheus_client``'s parser."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from agent.metrics import AgentMetrics


def families(metrics: AgentMetrics) -> list[Metric]:
    """Every family ``/metrics`` serves now, with its samples."""
    return list(text_string_to_metric_families(metrics.exposition().decode()))


def sample_value(
    metrics: AgentMetrics, name: str, labels: Mapping[str, str] | None = None
) -> float | None:
    """The value of the sample ``name`` with exactly ``labels``; ``None`` when not served
    (as ``CollectorRegistry.get_sample_value`` answers)."""
    wanted = dict(labels or {})
    for family in families(metrics):
        for sample in family.samples:
            if sample.name == name and sample.labels == wanted:
                return sample.value
    return None
