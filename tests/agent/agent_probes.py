"""What a running agent shows, read the way the agent tests read it: its metrics as
samples, their exposition checked by Prometheus's own ``promtool``."""

from __future__ import annotations

import subprocess

from prometheus_client.parser import text_string_to_metric_families

from tests.agent.conftest import AgentProcess


def samples(agent: AgentProcess) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(agent.metrics())
        for sample in family.samples
    }


def value(agent: AgentProcess, name: str, **labels: str) -> float:
    return samples(agent).get((name, frozenset(labels.items())), 0.0)


def promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=30
    )
