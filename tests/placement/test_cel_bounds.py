"""CEL as OCM bounds it: RE2 regexes in linear time, cel-go's cost limit, no leaked runs.

Expected regex results are Go's ``regexp`` (RE2 syntax: POSIX classes and ``\\pL``, ASCII
``\\d``/``\\w``, ``$`` at the end of the text only, at most 1000 repetitions); expected
costs are cel-go's ``interpreter/runtimecost.go`` with OCM's ``PerCallLimit``.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
import weakref
from pathlib import Path
from typing import Any

import pytest

from dsf_compile.placement.cel import (
    VARIABLE,
    CelEvaluationError,
    _functions,
    compile_expression,
    evaluate,
    exact_cost,
)
from dsf_compile.placement.cel_cost import LIMIT_MESSAGE, PER_CALL_LIMIT, Constants, _Meter
from dsf_compile.placement.state import ScoreIndex, cluster_from_inventory
from tests.placement import cel_cases
from tests.placement.cel_cases import COSTLY
from tests.placement.placement_repo import add_cel, cli

CLUSTER = {"metadata": {"name": "c1", "labels": {"env": "prod"}}}


def no_scores(cluster: str, name: str) -> None:
    return None


def value(expression: str) -> object:
    compiled = compile_expression(expression)
    assert compiled.error is None and compiled.unsupported is None, compiled
    return evaluate(compiled, CLUSTER, no_scores)


# ----------------------------------------------------------------- rows 1 and 3: RE2


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        # POSIX classes are RE2 syntax (Python's re reads "[[:alpha:]]" as a set of ":ahlp[")
        ("'ab1'.find('[[:alpha:]]+')", "ab"),
        ("'1é'.matches('^[[:alpha:]]')", False),
        # Unicode classes
        ("'1éa'.find('\\\\pL+')", "éa"),
        # $ is the end of the text, never before a trailing newline
        ("'a\\n'.matches('a$')", False),
        ("'a\\n'.find('a$')", ""),
        # \\d and \\w are ASCII in RE2
        ("'٣'.matches('\\\\d')", False),
        ("'é_1'.findAll('\\\\w')", ["_", "1"]),
        ("'x٣7'.find('\\\\d+')", "7"),
        # Go's FindAllString: no empty match right after a match
        ("'a1b22'.findAll('[0-9]*')", ["", "1", "22"]),
        ("'abc'.findAll('a*')", ["a", "", ""]),
    ],
)
def test_regexes_have_go_re2_semantics(expression: str, expected: object) -> None:
    assert value(expression) == expected


def test_a_repeat_above_1000_is_go_s_error() -> None:
    compiled = compile_expression("'a'.find('a{1,1001}') == 'a'")
    assert compiled.error == (
        "instantiation failed: error parsing regexp: invalid repeat count: `{1,1001}`"
    )
    # a pattern only known at evaluation: an evaluation error (the cluster fails)
    dynamic = compile_expression("'a'.matches(managedCluster.metadata.name + '{1,1001}')")
    assert dynamic.error is None
    with pytest.raises(CelEvaluationError, match=r"'matches' error: .*invalid repeat count"):
        evaluate(dynamic, CLUSTER, no_scores)
    assert value("'a'.matches('^a{1,1000}$')") is True


@pytest.mark.timeout(30)
def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    text = "a" * 5000 + "!"
    assert value(f"'{text}'.find('^(a+)+$')") == ""
    assert value(f"'{text}'.matches('^(a+)+$')") is False
    assert value(f"'{text}'.findAll('(a|aa)+$')") == []


# ----------------------------------------------------------------- row 2: cost


@pytest.mark.parametrize(
    ("expression", "cost"),
    [
        # identifier 1 + two fields 2 + == on strings ceil(min(2, 2) * 0.1)
        ("managedCluster.metadata.name == 'c1'", 4),
        # list 10; per element: condition 2, step 1 + x 1 + > 1; result 1
        ("[1, 2, 3].all(x, x > 0)", 26),
        # exists stops at the first match: condition 3 + step 3, twice, then the
        # condition that stops the loop 3; result 1
        ("[1, 2, 3].exists(x, x == 2)", 10 + 12 + 3 + 1),
        # matches: ceil((1 + 3) * 0.1) * ceil(4 * 0.25)
        ("'abc'.matches('b+c$')", 1),
        # sdk-go's scores: list 10 + per item (1 + map 30); the identifier 1
        ("managedCluster.scores('perf')", 1 + 10 + 2 * 31),
        # sdk-go's parseJSON: ceil(8 * 0.1) + a map 30
        ("'{\"a\": 1}'.parseJSON()", 1 + 30),
        # string + by the sizes: ceil((3 + 3) * 0.1); list + 1, the two list literals 10 each
        ("'abc' + 'def'", 1),
        ("[1] + [2]", 21),
        # managedCluster is map(string, dyn): dyn + dyn leaves the overload open, cost 1;
        # dyn + string is add_string, by the sizes: ceil((4 + 96) * 0.1)
        ("managedCluster.metadata.labels.env + managedCluster.metadata.labels.env", 9),
        ("managedCluster.metadata.labels.env + '" + "a" * 96 + "'", 14),
        ("[managedCluster.metadata.labels.env].map(x, x + x)", 10 + 10 + 4 + 12 + 3 + 1),
    ],
)
def test_costs_are_cel_go_s(expression: str, cost: int) -> None:
    compiled = compile_expression(expression)
    assert exact_cost(compiled, CLUSTER, two_scores) == cost


def two_scores(cluster: str, name: str) -> list[dict[str, object]]:
    return [{"name": "gpu", "value": 60}, {"name": "cpu", "value": -5}]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("expression", COSTLY)
def test_past_ocm_s_cost_limit_is_cel_go_s_error(expression: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.error is None and compiled.unsupported is None
    with pytest.raises(CelEvaluationError, match=f"^{LIMIT_MESSAGE}$"):
        evaluate(compiled, CLUSTER, no_scores)


@pytest.mark.parametrize("expression", cel_cases.TRUE_CASES + cel_cases.ERROR_CASES)
def test_the_meter_reads_expressions_as_the_interpreter_does(expression: str) -> None:
    # the meter follows the values (short-circuits, loop lengths): on the library's
    # corpus it reaches the interpreter's result
    compiled = compile_expression(expression)
    meter = _Meter(
        {VARIABLE: cel_cases.CLUSTER}, _functions(cel_cases.scores), Constants(frozenset())
    )
    assert (meter.eval(compiled.tree) is True) is (expression in cel_cases.TRUE_CASES)


def test_the_limit_is_ocm_s() -> None:
    assert PER_CALL_LIMIT == 1_000_000  # k8s.io/apiserver/pkg/apis/cel.PerCallLimit
    # 100,000 elements at 5 a step
    hundred_thousand = "'" + "b" * 100 + "'" + ".replace('b', 'bbbbbbbbbb')" * 3
    within = compile_expression(f"{hundred_thousand}.split('').all(x, x == 'b')")
    assert exact_cost(within, CLUSTER, no_scores) < PER_CALL_LIMIT
    assert evaluate(within, CLUSTER, no_scores) is True


# ----------------------------------------------------------------- row 12: no leaked runs


def clusters(count: int) -> list[object]:
    return [cluster_from_inventory(f"c{i:04}", {"env": "prod"}) for i in range(count)]


def run_once(fleet_clusters: list[object]) -> weakref.ref[ScoreIndex]:
    index = ScoreIndex.of([])
    expression = compile_expression("managedCluster.metadata.labels.env == 'prod'")
    assert all(index.cel_true(expression, c) for c in fleet_clusters)  # type: ignore[arg-type]
    return weakref.ref(index)


def test_a_run_s_cel_contexts_are_freed() -> None:
    fleet_clusters = clusters(50)
    gone = run_once(fleet_clusters)
    gc.collect()
    assert gone() is None  # the index, its memo and the contexts in it


def test_repeated_runs_do_not_grow_memory() -> None:
    fleet_clusters = clusters(200)
    run_once(fleet_clusters)
    gc.collect()
    first = len(gc.get_objects())
    tracemalloc.start()
    try:
        for _ in range(10):
            run_once(fleet_clusters)
        gc.collect()
        grown, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # leaked, every run kept its index, memo and a function table per cluster: 2,000+
    # objects; the interpreter's contexts, outside Python's heap, went with them
    assert len(gc.get_objects()) - first < 200
    assert grown < 1_000_000


# ----------------------------------------------------------------- the commands


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "expression",
    ["'" + "a" * 70 + "!'.find('^(a+)+$') == ''", COSTLY[0], COSTLY[1]],
    ids=["backtracking-regex", "two-comprehensions", "doubled-strings"],
)
def test_commands_finish_with_ocm_s_outcome(fleet: Path, expression: str) -> None:
    add_cel(fleet, expression)
    code, out, err = cli(fleet, "validate")
    assert "Traceback" not in err, err
    if "find" in expression:
        assert code == 0, err
    else:  # whatever the cluster, OCM fails it: a located error, as for a non-bool
        assert code == 1
        assert "placements/gpu-inference.yaml:19:15: error: spec.predicates[0]" in err
        assert "costs more than OCM's CEL cost limit (1000000), whatever the cluster" in err
    code, out, err = cli(fleet, "explain", "--format", "json", "--at", "2026-11-22T10:00:00Z")
    assert code == 0 and "Traceback" not in err, err
    placement = next(p for p in json.loads(out)["placements"] if p["name"] == "gpu-inference")
    assert placement["simulated"] is True
    if "find" in expression:
        assert placement["decisions"]  # '' == '' holds: OCM keeps the clusters
    else:
        assert placement["decisions"] == []  # OCM drops every cluster past the limit
    code, _, err = cli(fleet, "render", "--check")
    assert "Traceback" not in err


def test_a_cost_that_depends_on_the_cluster_is_a_warning(fleet: Path) -> None:
    # the cluster's name, repeated into a long list: over the limit, on some clusters only
    # (worker01 and edge01 have a "1": 90,000 characters at 14 each; worker02 has none)
    add_cel(
        fleet,
        "managedCluster.metadata.name.replace('1', '" + "x" * 100 + "')"
        ".replace('x', '" + "y" * 900 + "').split('')"
        ".all(c, '" + "a" * 100 + "'.contains(c) || true)",
    )
    code, _, err = cli(fleet, "validate")
    assert code == 0 and "Traceback" not in err, err
    assert "warning: spec.predicates[0]" in err
    assert "costs more than OCM's CEL cost limit (1000000) on cluster 'edge01'" in err
    code, _, err = cli(fleet, "validate", "--strict")
    assert code == 1


@pytest.mark.parametrize("expression", ["'a'.find(r'a{1,1001}') == ''", "'a'.findAll(\"(\") == []"])
def test_a_constant_pattern_is_read_as_cel_decodes_it(expression: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.error is not None and "error parsing regexp" in compiled.error


def test_a_bad_constant_matches_pattern_fails_on_each_cluster_as_in_ocm() -> None:
    # OCM's program options do not precompile matches: not misconfigured, an evaluation
    # error wherever it is evaluated (validate still reports it)
    compiled = compile_expression(
        "managedCluster.metadata.name == 'x' || 'a'.matches('\\x61{1,1001}')"
    )
    assert compiled.error is None and compiled.unsupported is None
    with pytest.raises(CelEvaluationError, match="invalid repeat count"):
        evaluate(compiled, CLUSTER, no_scores)
    assert evaluate(compiled, {"metadata": {"name": "x"}}, no_scores) is True


def test_validate_reports_a_bad_constant_matches_pattern(fleet: Path) -> None:
    add_cel(fleet, "managedCluster.metadata.name.matches('[[:alpha:]')")
    code, _, err = cli(fleet, "validate")
    assert code == 1 and "Traceback" not in err
    assert "placements/gpu-inference.yaml:19:15: error: " in err
    assert "matches: error parsing regexp: missing closing ]: `[[:alpha:]`" in err


@pytest.mark.parametrize(
    "expression",
    [
        "managedCluster.metadata.name.find('[[:alpha:]]+') in ['worker', 'edge']",
        "managedCluster.metadata.name.find('\\\\pL+') in ['worker', 'edge']",
        "(managedCluster.metadata.name + '\\n').find('[0-9]$') == ''",
        "'٣'.find('\\\\d') == '' && 'é'.find('\\\\w') == ''",
        "!'٣'.matches('^\\\\d$') && 'a'.findAll('a{1,1000}') == ['a']",
    ],
)
def test_placements_decide_as_ocm_s_re2_does(fleet: Path, expression: str) -> None:
    without = gpu_inference(fleet)
    add_cel(fleet, expression)  # true for every cluster in Go: the CEL removes none
    placement = gpu_inference(fleet)
    assert placement["filtered"] == without["filtered"]
    assert placement["decisions"] == without["decisions"] != []
    code, _, err = cli(fleet, "validate", "--strict")
    assert code == 0, err


def gpu_inference(fleet: Path) -> dict[str, Any]:
    code, out, err = cli(fleet, "explain", "--format", "json", "--at", "2026-11-22T10:00:00Z")
    assert code == 0, err
    found: dict[str, Any] = next(
        p for p in json.loads(out)["placements"] if p["name"] == "gpu-inference"
    )
    return found


def test_a_repeat_count_past_1000_misconfigures_as_in_ocm(fleet: Path) -> None:
    add_cel(fleet, "managedCluster.metadata.name.find('a{1,1001}') == ''")
    code, out, err = cli(fleet, "explain", "--format", "json", "--at", "2026-11-22T10:00:00Z")
    assert code == 0, err
    placement = next(p for p in json.loads(out)["placements"] if p["name"] == "gpu-inference")
    misconfigured = next(
        c for c in placement["conditions"] if c["type"] == "PlacementMisconfigured"
    )
    assert misconfigured["status"] == "True"
    assert misconfigured["message"] == (
        "Predicate:instantiation failed: error parsing regexp: invalid repeat count: `{1,1001}`"
    )
    assert placement["decisions"] == []
    code, _, err = cli(fleet, "validate")
    assert code == 1 and "invalid repeat count" in err and "Traceback" not in err
