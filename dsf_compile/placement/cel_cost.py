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

The interpreter has no such meter. Most expressions need none: their worst case is
bounded before they run (:mod:`.cel_bound`). For the others — what only the values
decide — :func:`metered_cost` walks the expression's tree (:mod:`.cel_syntax`) on the
cluster's values, charging as cel-go does (the charges are :mod:`.cel_cost_model`'s, the
operators :mod:`.cel_operators`'), and stops at the limit; only an expression that stays
within it is handed to the interpreter. Charges
follow the runtime types of the values (cel-go charges by the overload its checker chose;
on OCM's ``dyn`` cluster fields that is the same overload). What the meter builds is
bounded too (:data:`MAX_UNITS`), so a cheap-looking step cannot exhaust memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import field
from typing import Any

from dsf_compile.placement import cel_regex
from dsf_compile.placement.cel_cost_model import (
    LIST_COST,
    MAP_COST,
    RESULT_COSTED,
    SELECT_COST,
    SIZED,
    call_cost,
    result_cost,
)
from dsf_compile.placement.cel_library import CelFunctionError
from dsf_compile.placement.cel_operators import OPERATORS, delegate, hashable
from dsf_compile.placement.cel_syntax import Node
from dsf_contract.records import frozen

#: ``k8s.io/apiserver/pkg/apis/cel.PerCallLimit``: OCM's cost limit for one expression.
PER_CALL_LIMIT = 1_000_000
#: ``RuntimeCELCostBudget``: OCM's budget for all expressions of a selector on one cluster.
RUNTIME_BUDGET = 10_000_000
#: cel-go's error when the limit is passed (``interpreter.EvalCancelledError``).
LIMIT_MESSAGE = "operation cancelled: actual cost limit exceeded"
#: The most characters and list items one evaluation may build (cel-go charges 1 for
#: ``replace`` or a list ``+``, so its cost alone does not bound memory).
MAX_UNITS = 20_000_000
#: The largest value of a constant part kept for the next cluster (the compiled expression
#: is cached for the process: what it keeps must stay small).
_KEPT_UNITS = 100_000


class CostLimitExceeded(Exception):
    """The evaluation passed OCM's cost limit."""


class TooLarge(Exception):
    """The evaluation builds more than :data:`MAX_UNITS`."""


class _Err:
    """A CEL error value (absorbed by ``&&``/``||`` where CEL absorbs errors)."""

    __slots__ = ()


_ERR = _Err()


@frozen
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
        if type(value) in SIZED:
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
        self.charge(SELECT_COST)
        return self.scope.get(node[1], _ERR)

    def qualified(self, operand: Node) -> Any:
        # an attribute costs 1 and each qualifier 1; a qualifier on a computed value
        # starts a new attribute
        value = self.eval(operand)
        self.charge(1 if operand[0] in ("ident", "select", "index") else 1 + SELECT_COST)
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
            return value.get(key, _ERR) if hashable(key) else _ERR
        if isinstance(value, list) and type(key) is int and 0 <= key < len(value):
            return value[key]
        return _ERR

    def make_list(self, node: Node) -> Any:
        items = [self.eval(item) for item in node[1]]
        self.charge(LIST_COST)
        return next((i for i in items if i is _ERR), None) or self.made(items)

    def make_map(self, node: Node) -> Any:
        pairs = [(self.eval(k), self.eval(v)) for k, v in node[1]]
        self.charge(MAP_COST)
        if any(k is _ERR or v is _ERR or not hashable(k) for k, v in pairs):
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
        elif name not in RESULT_COSTED:
            self.charge(call_cost(name, args))  # charged first: bounds what it builds
        if _ERR in args:
            return _ERR
        result = self.apply(name, target is not None, args)
        if name in RESULT_COSTED:
            self.charge(result_cost(name, args, result))
        return self.made(result)

    def apply(self, name: str, member: bool, args: list[Any]) -> Any:
        try:
            builtin = OPERATORS.get(name)
            if builtin is not None:
                return builtin(*args)
            function = self.functions.get(name)
            if function is not None:
                return function(*args)
            return delegate(name, member, args)
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
            self.charge(LIST_COST)  # the accumulator's empty list literal
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
        self.charge(SELECT_COST)  # the result reads the accumulator
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
        self.charge(SELECT_COST)  # the step reads the accumulator
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
        self.charge(LIST_COST + 1 + (SELECT_COST if macro == "filter" else 0))
        if accu is _ERR or value is _ERR:
            return _ERR
        accu.append(value)
        self.made([None])
        return accu


_MISSING = object()


def _small(value: Any, budget: int) -> bool:
    """Whether ``value`` holds at most ``budget`` characters and items, all levels counted."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) in SIZED:
            budget -= len(item)
            if budget < 0:
                return False
            if isinstance(item, list):
                stack.extend(item)
            elif isinstance(item, dict):
                stack.extend(item.values())
    return True


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
