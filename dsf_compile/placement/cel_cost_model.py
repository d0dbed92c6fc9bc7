"""cel-go's cost model: what each step of a CEL evaluation costs, as OCM's limit counts it.

The tables of ``interpreter/runtimecost.go`` (an attribute or field 1, a list literal
10, a map literal 30), cel-go's ``costCall`` for the overloads it charges by the size of
their operands, sdk-go's charges for ``scores`` and ``parseJSON`` by what they return
(``pkg/cel/library/cost.go``), and which calls cel-go's checker leaves without an
overload (then they cost 1). :mod:`.cel_cost` walks an expression and charges these.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from dsf_compile.placement.cel_syntax import Node, children

STRING_FACTOR = 0.1  # common.StringTraversalCostFactor
REGEX_FACTOR = 0.25  # common.RegexStringLengthCostFactor
#: What a list literal, a map literal and an attribute or field read cost.
LIST_COST, MAP_COST, SELECT_COST = 10, 30, 1
#: The types whose values have a size (cel-go's ``actualSize``); the others count 1.
SIZED = frozenset({str, bytes, list, dict})
#: The calls charged by what they return (sdk-go), after they ran.
RESULT_COSTED = frozenset({"scores", "parseJSON"})


def size(value: Any) -> int:
    """cel-go's ``actualSize``: the length of a string, bytes, list or map, else 1."""
    return len(value) if type(value) in SIZED else 1


# ------------------------------------------------------------------ calls by size

_Cost = Callable[[list[Any]], int]


def _traversal(length: int) -> int:
    return math.ceil(length * STRING_FACTOR)


def _binary(cost: Callable[[Any, Any], int]) -> _Cost:
    """``cost`` of the two operands; 1 for a call of another arity."""
    return lambda args: cost(*args) if len(args) == 2 else 1


def _strings_only(cost: _Cost) -> _Cost:
    """``cost`` when every operand is a string or bytes; 1 for the other overloads."""
    return lambda args: cost(args) if all(isinstance(a, str | bytes) for a in args) else 1


def _prefix(args: list[Any]) -> int:
    return _traversal(size(args[0])) if args else 1


_shorter = _binary(lambda a, b: _traversal(min(size(a), size(b))))

#: cel-go's ``costCall`` for the overloads it charges by size (every other call costs 1).
_SIZE_COSTS: dict[str, _Cost] = {
    "_==_": _shorter,
    "_!=_": _shorter,
    "_<_": _strings_only(_shorter),
    "_<=_": _strings_only(_shorter),
    "_>_": _strings_only(_shorter),
    "_>=_": _strings_only(_shorter),
    "_+_": _strings_only(_binary(lambda a, b: _traversal(size(a) + size(b)))),
    "@in": _binary(lambda item, within: size(within) if isinstance(within, list) else 1),
    "startsWith": _prefix,
    "endsWith": _prefix,
    "matches": _binary(
        lambda text, pattern: _traversal(1 + size(text)) * math.ceil(size(pattern) * REGEX_FACTOR)
    ),
    "contains": _binary(lambda text, part: _traversal(size(text)) * _traversal(size(part))),
}


def call_cost(name: str, args: list[Any]) -> int:
    """cel-go's ``costCall`` for the overloads it charges by size; 1 for the others."""
    cost = _SIZE_COSTS.get(name)
    return 1 if cost is None else cost(args)


def result_cost(name: str, args: list[Any], result: Any) -> int:
    """What a call of :data:`RESULT_COSTED` costs for what it returned (sdk-go ``cost.go``)."""
    if name == "scores":
        return LIST_COST + size(result) * (SELECT_COST + MAP_COST)
    return _traversal(size(args[0])) + _structure_cost(result) if args else MAP_COST


def _structure_cost(value: Any) -> int:
    if isinstance(value, dict):
        return MAP_COST + sum(_structure_cost(v) for v in value.values())
    if isinstance(value, list):
        return LIST_COST + sum(_structure_cost(v) for v in value)
    return 0  # common.ConstCost


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
