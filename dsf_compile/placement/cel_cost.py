"""OCM's bound on a CEL evaluation: cel-go's runtime cost, metered before the interpreter runs.

OCM builds every selector program with ``cel.CostLimit(PerCallLimit)`` (ocm
``pkg/placement/helpers/cel.go``; ``k8s.io/apiserver/pkg/apis/cel``: 1,000,000) and
cel-go's ``CostTracker`` (``interpreter/runtimecost.go``) counts each step as it runs:
an identifier or a field 1, a list literal 10, a map literal 30, a call 1 unless its
overload costs by size (``==``, string ``+``, ``in`` on a list, ``matches``,
``contains``, ``startsWith``/``endsWith``), sdk-go's ``scores`` and ``parseJSON`` by what
they return, ``&&``/``||``/``?:`` nothing of their own, and a comprehension its loop
condition and step once per element. Past the limit the evaluation stops with
``operation cancelled: actual cost limit exceeded`` and OCM drops the cluster.

The interpreter has no such meter, so :func:`metered_cost` walks the expression's tree
(:mod:`.cel_syntax`) on the cluster's values, charging as cel-go does, and stops at the
limit; only an expression that stays within it is handed to the interpreter. Charges
follow the runtime types of the values (cel-go charges by the overload its checker chose;
on OCM's ``dyn`` cluster fields that is the same overload). What the meter builds is
bounded too (:data:`MAX_UNITS`), so a cheap-looking step cannot exhaust memory.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dsf_compile.placement import cel_regex
from dsf_compile.placement.cel_engine import engine as cel
from dsf_compile.placement.cel_library import CelFunctionError
from dsf_compile.placement.cel_syntax import Node, children

#: ``k8s.io/apiserver/pkg/apis/cel.PerCallLimit``: OCM's cost limit for one expression.
PER_CALL_LIMIT = 1_000_000
#: ``RuntimeCELCostBudget``: OCM's budget for all expressions of a selector on one cluster.
RUNTIME_BUDGET = 10_000_000
#: cel-go's error when the limit is passed (``interpreter.EvalCancelledError``).
LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"
#: The most characters and list items one evaluation may build (cel-go charges 1 for
#: ``replace`` or a list ``+``, so its cost alone does not bound memory).
MAX_UNITS = 20_000_000
_STRING_FACTOR = 0.1  # common.StringTraversalCostFactor
_REGEX_FACTOR = 0.25  # common.RegexStringLengthCostFactor
_LIST_COST, _MAP_COST, _SELECT_COST = 10, 30, 1
#: The largest value of a constant part kept for the next cluster (the compiled expression
#: is cached for the process: what it keeps must stay small).
_KEPT_UNITS = 100_000
_INT64 = (-(2**63), 2**63 - 1)
#: Types ordered within themselves (timestamps and durations come back from the
#: interpreter as datetime and timedelta).
_ORDERED = (str, bytes, bool, datetime, timedelta)


class CostLimitExceeded(Exception):
    """The evaluation passed OCM's cost limit."""


class TooLarge(Exception):
    """The evaluation builds more than :data:`MAX_UNITS`."""


class _Err:
    """A CEL error value (absorbed by ``&&``/``||`` where CEL absorbs errors)."""

    __slots__ = ()


_ERR = _Err()


_SIZED = frozenset({str, bytes, list, dict})


def size(value: Any) -> int:
    """cel-go's ``actualSize``: the length of a string, bytes, list or map, else 1."""
    return len(value) if type(value) in _SIZED else 1


@dataclass(frozen=True)
class Constants:
    """An expression's parts that read no variable (:func:`.cel_syntax.closed_nodes`),
    and what each cost and gave when first evaluated: the same on every cluster."""

    closed: frozenset[int]
    #: ``id`` of the calls whose overload cel-go's checker leaves open (see
    #: :func:`open_overloads`): cel-go charges them 1, whatever the sizes.
    open: frozenset[int] = frozenset()
    #: ``id`` of a part → (value, cost, complete); incomplete: it passed the limit after
    #: costing that much.
    seen: dict[int, tuple[Any, int, bool]] = field(default_factory=dict)


def metered_cost(
    tree: Node,
    variables: Mapping[str, Any],
    functions: Mapping[str, Callable[..., Any]],
    constants: Constants | None = None,
) -> int:
    """The cost of evaluating ``tree``; :class:`CostLimitExceeded` past OCM's limit."""
    meter = _Meter(variables, functions, constants or Constants(frozenset()))
    meter.eval(tree)
    return meter.cost


