"""cel-go's cost model: what each step of a CEL evaluation costs, as OCM's limit counts it.

The tables of ``interpreter/runtimecost.go`` (an attribute or field 1, a list literal
10, a map literal 30), cel-go's ``costCall`` for the overloads it charges by the size of
their operands, sdk-go's charges for ``scores`` and ``parseJSON`` by what they return
(``pkg/cel/library/cost.go``), and which calls cel-go's checker leaves without an
overload (then they cost 1). :mod:`.cel_bound` bounds an expression's cost with these
before it runs, from the largest sizes its values can have; :mod:`.cel_cost` charges them
on the values, when the bound does not settle it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from dsf_compile.placement.cel_syntax import Node, children
from dsf_contract.records import frozen

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

_Cost = Callable[[Sequence[int]], int]


def _traversal(length: int) -> int:
    return math.ceil(length * STRING_FACTOR)


def _always(args: Sequence[Any]) -> bool:
    return True


def _strings(args: Sequence[Any]) -> bool:
    return all(isinstance(a, str | bytes) for a in args)


@frozen
class _BySize:
    """An overload cel-go charges by the size of its operands."""

    #: The charge, from the operands' sizes (a member call's receiver first).
    cost: _Cost
    #: Whether the call with these operands is that overload (else it costs 1).
    applies: Callable[[Sequence[Any]], bool] = _always
    #: The operands it takes (None: any number, at least one); another count costs 1.
    arity: int | None = 2


def _shorter(sizes: Sequence[int]) -> int:
    return _traversal(min(sizes[0], sizes[1]))


#: cel-go's ``costCall`` for the overloads it charges by size (every other call costs 1).
#: Each charge grows with the sizes, so the largest sizes bound it.
_SIZE_COSTS: dict[str, _BySize] = {
    "_==_": _BySize(_shorter),
    "_!=_": _BySize(_shorter),
    "_<_": _BySize(_shorter, _strings),
    "_<=_": _BySize(_shorter, _strings),
    "_>_": _BySize(_shorter, _strings),
    "_>=_": _BySize(_shorter, _strings),
    "_+_": _BySize(lambda s: _traversal(s[0] + s[1]), _strings),
    "@in": _BySize(lambda s: s[1], lambda args: isinstance(args[1], list)),
    "startsWith": _BySize(lambda s: _traversal(s[0]), arity=None),
    "endsWith": _BySize(lambda s: _traversal(s[0]), arity=None),
    "matches": _BySize(lambda s: _traversal(1 + s[0]) * math.ceil(s[1] * REGEX_FACTOR)),
    "contains": _BySize(lambda s: _traversal(s[0]) * _traversal(s[1])),
}


def _by_size(name: str, count: int) -> _BySize | None:
    found = _SIZE_COSTS.get(name)
    if found is None or count == 0 or found.arity not in (None, count):
        return None
    return found


def call_cost(name: str, args: list[Any]) -> int:
    """cel-go's ``costCall`` for the overloads it charges by size; 1 for the others."""
    found = _by_size(name, len(args))
    if found is None or not found.applies(args):
        return 1
    return found.cost([size(a) for a in args])


def call_cost_bound(name: str, sizes: Sequence[int]) -> int:
    """The most :func:`call_cost` charges when each operand's size is at most ``sizes``."""
    found = _by_size(name, len(sizes))
    return 1 if found is None else max(1, found.cost(sizes))


def result_cost(name: str, args: list[Any], result: Any) -> int:
    """What a call of :data:`RESULT_COSTED` costs for what it returned (sdk-go ``cost.go``)."""
    if name == "scores":
        return LIST_COST + size(result) * (SELECT_COST + MAP_COST)
    return _traversal(size(args[0])) + _structure_cost(result) if args else MAP_COST


def result_cost_bound(name: str, sizes: Sequence[int], result: int) -> int:
    """The most :func:`result_cost` charges when the operands' sizes are at most ``sizes``
    and the result's at most ``result``."""
    if name == "scores":
        return LIST_COST + max(1, result) * (SELECT_COST + MAP_COST)
    if not sizes:
        return MAP_COST
    # every map or list parsed from JSON takes two characters of its text at least
    return _traversal(sizes[0]) + MAP_COST * (sizes[0] // 2)


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
