"""A counter or gauge family (``agent.families.Family``, a scorer's or a process-wide one)
is exposed as prometheus_client exposes its own: the same text for the same updates,
removals included."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest

from agent.families import Family


@pytest.mark.parametrize("kind", ["counter", "gauge"])
def test_a_scorer_family_reads_as_prometheus_client_s_metric(kind: str) -> None:
    theirs = CollectorRegistry()
    name = "dynamic_scoring_things_total" if kind == "counter" else "dynamic_scoring_level"
    labels = ("score_name", "stage")
    family = Family(kind, name, 'What "it" counts\\.', labels)  # type: ignore[arg-type]
    made = (Counter if kind == "counter" else Gauge)(
        name, 'What "it" counts\\.', labels, registry=theirs
    )
    for key, amount in [(("a", "fetch"), 1.0), (('b\n"x"', "score"), 2.5), (("a", "fetch"), 0.5)]:
        for series in (family.labels(*key), made.labels(*key)):
            series.inc(amount) if kind == "counter" else series.set(amount)  # type: ignore[union-attr]
    family.labels("c", "publish")
    made.labels("c", "publish")
    family.remove('b\n"x"', "score")
    made.remove('b\n"x"', "score")
    strip = [line for line in generate_latest(theirs).splitlines() if b"_created" not in line]
    assert family.text().encode().splitlines() == strip


def test_a_counter_never_goes_down() -> None:
    series = Family("counter", "x_total", "x", ("score_name",)).labels("a")
    with pytest.raises(ValueError):
        series.inc(-1)