class _Meter:
    def __init__(
        self,
        variables: Mapping[str, Any],
        functions: Mapping[str, Callable[..., Any]],
        constants: Constants,
    ) -> None:
        self.scope: dict[str, Any] = dict(variables)
        self.functions = functions
        self.constants = constants
        self.closed = constants.closed
        self.cost = 0
        self.units = 0

    def charge(self, amount: int) -> None:
        self.cost += amount
        if self.cost > PER_CALL_LIMIT:
            raise CostLimitExceeded(LIMIT_MESSAGE)

    def made(self, value: Any) -> Any:
        if type(value) in _SIZED:
            self.units += len(value)
            if self.units > MAX_UNITS:
                raise TooLarge(f"it builds more than {MAX_UNITS} characters or items")
        return value

    def eval(self, node: Node) -> Any:
        if id(node) in self.closed:
            return self.constant(node)
        return _STEPS[node[0]](self, node)

    def constant(self, node: Node) -> Any:
        seen = self.constants.seen.get(id(node))
        if seen is not None:
            value, cost, complete = seen
            if complete or self.cost + cost > PER_CALL_LIMIT:
                self.charge(cost)
                return value
        start = self.cost
        try:
            value = _STEPS[node[0]](self, node)
        except CostLimitExceeded:
            self.constants.seen[id(node)] = (None, self.cost - start, False)
            raise
        if _small(value, _KEPT_UNITS):  # kept with the compiled expression: bounded
            self.constants.seen[id(node)] = (value, self.cost - start, True)
        return value

    # ------------------------------------------------------------------ leaves

    def lit(self, node: Node) -> Any:
        return node[1]

    def ident(self, node: Node) -> Any:
        self.charge(_SELECT_COST)
        return self.scope.get(node[1], _ERR)

    def qualified(self, operand: Node) -> Any:
        # an attribute costs 1 and each qualifier 1; a qualifier on a computed value
        # starts a new attribute
        value = self.eval(operand)
        self.charge(1 if operand[0] in ("ident", "select", "index") else 1 + _SELECT_COST)
        return value

    def select(self, node: Node) -> Any:
        value = self.qualified(node[1])
        return value.get(node[2], _ERR) if isinstance(value, dict) else _ERR

    def has(self, node: Node) -> Any:
        value = self.qualified(node[1])
        return node[2] in value if isinstance(value, dict) else _ERR

    def index(self, node: Node) -> Any:
        value = self.qualified(node[1])
        key = self.eval(node[2])
        if isinstance(value, dict):
            return value.get(key, _ERR) if _hashable(key) else _ERR
        if isinstance(value, list) and type(key) is int and 0 <= key < len(value):
            return value[key]
        return _ERR

    def make_list(self, node: Node) -> Any:
        items = [self.eval(item) for item in node[1]]
        self.charge(_LIST_COST)
        return next((i for i in items if i is _ERR), None) or self.made(items)

    def make_map(self, node: Node) -> Any:
        pairs = [(self.eval(k), self.eval(v)) for k, v in node[1]]
        self.charge(_MAP_COST)
        if any(k is _ERR or v is _ERR or not _hashable(k) for k, v in pairs):
            return _ERR
        return self.made(dict(pairs))

    # ------------------------------------------------------------------ logic

    def logic(self, node: Node) -> Any:
        decisive = node[0] == "or"  # the value that decides: true for ||, false for &&
        left = self.eval(node[1])
        if left is decisive:
            return decisive
        right = self.eval(node[2])
        if right is decisive:
            return decisive
        if left is _ERR or right is _ERR or type(left) is not bool or type(right) is not bool:
            return _ERR
        return not decisive

    def cond(self, node: Node) -> Any:
        test = self.eval(node[1])
        if type(test) is not bool:
            return _ERR
        return self.eval(node[2] if test else node[3])

    # ------------------------------------------------------------------ calls

    def call(self, node: Node) -> Any:
        _, name, target, arg_nodes = node
        evaluate = self.eval
        args = [evaluate(a) for a in arg_nodes]
        if target is not None:
            args.insert(0, evaluate(target))
        if id(node) in self.constants.open:
            self.charge(1)
        elif name not in _RESULT_COSTED:
            self.charge(call_cost(name, args))  # charged first: bounds what it builds
        if _ERR in args:
            return _ERR
        result = self.apply(name, target is not None, args)
        if name in _RESULT_COSTED:
            self.charge(_result_cost(name, args, result))
        return self.made(result)

    def apply(self, name: str, member: bool, args: list[Any]) -> Any:
        try:
            builtin = _OPERATORS.get(name)
            if builtin is not None:
                return builtin(*args)
            function = self.functions.get(name)
            if function is not None:
                return function(*args)
            return _delegate(name, member, args)
        except (CelFunctionError, cel_regex.RegexError, TypeError, ValueError, ArithmeticError):
            return _ERR
        except (CostLimitExceeded, TooLarge):
            raise
        except Exception:  # the interpreter's own errors, for a delegated function
            return _ERR

    # ------------------------------------------------------------------ comprehensions

    def fold(self, node: Node) -> Any:
        _, macro, var, range_node, first, second = node
        source = self.eval(range_node)
        if not isinstance(source, list | dict):
            return _ERR
        accu: Any = {"all": True, "exists": False, "exists_one": 0}.get(macro)
        if accu is None:
            self.charge(_LIST_COST)  # the accumulator's empty list literal
            accu = []
        outer = self.scope.get(var, _MISSING)
        try:
            for item in list(source):
                if not self.loop_condition(macro, accu):
                    break
                self.scope[var] = item
                accu = self.step(macro, accu, item, first, second)
        finally:
            if outer is _MISSING:
                self.scope.pop(var, None)
            else:
                self.scope[var] = outer
        self.charge(_SELECT_COST)  # the result reads the accumulator
        if macro == "exists_one":
            self.charge(1)
            return accu == 1 if accu is not _ERR else _ERR
        return accu

    def loop_condition(self, macro: str, accu: Any) -> bool:
        # all: @not_strictly_false(@result); exists: @not_strictly_false(!@result)
        if macro == "all":
            self.charge(2)
            return accu is not False
        if macro == "exists":
            self.charge(3)
            return accu is not True
        return True

    def step(self, macro: str, accu: Any, item: Any, first: Node, second: Node | None) -> Any:
        self.charge(_SELECT_COST)  # the step reads the accumulator
        if macro in ("all", "exists"):
            return self.logic(("or" if macro == "exists" else "and", ("lit", accu), first))
        test = True if macro == "map" and second is None else self.eval(first)
        if type(test) is not bool:
            return _ERR
        if not test:
            return accu
        if macro == "exists_one":
            self.charge(1)
            return accu + 1 if accu is not _ERR else _ERR
        value = item if macro == "filter" else self.eval(second if second is not None else first)
        self.charge(_LIST_COST + 1 + (_SELECT_COST if macro == "filter" else 0))
        if accu is _ERR or value is _ERR:
            return _ERR
        accu.append(value)
        self.made([None])
        return accu


