"""CEL's worst case bounded before the run, as cel-go's checker estimates it.

The bound must never be below what cel-go's meter counts (else a Placement past OCM's
limit would be judged within it): checked on the library's corpus, on the cost cases
and on generated expressions. Only what the bound leaves open is metered.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dsf_compile.placement import cel
from dsf_compile.placement.cel import (
    VARIABLE,
    CelEvaluationError,
    _functions,
    compile_expression,
    evaluate,
    evaluate_costed,
    worst_case,
)
from dsf_compile.placement.cel_bound import UNBOUNDED, cost_bound
from dsf_compile.placement.cel_cost import (
    LIMIT_MESSAGE,
    MAX_UNITS,
    PER_CALL_LIMIT,
    RUNTIME_BUDGET,
    Constants,
    CostLimitExceeded,
    TooLarge,
    _Meter,
)
from dsf_compile.placement.state import ScoreIndex, cluster_from_inventory
from tests.placement import cel_cases
from tests.placement.cel_cases import COSTLY

CLUSTER: dict[str, Any] = {
    "metadata": {
        "name": "c1",
        "labels": {"env": "prod", "zone": "eu-" + "x" * 300, "list": "a,b,c,d,e"},
    },
    "status": {
        "clusterClaims": [
            {"name": "region", "value": "eu-west-1"},
            {"name": "platform", "value": "AWS" * 20},
        ],
        "allocatable": {"cpu": "3500m"},
    },
}


SMALL_CLUSTER = {"metadata": {"name": "c1", "labels": {"env": "prod"}}}


def scores(cluster: str, name: str) -> list[dict[str, object]] | None:
    if name == "perf":
        return [{"name": f"item{i}", "value": i} for i in range(40)]
    return None


def metered(compiled: cel.CelExpression, cluster: dict[str, Any]) -> tuple[int, int] | None:
    """What cel-go's meter counts (cost, units) on ``cluster``; None past the limit."""
    assert compiled.tree is not None and compiled.constants is not None
    fresh = Constants(compiled.constants.closed, compiled.constants.open)
    meter = _Meter({VARIABLE: cluster}, _functions(scores), fresh)
    try:
        meter.eval(compiled.tree)
    except (CostLimitExceeded, TooLarge):
        return None
    return meter.cost, meter.units


def assert_bounded(source: str, cluster: dict[str, Any]) -> str:
    """If ``source`` compiles, its bound holds the meter's count. The outcome: ``refused``
    (it does not compile), ``metered`` or ``past the limit`` (the meter stopped it)."""
    compiled = compile_expression(source)
    if compiled.tree is None or compiled.program is None:
        return "refused"
    assert compiled.constants is not None and compiled.worst is not None
    bound = cost_bound(compiled.tree, VARIABLE, cluster, scores, compiled.constants.open)
    # the worst case on any cluster holds this one's
    assert bound.cost <= compiled.worst.cost and bound.units <= compiled.worst.units
    found = metered(compiled, cluster)
    if found is None:  # past OCM's limit (or too large): the bound must say it may be
        assert bound.cost > PER_CALL_LIMIT or bound.units > MAX_UNITS
        return "past the limit"
    assert found[0] <= bound.cost, (source, found, bound)
    assert found[1] <= bound.units, (source, found, bound)
    return "metered"


CORPUS = [
    *cel_cases.TRUE_CASES,
    *cel_cases.ERROR_CASES,
    *COSTLY,
    "managedCluster.metadata.labels.zone.split('').all(c, c != 'z')",
    "managedCluster.metadata.labels.zone.replace('x', 'yy').size() > 3",
    "managedCluster.metadata.labels.list.split(',').map(x, x + x).join('/').contains('a')",
    "managedCluster.status.clusterClaims.exists(c, c.name == 'region' && c.value.startsWith('eu'))",
    "managedCluster.scores('perf').filter(s, s.value > 20).map(s, s.name).size() == 19",
    "managedCluster.scores('perf').exists_one(s, s.value == 3)",
    "managedCluster.scores('nothing').size() == 0 || true",
    '\'{"a": [1, {"b": 2}]}\'.parseJSON().a.size() == 2',
    "{'a': managedCluster.metadata.labels}.a.env in ['prod', 'dev']",
    "[managedCluster.metadata.labels.zone].map(managedCluster, managedCluster + 'x').size() == 1",
    "managedCluster.metadata.labels.zone.matches('^eu-x+$') ? 'a' : managedCluster.metadata.name",
]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", CORPUS)
def test_the_worst_case_is_never_below_the_meter(source: str) -> None:
    for cluster in (CLUSTER, cel_cases.CLUSTER, SMALL_CLUSTER):
        assert_bounded(source, cluster)


# Generated expressions: strings, lists and comprehensions over the cluster's values.
_STRINGS = st.sampled_from(
    [
        "managedCluster.metadata.name",
        "managedCluster.metadata.labels.zone",
        "managedCluster.metadata.labels.list",
        "managedCluster.status.clusterClaims[1].value",
        "'abc'",
        "''",
        "'a,b'",
        "x",
    ]
)
_LISTS = st.sampled_from(
    [
        "managedCluster.status.clusterClaims",
        "managedCluster.scores('perf')",
        "managedCluster.metadata.labels",
        "[1, 2, 3]",
        "['a', 'b']",
    ]
)


