"""CEL selectors, evaluated as OCM's scheduler evaluates them.

OCM (``pkg/placement/helpers/cel.go``) compiles each ``celExpressions`` entry once with
cel-go in an environment holding the variable ``managedCluster`` (the ManagedCluster as
unstructured data), the member function ``scores(name)`` (sdk-go
``pkg/cel/library/managedcluster.go``), ``parseJSON`` and the Kubernetes libraries; a
cluster passes when every expression evaluates to ``true``.

Here the expressions run on ``common-expression-language`` (a Rust CEL interpreter with
CEL's error semantics: ``||`` and ``&&`` absorb an error when the other side decides),
with the Kubernetes functions it lacks supplied by :mod:`.cel_library` and :mod:`.cel_values`.
It has no type checker, so the part of cel-go's checker that OCM relies on — an
undeclared name or function, a constant regex that does not compile — is done here on
the names the compiled program references. What it cannot parse but cel-go accepts
(optional-field syntax ``.?``/``[?``) and the libraries not supplied leave the
Placement *not simulated*, never guessed.

Every evaluation is held to OCM's cost limit: its worst case is bounded before it runs
(:mod:`.cel_bound`, as cel-go's checker estimates), and only when that bound does not
settle it is the run metered step by step on the values (:mod:`.cel_cost`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import field
from typing import Any

from dsf_compile.placement import cel_engine, cel_library, cel_values
from dsf_compile.placement.cel_bound import Bound, cost_bound
from dsf_compile.placement.cel_cost import (
    LIMIT_MESSAGE,
    MAX_UNITS,
    PER_CALL_LIMIT,
    Constants,
    CostLimitExceeded,
    TooLarge,
    metered_cost,
)
from dsf_compile.placement.cel_cost_model import open_overloads
from dsf_compile.placement.cel_library import (
    UNSUPPORTED_FUNCTIONS,
    UNSUPPORTED_VARIABLES,
    CelFunctionError,
    regex_error,
)
from dsf_compile.placement.cel_syntax import (
    CelSyntaxError,
    call_names,
    children,
    closed_nodes,
    parse,
)
from dsf_contract.records import frozen

#: The variable OCM declares.
VARIABLE = "managedCluster"
#: The member function that reads a cluster's AddOnPlacementScores (sdk-go's clusterScores).
SCORES_FUNCTION = "scores"
#: An expression longer than this is refused before it is parsed (the parser recurses).
MAX_EXPRESSION_CHARS = 10_000
#: CEL's standard functions and macros (cel-go's standard declarations).
_STANDARD = frozenset(
    {
        "size", "matches", "contains", "startsWith", "endsWith", "int", "uint", "double",
        "string", "bytes", "bool", "type", "timestamp", "duration", "dyn", "has", "all",
        "exists", "exists_one", "map", "filter", "getFullYear", "getMonth", "getDate",
        "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes",
        "getSeconds", "getMilliseconds", "null_type",
    }
)  # fmt: skip
#: The name ``matches`` is evaluated under: the interpreter's own ``matches`` is not RE2
#: and cannot be replaced, so the program that runs calls this one instead.
_RE2_MATCHES = "dsfRe2Matches"
#: The functions supplied here, by name: strings, lists and regex, then the object types.
LIBRARY = {**cel_library.FUNCTIONS, **cel_values.FUNCTIONS}
_KNOWN = _STANDARD | set(LIBRARY) | {SCORES_FUNCTION}
#: Variables a macro binds: ``list.exists(x, …)``.
_BOUND_RE = re.compile(r"\.\s*(?:all|exists|exists_one|map|filter)\s*\(\s*([A-Za-z_]\w*)\s*,")
#: The regex functions. The Kubernetes library compiles a constant pattern of ``find``
#: and ``findAll`` when OCM builds the program (``cel.OptimizeRegex``), so a bad one fails
#: it ("instantiation failed"); OCM's program options do not optimize ``matches``, whose
#: bad constant pattern is an evaluation error on each cluster instead.
_REGEX_FUNCTIONS = frozenset({"matches", "find", "findAll"})
_PRECOMPILED = frozenset({"find", "findAll"})
_OPTIONAL_SYNTAX_RE = re.compile(r"\.\?|\[\?|\boptional\.")


@frozen
class CelExpression:
    """One compiled ``celExpressions`` entry.

    ``error`` is what OCM would report compiling it (the Placement is then misconfigured);
    ``unsupported`` says why dsf cannot evaluate an expression OCM accepts.
    """

    source: str
    program: Any = None
    error: str | None = None
    unsupported: str | None = None
    #: The expression's tree: its worst case is bounded on it (:mod:`.cel_bound`), and
    #: :mod:`.cel_cost` meters it when the bound leaves the limit open.
    tree: Any = field(default=None, repr=False, compare=False)
    #: Its parts that are the same on every cluster, metered once.
    constants: Constants | None = field(default=None, repr=False, compare=False)
    #: Its worst case on any cluster (:mod:`.cel_bound`).
    worst: Bound | None = field(default=None, repr=False, compare=False)


ScoreLookup = Callable[[str, str], Sequence[Mapping[str, object]] | None]


def compile_expression(source: str) -> CelExpression:
    """Compile ``source`` once; the result is evaluated against every cluster."""
    if len(source) > MAX_EXPRESSION_CHARS:
        return CelExpression(
            source, error=f"compilation failed: longer than {MAX_EXPRESSION_CHARS} characters"
        )
    try:
        program = cel_engine.engine.compile(source)
    except (ValueError, RuntimeError, TypeError) as err:
        if _OPTIONAL_SYNTAX_RE.search(source):
            return CelExpression(
                source, unsupported="it uses CEL optional types, which dsf does not evaluate"
            )
        return CelExpression(source, error=f"compilation failed: {_syntax_error(str(err))}")
    names = {n for n in program.functions() if n[:1].isalpha()}
    variables = set(program.variables()) - set(_BOUND_RE.findall(source)) - {VARIABLE}
    unsupported = sorted((names & UNSUPPORTED_FUNCTIONS) | (variables & UNSUPPORTED_VARIABLES))
    if unsupported:
        return CelExpression(
            source, unsupported=f"it uses {', '.join(unsupported)}, which dsf does not evaluate"
        )
    if variables or names - _KNOWN:
        message = _undeclared(source, sorted(variables), sorted(names - _KNOWN))
        return CelExpression(source, error=f"compilation failed: {message}")
    runnable = _runnable(source)
    for function, problem in bad_constant_patterns(runnable):
        if function in _PRECOMPILED:
            return CelExpression(source, error=f"instantiation failed: {problem}")
    return runnable


def bad_constant_patterns(expression: CelExpression) -> list[tuple[str, str]]:
    """``(function, Go's error)`` for each constant pattern of ``matches``, ``find`` or
    ``findAll`` that Go's ``regexp`` refuses, decoded as CEL decodes the literal."""
    found: list[tuple[str, str]] = []
    stack = [expression.tree] if expression.tree is not None else []
    while stack:
        node = stack.pop()
        if node[0] == "call" and node[1] in _REGEX_FUNCTIONS and node[2] is not None:
            pattern = node[3][0] if node[3] else None
            if pattern is not None and pattern[0] == "lit" and isinstance(pattern[1], str):
                problem = regex_error(pattern[1])
                if problem is not None:
                    found.append((node[1], problem))
        stack.extend(children(node))
    return found


def _runnable(source: str) -> CelExpression:
    """The program that runs (``matches`` on RE2), the tree its cost is bounded and
    metered on, and its worst case on any cluster."""
    try:
        tree = parse(source)
        renamed = source
        for offset, name in reversed(call_names(source)):
            if name == "matches":
                renamed = renamed[:offset] + _RE2_MATCHES + renamed[offset + len(name) :]
        program = cel_engine.engine.compile(renamed)
    except (CelSyntaxError, ValueError, RuntimeError, TypeError):
        return CelExpression(source, unsupported="dsf cannot read it to bound its cost as OCM does")
    constants = Constants(closed_nodes(tree), open_overloads(tree, VARIABLE))
    worst = cost_bound(tree, VARIABLE, None, None, constants.open)
    return CelExpression(source, program=program, tree=tree, constants=constants, worst=worst)


def is_constant(expression: CelExpression) -> bool:
    """Whether ``expression`` reads nothing of the cluster (same value on every one)."""
    tree = expression.tree
    if tree is None or expression.constants is None:
        return False
    return tree[0] == "lit" or id(tree) in expression.constants.closed


def _scores_calls(expression: CelExpression) -> Iterator[Any]:
    """Every call of ``scores`` in the expression's parsed tree."""
    stack = [expression.tree] if expression.tree is not None else []
    while stack:
        node = stack.pop()
        if node[0] == "call" and node[1] == SCORES_FUNCTION:
            yield node
        stack.extend(children(node))


def score_names(expression: CelExpression) -> frozenset[str]:
    """The AddOnPlacementScore names the expression reads with ``X.scores(NAME)``, NAME a
    string literal, as CEL reads it (spaces, either quote, raw or escaped: the parser
    decodes it); a name computed at run time is not known here."""
    return frozenset(
        node[3][0][1]
        for node in _scores_calls(expression)
        if node[2] is not None
        and len(node[3]) == 1
        and node[3][0][0] == "lit"
        and isinstance(node[3][0][1], str)
    )


def reads_scores(expression: CelExpression) -> bool:
    """Whether the expression may call ``scores()`` (its result then depends on the
    scores, not on the cluster alone); an expression that was not parsed may."""
    if expression.tree is None:
        return SCORES_FUNCTION in expression.source
    return any(True for _ in _scores_calls(expression))


def cluster_context(cluster: Mapping[str, Any], scores: ScoreLookup) -> Any:
    """The evaluation context of one cluster: ``managedCluster``, ``scores()``, the library.

    Built once per cluster and reused for every expression (building it costs more than
    most evaluations).
    """

    return cel_engine.engine.Context(variables={VARIABLE: cluster}, functions=_functions(scores))


def _functions(scores: ScoreLookup) -> dict[str, Callable[..., Any]]:
    """The library and ``scores()`` (sdk-go's clusterScores) over ``scores``."""

    def cluster_scores(receiver: object, name: object) -> list[Mapping[str, object]]:
        # the receiver's metadata.name, then the lister's Get
        metadata = receiver.get("metadata") if isinstance(receiver, dict) else None
        cluster_name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(cluster_name, str) or not isinstance(name, str):
            raise CelFunctionError("failed to get cluster name")
        found = scores(cluster_name, name)
        if found is None:
            raise CelFunctionError(f'failed to get score: addonplacementscore "{name}" not found')
        return [dict(item) for item in found]

    return {**LIBRARY, "scores": cluster_scores, _RE2_MATCHES: cel_library.matches}


def evaluate(
    expression: CelExpression,
    cluster: Mapping[str, Any],
    scores: ScoreLookup,
    context: Any = None,
) -> object:
    """The value of ``expression`` for ``cluster``; a :class:`CelEvaluationError` on error.

    ``context`` is :func:`cluster_context` of the same cluster and scores, when reused.
    """
    return evaluate_costed(expression, cluster, scores, context)[0]


@frozen
class Cost:
    """What an evaluation cost in cel-go's units: exactly when it was metered, else at
    most (its worst case on that cluster, within OCM's limit)."""

    units: int
    exact: bool


def evaluate_costed(
    expression: CelExpression,
    cluster: Mapping[str, Any],
    scores: ScoreLookup,
    context: Any = None,
) -> tuple[object, Cost]:
    """:func:`evaluate`, and what the evaluation cost.

    The worst case is bounded first (:mod:`.cel_bound`, as cel-go's checker estimates);
    only when it may pass OCM's limit is the run metered (:func:`exact_cost`).
    """
    if expression.program is None or expression.tree is None:
        raise CelEvaluationError(expression.error or expression.unsupported or "not compiled")
    bound = worst_case(expression, cluster, scores)
    if _within(bound):
        cost = Cost(bound.cost, exact=False)
    else:
        cost = Cost(exact_cost(expression, cluster, scores), exact=True)
    try:
        return expression.program.execute(context or cluster_context(cluster, scores)), cost
    except Exception as err:  # the interpreter raises many types for evaluation errors
        message = _first_line(str(err)).replace(f"'{_RE2_MATCHES}'", "'matches'")
        raise CelEvaluationError(message) from None


def worst_case(expression: CelExpression, cluster: Mapping[str, Any], scores: ScoreLookup) -> Bound:
    """The most ``expression`` can cost and build on ``cluster``, before it runs: its worst
    case on any cluster when that is within OCM's limit, else on this one."""
    if expression.tree is None or expression.constants is None or expression.worst is None:
        raise CelEvaluationError(expression.error or expression.unsupported or "not compiled")
    if _within(expression.worst):
        return expression.worst
    return cost_bound(expression.tree, VARIABLE, cluster, scores, expression.constants.open)


def _within(bound: Bound) -> bool:
    return bound.cost <= PER_CALL_LIMIT and bound.units <= MAX_UNITS


def exact_cost(expression: CelExpression, cluster: Mapping[str, Any], scores: ScoreLookup) -> int:
    """cel-go's cost of ``expression`` on ``cluster``, metered on its values;
    :class:`CelEvaluationError` with cel-go's message past OCM's limit (OCM then drops the
    cluster)."""
    if expression.tree is None:
        raise CelEvaluationError(expression.error or expression.unsupported or "not compiled")
    try:
        return metered_cost(
            expression.tree, {VARIABLE: cluster}, _functions(scores), expression.constants
        )
    except CostLimitExceeded:
        raise CelEvaluationError(LIMIT_MESSAGE) from None
    except (TooLarge, RecursionError) as err:
        raise CelEvaluationError(
            f"dsf does not evaluate it: {err or 'nested too deeply'}"
        ) from None
    except Exception as err:  # a value the meter does not model: no bound, so no run
        raise CelEvaluationError(f"dsf could not bound its cost: {err}") from None


class CelEvaluationError(Exception):
    """An expression failed for one cluster (OCM removes that cluster)."""


# ----------------------------------------------- compile errors as cel-go prints them


def _syntax_error(text: str) -> str:
    """The parser's report in cel-go's form: ``ERROR: <input>:L:C: …``, snippet, caret."""
    start = text.find("ERROR:")
    if start < 0:
        return _first_line(text)
    # the same grammar and messages as cel-go; its snippet lines start " | ", not "| "
    return text[start:].replace("\n| ", "\n | ")


def _undeclared(source: str, variables: Sequence[str], functions: Sequence[str]) -> str:
    """cel-go's checker errors for undeclared names, sorted by where they are.

    An identifier is reported where it starts, a call at its opening parenthesis (where
    cel-go's parser places call expressions).
    """
    masked = _STRING_LITERAL_RE.sub(lambda m: " " * len(m.group(0)), source)
    found = []
    for name in variables:
        at = re.search(rf"(?<![\w.]){re.escape(name)}\b", masked)
        found.append((at.start() if at else 0, name))
    for name in functions:
        at = re.search(rf"\b{re.escape(name)}\s*\(", masked)
        found.append((at.end() - 1 if at else 0, name))
    return "\n".join(
        _cel_go_error(source, offset, f"undeclared reference to '{name}' (in container '')")
        for offset, name in sorted(found)
    )


def _cel_go_error(source: str, offset: int, message: str) -> str:
    # common.Error.ToDisplayString: 1-based line and column, the line, then a caret
    # under the column with a dot (a wide dot under a wide character) before it
    line_start = source.rfind("\n", 0, offset) + 1
    line_end = source.find("\n", offset)
    line = source[line_start : line_end if line_end >= 0 else len(source)].replace("\t", " ")
    column = offset - line_start
    dots = "".join("." if ord(c) < 0x80 else "\uff0e" for c in line[:column])
    caret = "^" if column >= len(line) or ord(line[column]) < 0x80 else "\uff3e"
    number = source.count("\n", 0, offset) + 1
    return f"ERROR: <input>:{number}:{column + 1}: {message}\n | {line}\n | {dots}{caret}"


_STRING_LITERAL_RE = re.compile(r"'(?:[^'\\\n]|\\.)*'|\"(?:[^\"\\\n]|\\.)*\"")


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "error"
