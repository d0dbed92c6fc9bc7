"""CEL as OCM's environment has it: the Kubernetes libraries, error semantics, compile errors.

Expected values follow the Go definitions: cel-go ``ext/strings.go`` (ext.Strings),
``k8s.io/apiserver/pkg/cel/library`` (lists.go, regex.go, quantity.go, semver.go, ip.go,
cidr.go, urls.go) and sdk-go ``pkg/cel/library`` (managedcluster.go, json.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from dsf_compile.placement.cel import CelEvaluationError, compile_expression, evaluate

CLUSTER = {
    "metadata": {"name": "c1", "labels": {"env": "prod"}},
    "status": {
        "version": {"kubernetes": "v1.29.3"},
        "allocatable": {"cpu": "3500m", "memory": "16Gi"},
        "clusterClaims": [{"name": "platform.open-cluster-management.io", "value": "AWS"}],
    },
}


def scores(cluster: str, name: str) -> list[dict[str, object]] | None:
    return [{"name": "gpu", "value": 60}, {"name": "cpu", "value": -5}] if name == "perf" else None


def value(expression: str) -> Any:
    compiled = compile_expression(expression)
    assert compiled.error is None and compiled.unsupported is None, compiled
    return evaluate(compiled, CLUSTER, scores)


TRUE_CASES = [
    # ext.Strings
    "'hello'.charAt(1) == 'e' && 'hello'.charAt(5) == ''",
    "'hello'.indexOf('l') == 2 && 'hello'.lastIndexOf('l') == 3 && 'hello'.indexOf('l', 3) == 3",
    "'MiXeD'.lowerAscii() == 'mixed' && 'MiXeD'.upperAscii() == 'MIXED'",
    "'a-b-c'.replace('-', '+') == 'a+b+c' && 'a-b-c'.replace('-', '+', 1) == 'a+b-c'",
    "'a,b,c'.split(',') == ['a', 'b', 'c'] && 'a,b,c'.split(',', 2) == ['a', 'b,c']",
    "'a,b'.split(',', 0) == []",
    "'hello'.substring(1, 3) == 'el' && '  x '.trim() == 'x'",
    "['a', 'b'].join('-') == 'a-b' && 'abc'.reverse() == 'cba'",
    # k8s Lists
    "[1, 2, 3].isSorted() && ![2, 1].isSorted() && [1, 2, 3].sum() == 6",
    "[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 1].lastIndexOf(1) == 2",
    # k8s Regex
    "'abc123def456'.find('[0-9]+') == '123'",
    "'abc123def456'.findAll('[0-9]+') == ['123', '456']",
    "'abc123def456'.findAll('[0-9]+', 1) == ['123']",
    # k8s Quantity: exact values, comparison by method
    "quantity(managedCluster.status.allocatable.memory) == quantity('16384Mi')",
    "quantity('3500m').isLessThan(quantity('4')) && quantity('4').compareTo(quantity('4000m')) == 0",
    "quantity('1.5').asApproximateFloat() == 1.5 && !quantity('1.5').isInteger()",
    "quantity('2k').asInteger() == 2000 && quantity('-1').sign() == -1",
    "quantity('1Gi').add(quantity('1Gi')) == quantity('2Gi') && quantity('5').sub(2) == quantity('3')",
    "isQuantity('2Gi') && !isQuantity('2 Gi')",
    # k8s Semver: no leading v; pre-releases rank below the release
    "semver('1.29.3').isGreaterThan(semver('1.29.0')) && semver('1.29.3').major() == 1",
    "semver('1.0.0-rc.1').isLessThan(semver('1.0.0')) && semver('1.2.3').patch() == 3",
    "!isSemver('v1.2.3') && isSemver('1.2.3-alpha+build.1')",
    # k8s IP and CIDR
    "ip('10.0.0.1').family() == 4 && ip('::1').isLoopback() && isIP('10.1.1.1')",
    "cidr('10.0.0.0/8').containsIP('10.1.2.3') && !cidr('10.0.0.0/8').containsIP(ip('11.0.0.1'))",
    "cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && cidr('10.1.2.3/8').masked() == cidr('10.0.0.0/8')",
    "cidr('192.168.0.0/24').prefixLength() == 24 && !isCIDR('10.0.0.1')",
    # k8s URLs
    "url('https://example.com:8443/a/b?x=1').getHost() == 'example.com:8443'",
    "url('https://example.com:8443/a').getPort() == '8443' && isURL('/relative/path')",
    # sdk-go: parseJSON (numbers are float64 in Go) and scores()
    "'{\"gpus\": 4}'.parseJSON().gpus == 4.0",
    "managedCluster.scores('perf').exists(s, s.name == 'gpu' && s.value >= 60)",
    "managedCluster.scores('perf').map(s, s.value).sum() == 55",
    # CEL's error semantics: || and && absorb an error when the other side decides
    "managedCluster.scores('missing').size() > 0 || true",
    "!(false && managedCluster.scores('missing').size() > 0)",
    "managedCluster.metadata.labels.env == 'prod'",
]


@pytest.mark.parametrize("expression", TRUE_CASES)
def test_library_functions_behave_as_in_go(expression: str) -> None:
    assert value(expression) is True


ERROR_CASES = [
    "managedCluster.scores('missing').size() > 0",  # sdk-go: "failed to get score"
    "managedCluster.metadata.labels.missing == 'x'",  # no such key
    "quantity('1') < quantity('2')",  # no '<' on quantities
    "quantity('lots').sign() == 1",
    "semver('v1.2.3').major() == 1",
    "[].min() == 0",  # "min called on empty list"
    "'abc'.charAt(4) == ''",
    "'x'.parseJSON() == 1",
]


@pytest.mark.parametrize("expression", ERROR_CASES)
def test_evaluation_errors(expression: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.error is None
    with pytest.raises(CelEvaluationError):
        evaluate(compiled, CLUSTER, scores)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("managedCluster.metadata.name ==", "compilation failed: ERROR: <input>:1:"),
        ("cluster.metadata.name == 'x'", "undeclared reference to 'cluster'"),
        ("managedCluster.metadata.name.frobnicate()", "undeclared reference to 'frobnicate'"),
        # the Kubernetes regex library compiles find's and findAll's constant pattern when
        # OCM builds the program
        ("managedCluster.metadata.name.find('(')", "instantiation failed: error parsing regexp"),
        ("'a'.findAll('[')", "instantiation failed: error parsing regexp: missing closing ]"),
    ],
)
def test_what_does_not_compile(expression: str, message: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.error is not None and message in compiled.error


def test_macro_variables_are_not_undeclared() -> None:
    compiled = compile_expression("[1, 2].all(x, x > 0) && [1].exists_one(y, y == 1)")
    assert compiled.error is None and evaluate(compiled, CLUSTER, scores) is True


@pytest.mark.parametrize(
    "expression",
    [
        "managedCluster.?metadata.?labels.?env.orValue('') == 'prod'",
        "format.dns1123Label().validate('x').hasValue()",
        "'%s'.format(['x']) == 'x'",
    ],
)
def test_what_dsf_cannot_evaluate_is_said(expression: str) -> None:
    compiled = compile_expression(expression)
    assert compiled.error is None
    assert compiled.unsupported is not None and "dsf does not evaluate" in compiled.unsupported


def test_nested_comprehensions_are_bounded_by_cost_not_count() -> None:
    assert value("[1].map(a, [1].map(b, [1].map(c, [1].map(d, d)))).size() == 1") is True


def test_a_string_function_cannot_build_an_unbounded_string() -> None:
    grow = "'" + "a" * 100 + "'" + ".replace('a', 'aaaaaaaaaa')" * 6
    compiled = compile_expression(f"{grow}.size() > 0")
    with pytest.raises(CelEvaluationError):
        evaluate(compiled, CLUSTER, scores)


def test_compile_errors_read_as_cel_go_prints_them() -> None:
    # cel-go: "compilation failed: " + issues.String(); each issue is
    # common.Error.ToDisplayString (1-based column, the line, dots and a caret); the
    # checker's message is "undeclared reference to '%s' (in container '%s')", a call
    # located at its "(", and the issues sorted by location
    compiled = compile_expression("x.frob() && 'frob(' == y")
    assert compiled.error == (
        "compilation failed: "
        "ERROR: <input>:1:1: undeclared reference to 'x' (in container '')\n"
        " | x.frob() && 'frob(' == y\n"
        " | ^\n"
        "ERROR: <input>:1:7: undeclared reference to 'frob' (in container '')\n"
        " | x.frob() && 'frob(' == y\n"
        " | ......^\n"
        "ERROR: <input>:1:24: undeclared reference to 'y' (in container '')\n"
        " | x.frob() && 'frob(' == y\n"
        " | .......................^"
    )
    syntax = compile_expression("a ==")
    assert syntax.error is not None
    assert syntax.error.startswith("compilation failed: ERROR: <input>:1:5: Syntax error: ")
    assert syntax.error.endswith("\n | a ==\n | ....^")