def _grow(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(inner, inner)
    return st.one_of(
        pair.map(lambda p: f"({p[0]} + {p[1]})"),
        pair.map(lambda p: f"({p[0]} == {p[1]})"),
        pair.map(lambda p: f"({p[0]} < {p[1]})"),
        pair.map(lambda p: f"{p[0]}.contains({p[1]})"),
        pair.map(lambda p: f"{p[0]}.startsWith({p[1]})"),
        pair.map(lambda p: f"({p[0]} in [{p[1]}, 'a'])"),
        pair.map(lambda p: f"({p[0]} || {p[1]})"),
        pair.map(lambda p: f"({p[0]} && {p[1]})"),
        st.tuples(inner, inner, inner).map(lambda p: f"({p[0]} ? {p[1]} : {p[2]})"),
        inner.map(lambda s: f"{s}.replace('a', 'xyz')"),
        inner.map(lambda s: f"{s}.split(',')"),
        inner.map(lambda s: f"{s}.split('').join('-')"),
        inner.map(lambda s: f"size({s})"),
        inner.map(lambda s: f"{s}.lowerAscii()"),
        inner.map(lambda s: f"{s}.matches('a+b')"),
        inner.map(lambda s: f"string({s})"),
        st.tuples(_LISTS, inner).map(lambda p: f"{p[0]}.all(x, {p[1]})"),
        st.tuples(_LISTS, inner).map(lambda p: f"{p[0]}.exists(x, {p[1]})"),
        st.tuples(_LISTS, inner).map(lambda p: f"{p[0]}.map(x, {p[1]})"),
        st.tuples(_LISTS, inner).map(lambda p: f"{p[0]}.filter(x, {p[1]})"),
        st.tuples(inner, inner).map(lambda p: f"{p[0]}.split(',').map(x, {p[1]})"),
        inner.map(lambda s: f"[{s}, {s}]"),
        inner.map(lambda s: f"{{'k': {s}}}.k"),
    )


_EXPRESSIONS = st.recursive(_STRINGS | _LISTS, _grow, max_leaves=8)


@pytest.mark.timeout(300)
def test_generated_expressions_stay_within_their_worst_case() -> None:
    tally: Counter[str] = Counter()

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_EXPRESSIONS)
    def one(source: str) -> None:
        outcome = assert_bounded(source, CLUSTER)
        tally[outcome] += 1
        assume(outcome != "refused")

    one()
    # most generated expressions compile and run within the limit (the corpus's COSTLY
    # cases are the ones past it): a strategy that only made refused text fails here
    assert tally["metered"] >= 100, tally


# ----------------------------------------------------------------- what is metered


@pytest.fixture
def meter_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    runs: list[str] = []
    real = cel.exact_cost

    def counted(expression: cel.CelExpression, *args: Any) -> int:
        runs.append(expression.source)
        return real(expression, *args)

    monkeypatch.setattr(cel, "exact_cost", counted)
    return runs


@pytest.mark.parametrize(
    "source",
    [
        "managedCluster.metadata.labels.env == 'prod'",
        "managedCluster.scores('perf').exists(s, s.name == 'item3' && s.value > 2)",
        "managedCluster.status.clusterClaims.exists(c, c.name == 'region')",
        "managedCluster.metadata.labels.list.split(',').all(x, size(x) == 1)",
    ],
)
def test_an_expression_bounded_within_the_limit_runs_unmetered(
    source: str, meter_runs: list[str]
) -> None:
    compiled = compile_expression(source)
    value, cost = evaluate_costed(compiled, CLUSTER, scores)
    assert value is True
    assert meter_runs == [] and not cost.exact
    assert cost.units <= PER_CALL_LIMIT


@pytest.mark.parametrize("source", COSTLY)
def test_only_what_the_bound_leaves_open_is_metered(source: str, meter_runs: list[str]) -> None:
    compiled = compile_expression(source)
    assert worst_case(compiled, CLUSTER, scores).cost > PER_CALL_LIMIT
    with pytest.raises(CelEvaluationError, match=f"^{LIMIT_MESSAGE}$"):
        evaluate(compiled, CLUSTER, scores)
    assert meter_runs == [source]


def test_a_computed_score_name_has_no_bound() -> None:
    compiled = compile_expression("managedCluster.scores(managedCluster.metadata.name).size() > 0")
    assert worst_case(compiled, CLUSTER, scores).cost >= UNBOUNDED


# ----------------------------------------------------------------- the selector's budget


def selector_cluster(label: str) -> Any:
    return cluster_from_inventory("c1", {"long": label})


def test_worst_cases_past_the_budget_are_metered_before_a_cluster_is_dropped() -> None:
    # each worst case visits 100,000 characters; each run stops at the first
    cluster = selector_cluster("a" + "b" * 99_998)
    selector = [
        compile_expression(
            f"managedCluster.metadata.labels.long.split('').exists(c, c == 'a' || c == '{i}')"
        )
        for i in range(17)
    ]
    bounds = [worst_case(e, cluster.cel_view(), scores).cost for e in selector]
    assert all(b <= PER_CALL_LIMIT for b in bounds) and sum(bounds) > RUNTIME_BUDGET
    index = ScoreIndex.of([])
    assert index.cel_all_true(selector, cluster) is True


def test_exact_costs_past_the_budget_drop_the_cluster() -> None:
    # each run costs what its worst case is: 6,000 x 100 = 600,000; 17 of them 10,200,000
    label = "a" * 60_000
    selector = [
        compile_expression(f"!managedCluster.metadata.labels.long.contains('{'b' * 1000}{i}')")
        for i in range(17)
    ]
    cluster = selector_cluster(label)
    index = ScoreIndex.of([])
    assert index.cel_all_true(selector[:16], cluster) is True
    assert index.cel_all_true(selector, cluster) is False