_MISSING = object()


# ------------------------------------------------------------------ static types


#: The operators with several overloads by operand type: with both operands ``dyn``
#: cel-go's checker cannot choose one, the program keeps no overload id, and
#: ``costCall`` charges 1 (``==`` has one parametric overload: always by size).
_OVERLOADED = frozenset({"_+_", "_<_", "_<=_", "_>_", "_>=_", "@in"})
#: What the checker knows of a value: ``map`` is OCM's ``managedCluster`` (a
#: ``map(string, dyn)``), ``maps`` a list of such maps (``scores()``), ``dyns`` a list of
#: ``dyn``; anything else is a concrete type.
_DYN, _MAP, _MAPS, _DYNS, _TYPED = "dyn", "map", "maps", "dyns", "typed"


def open_overloads(tree: Node, variable: str) -> frozenset[int]:
    """The calls of ``tree`` whose operands are all ``dyn`` for cel-go's checker.

    OCM declares ``managedCluster`` as ``map(string, dyn)``: a field read from it, a
    ``parseJSON`` result, an element of such a list are ``dyn``; ``name + name`` on two
    of them then costs 1 in OCM, as the program does not know it adds strings.
    """
    found: set[int] = set()
    _static(tree, {variable: _MAP}, found)
    return frozenset(found)


