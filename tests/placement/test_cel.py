"""CEL as OCM's environment has it: the Kubernetes libraries, error semantics, compile errors.

Expected values follow the Go definitions: cel-go ``ext/strings.go`` (ext.Strings),
``k8s.io/apiserver/pkg/cel/library`` (lists.go, regex.go, quantity.go, semver.go, ip.go,
cidr.go, urls.go) and sdk-go ``pkg/cel/library`` (managedcluster.go, json.go).
"""

from __future__ import annotations

from typing import Any

import pytest

from dsf_compile.placement.cel import CelEvaluationError, compile_expression, evaluate
from tests.placement.cel_cases import CLUSTER, ERROR_CASES, TRUE_CASES, scores


def value(expression: str) -> Any:
    compiled = compile_expression(expression)
    assert compiled.error is None and compiled.unsupported is None, compiled
    return evaluate(compiled, CLUSTER, scores)


@pytest.mark.parametrize("expression", TRUE_CASES)
def test_library_functions_behave_as_in_go(expression: str) -> None:
    assert value(expression) is True


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