def _static(node: Node, scope: dict[str, str], found: set[int]) -> str:
    kind = node[0]
    if kind == "ident":
        return scope.get(node[1], _TYPED)
    if kind in ("select", "has", "index"):
        inner = _static(node[1], scope, found)
        if kind == "index":
            _static(node[2], scope, found)
        if kind == "has":
            return _TYPED
        return {_MAP: _DYN, _DYN: _DYN, _MAPS: _MAP, _DYNS: _DYN}.get(inner, _TYPED)
    if kind == "fold":
        return _static_fold(node, scope, found)
    if kind == "call":
        return _static_call(node, scope, found)
    parts = [_static(child, scope, found) for child in children(node)]
    if kind == "list":
        return _DYNS if _DYN in parts else _TYPED
    if kind == "cond":
        return _DYN if _DYN in parts[1:] else _TYPED
    return _TYPED


def _static_call(node: Node, scope: dict[str, str], found: set[int]) -> str:
    _, name, target, arg_nodes = node
    types = [_static(a, scope, found) for a in ((target,) if target else ()) + arg_nodes]
    if name in _OVERLOADED and len(types) == 2 and set(types) <= {_DYN}:
        found.add(id(node))
    return {"scores": _MAPS, "parseJSON": _DYN, "dyn": _DYN}.get(name, _TYPED)


def _static_fold(node: Node, scope: dict[str, str], found: set[int]) -> str:
    _, macro, var, range_node, first, second = node
    source = _static(range_node, scope, found)
    inner = dict(scope)
    inner[var] = {_DYN: _DYN, _DYNS: _DYN, _MAPS: _MAP}.get(source, _TYPED)
    last = _static(first, inner, found)
    if second is not None:
        last = _static(second, inner, found)
    if macro == "map":
        return _DYNS if last == _DYN else _TYPED
    return source if macro == "filter" else _TYPED


_SIZE_COSTED = frozenset(
    {"startsWith", "endsWith", "@in", "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_+_"}
    | {"matches", "contains"}
)
_RESULT_COSTED = frozenset({"scores", "parseJSON"})


def call_cost(name: str, args: list[Any]) -> int:
    """cel-go's ``costCall`` for the overloads it charges by size; 1 for the others."""
    if name not in _SIZE_COSTED:
        return 1
    if name in ("_==_", "_!=_") and len(args) == 2:
        a, b = args
        return _traversal(min(size(a), size(b)))
    if name in ("startsWith", "endsWith") and args:
        return _traversal(size(args[0]))
    if name == "@in" and len(args) == 2 and isinstance(args[1], list):
        return size(args[1])
    if name in ("_==_", "_!=_") or (
        name in ("_<_", "_<=_", "_>_", "_>=_") and all(isinstance(a, str | bytes) for a in args)
    ):
        return _traversal(min(size(args[0]), size(args[1]))) if len(args) == 2 else 1
    if name == "_+_" and len(args) == 2 and all(isinstance(a, str | bytes) for a in args):
        return _traversal(size(args[0]) + size(args[1]))
    if name == "matches" and len(args) == 2:
        return _traversal(1 + size(args[0])) * math.ceil(size(args[1]) * _REGEX_FACTOR)
    if name == "contains" and len(args) == 2:
        return _traversal(size(args[0])) * _traversal(size(args[1]))
    return 1


def _traversal(length: int) -> int:
    return math.ceil(length * _STRING_FACTOR)


def _result_cost(name: str, args: list[Any], result: Any) -> int:
    # sdk-go pkg/cel/library/cost.go
    if name == "scores":
        return _LIST_COST + size(result) * (_SELECT_COST + _MAP_COST)
    return _traversal(size(args[0])) + _structure_cost(result) if args else _MAP_COST


def _structure_cost(value: Any) -> int:
    if isinstance(value, dict):
        return _MAP_COST + sum(_structure_cost(v) for v in value.values())
    if isinstance(value, list):
        return _LIST_COST + sum(_structure_cost(v) for v in value)
    return 0  # common.ConstCost


def _small(value: Any, budget: int) -> bool:
    """Whether ``value`` holds at most ``budget`` characters and items, all levels counted."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in _SIZED:
            budget -= len(item)
            if budget < 0:
                return False
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
    return True


def _hashable(value: object) -> bool:
    return not isinstance(value, list | dict)


# ------------------------------------------------------------------ operators


def _number(value: object) -> bool:
    return type(value) in (int, float)


def _equal(a: Any, b: Any) -> bool:
    if type(a) is type(b) and type(a) in (str, int, float):
        return bool(a == b)
    if type(a) is bool or type(b) is bool:
        return type(a) is type(b) and a == b
    if _number(a) and _number(b):
        return bool(a == b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    return bool(a == b)


def _order(a: Any, b: Any) -> int:
    if not ((_number(a) and _number(b)) or (type(a) is type(b) and type(a) in _ORDERED)):
        raise TypeError("no such overload")
    return int(a > b) - int(a < b)


def _int(value: int) -> int:
    if not _INT64[0] <= value <= _INT64[1]:
        raise ArithmeticError("integer overflow")
    return value


def _add(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return _int(a + b)
    if (_number(a) and _number(b) and float in (type(a), type(b))) or (
        type(a) is type(b) and type(a) in (str, bytes, list)
    ):
        return a + b
    raise TypeError("no such overload")


def _arith(op: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    def apply(a: Any, b: Any) -> Any:
        if type(a) is int and type(b) is int:
            return _int(op(a, b))
        if type(a) is float and type(b) is float:
            return op(a, b)
        raise TypeError("no such overload")

    return apply


def _divide(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return _int(_truncated(a, b))  # b == 0 raises ZeroDivisionError
    return _arith(lambda x, y: x / y)(a, b)


def _truncated(a: int, b: int) -> int:
    quotient = abs(a) // abs(b)
    return quotient if (a < 0) == (b < 0) else -quotient


def _modulo(a: Any, b: Any) -> Any:
    if type(a) is int and type(b) is int:
        return _int(a - b * _truncated(a, b))
    raise TypeError("no such overload")


def _contained(item: Any, container: Any) -> bool:
    if isinstance(container, list):
        return any(_equal(item, x) for x in container)
    if isinstance(container, dict):
        return _hashable(item) and item in container
    raise TypeError("no such overload")


def _size(value: Any) -> int:
    if isinstance(value, str | bytes | list | dict):
        return len(value)
    raise TypeError("no such overload")


def _strings(test: Callable[[str, str], bool]) -> Callable[[Any, Any], bool]:
    def apply(a: Any, b: Any) -> bool:
        if type(a) is not str or type(b) is not str:
            raise TypeError("no such overload")
        return test(a, b)

    return apply


def _not(value: Any) -> bool:
    if type(value) is not bool:
        raise TypeError("no such overload")
    return not value


def _negate(value: Any) -> Any:
    if not _number(value):
        raise TypeError("no such overload")
    return _int(-value) if type(value) is int else -value


_OPERATORS: dict[str, Callable[..., Any]] = {
    "_==_": _equal,
    "_!=_": lambda a, b: not _equal(a, b),
    "_<_": lambda a, b: _order(a, b) < 0,
    "_<=_": lambda a, b: _order(a, b) <= 0,
    "_>_": lambda a, b: _order(a, b) > 0,
    "_>=_": lambda a, b: _order(a, b) >= 0,
    "_+_": _add,
    "_-_": _arith(lambda a, b: a - b),
    "_*_": _arith(lambda a, b: a * b),
    "_/_": _divide,
    "_%_": _modulo,
    "!_": _not,
    "-_": _negate,
    "@in": _contained,
    "size": _size,
    "contains": _strings(lambda a, b: b in a),
    "startsWith": _strings(str.startswith),
    "endsWith": _strings(str.endswith),
    "matches": _strings(cel_regex.matches),
    "dyn": lambda value: value,
}


_DELEGATED: dict[tuple[str, bool, int], Any] = {}


def _delegate(name: str, member: bool, args: list[Any]) -> Any:
    """A standard function the meter does not model (conversions, time): the interpreter's."""
    key = (name, member, len(args))
    program = _DELEGATED.get(key)
    if program is None:
        names = [f"a{i}" for i in range(len(args))]
        call = (
            f"{names[0]}.{name}({', '.join(names[1:])})"
            if member
            else f"{name}({', '.join(names)})"
        )
        program = _DELEGATED[key] = cel.compile(call)
    return program.execute({f"a{i}": a for i, a in enumerate(args)})


_STEPS: dict[str, Callable[[_Meter, Node], Any]] = {
    "lit": _Meter.lit,
    "ident": _Meter.ident,
    "select": _Meter.select,
    "has": _Meter.has,
    "index": _Meter.index,
    "list": _Meter.make_list,
    "map": _Meter.make_map,
    "and": _Meter.logic,
    "or": _Meter.logic,
    "cond": _Meter.cond,
    "call": _Meter.call,
    "fold": _Meter.fold,
}
