"""A CEL expression's worst case, bounded before it runs, as cel-go's checker estimates it.

cel-go estimates an expression's cost from its tree before evaluating it
(``checker/cost.go``): each step costs what ``interpreter/runtimecost.go`` charges it at
run time, a call charged by the size of its operands is charged for the largest sizes
they can have, ``&&``/``||`` both sides, ``?:`` the dearer branch, a comprehension its
loop once per element of the largest range. What it needs are the largest sizes of the
inputs; on one cluster they are known: nothing read from ``managedCluster`` is larger
than the object's largest string, list or map (:func:`largest`), and
``managedCluster.scores('name')`` has as many items as that object.

:func:`cost_bound` gives that worst case: at most what cel-go's meter would count, and at
most what the evaluation builds (:data:`.cel_cost.MAX_UNITS` bounds it). Within OCM's
limit, the interpreter runs the expression as it is, unmetered; past it, only the values
can tell (a list ``split`` builds, a loop that stops at its first match), and
:mod:`.cel_cost` meters that run. A function whose result's size is not in
:data:`RESULTS` has no bound: where its size is charged, the run is metered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from dsf_compile.placement.cel_cost_model import (
    LIST_COST,
    MAP_COST,
    RESULT_COSTED,
    SELECT_COST,
    SIZED,
    call_cost_bound,
    result_cost_bound,
)
from dsf_compile.placement.cel_library import MAX_CHARS, MAX_ITEMS
from dsf_compile.placement.cel_syntax import Node
from dsf_contract.records import frozen

#: What stands for "no bound": far past any limit, and small enough to add and multiply.
UNBOUNDED = 10**15


class Size(NamedTuple):
    """Upper bounds on a value's size (cel-go's ``actualSize``: 1 for a scalar or an
    error) and on the size of every value inside it."""

    top: int
    inner: int

    @classmethod
    def of(cls, top: int, inner: int) -> Size:
        top = min(max(1, top), UNBOUNDED)
        return cls(top, min(max(top, inner), UNBOUNDED))

    def item(self) -> Size:
        """An element, value or key of a value of this size."""
        return Size(self.inner, self.inner)


SCALAR = Size(1, 1)
UNKNOWN = Size(UNBOUNDED, UNBOUNDED)


@frozen
class Bound:
    """The most an evaluation costs (cel-go's units) and builds (characters and items)."""

    cost: int
    units: int


ScoreLookup = Callable[[str, str], Sequence[Mapping[str, object]] | None]


def cost_bound(
    tree: Node,
    variable: str,
    cluster: Mapping[str, Any] | None,
    scores: ScoreLookup | None,
    open_calls: frozenset[int] = frozenset(),
) -> Bound:
    """The worst case of ``tree`` on ``cluster`` (``variable``), its scores ``scores``;
    ``open_calls`` the calls charged 1 whatever their operands (their overload is open).

    Without a cluster, the worst case on any cluster: every size the cluster decides is
    unbounded, and the bound grows with each size, so it holds for them all.
    """
    walker = _Walker(variable, cluster, scores, open_calls)
    whole = UNKNOWN if cluster is None else Size.of(len(cluster), largest(cluster))
    cost, units, _ = walker.walk(tree, {variable: whole, _CLUSTER_MARK: whole})
    return Bound(min(cost, UNBOUNDED), min(units, UNBOUNDED))


def largest(value: object) -> int:
    """The size of the largest string, list or map in ``value`` (a map's keys counted), 1
    at least."""
    found, stack = 1, [value]
    while stack:
        item = stack.pop()
        if type(item) in SIZED:
            found = max(found, len(item))  # type: ignore[arg-type]
        if isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


# What the walk gives for a node: (cost, units, size of the value).
_Walked = tuple[int, int, Size]
_Scope = dict[str, Size]


class _Walker:
    def __init__(
        self,
        variable: str,
        cluster: Mapping[str, Any] | None,
        scores: ScoreLookup | None,
        open_calls: frozenset[int],
    ) -> None:
        self.variable = variable
        self.cluster = cluster
        self.scores = scores
        self.open_calls = open_calls

    def walk(self, node: Node, scope: _Scope) -> _Walked:
        return _STEPS[node[0]](self, node, scope)

    def lit(self, node: Node, scope: _Scope) -> _Walked:
        value = node[1]
        return 0, 0, Size(len(value), len(value)) if type(value) in SIZED else SCALAR

    def ident(self, node: Node, scope: _Scope) -> _Walked:
        return SELECT_COST, 0, scope.get(node[1], SCALAR)  # an unknown name: an error

    def select(self, node: Node, scope: _Scope) -> _Walked:
        # a qualifier costs 1, and 1 more on a computed value (a new attribute)
        operand = node[1]
        cost, units, size = self.walk(operand, scope)
        cost += SELECT_COST if operand[0] in ("ident", "select", "index") else 2 * SELECT_COST
        if node[0] == "has":
            return cost, units, SCALAR
        if node[0] == "index":
            key_cost, key_units, _ = self.walk(node[2], scope)
            cost, units = cost + key_cost, units + key_units
        return cost, units, size.item()

    def make_list(self, node: Node, scope: _Scope) -> _Walked:
        cost, units, sizes = self.walk_all(node[1], scope)
        inner = max((s.inner for s in sizes), default=1)
        count = len(node[1])
        return cost + LIST_COST, units + count, Size.of(count, inner)

    def make_map(self, node: Node, scope: _Scope) -> _Walked:
        parts = [part for pair in node[1] for part in pair]
        cost, units, sizes = self.walk_all(parts, scope)
        inner = max((s.inner for s in sizes), default=1)
        count = len(node[1])
        return cost + MAP_COST, units + count, Size.of(count, inner)

    def logic(self, node: Node, scope: _Scope) -> _Walked:
        cost, units, _ = self.walk_all(node[1:], scope)
        return cost, units, SCALAR

    def cond(self, node: Node, scope: _Scope) -> _Walked:
        cost, units, _ = self.walk(node[1], scope)
        yes, no = self.walk(node[2], scope), self.walk(node[3], scope)
        size = Size.of(max(yes[2].top, no[2].top), max(yes[2].inner, no[2].inner))
        return cost + max(yes[0], no[0]), units + max(yes[1], no[1]), size

    def walk_all(self, nodes: Sequence[Node], scope: _Scope) -> tuple[int, int, list[Size]]:
        cost = units = 0
        sizes = []
        for node in nodes:
            node_cost, node_units, size = self.walk(node, scope)
            cost, units = cost + node_cost, units + node_units
            sizes.append(size)
        return cost, units, sizes

    def call(self, node: Node, scope: _Scope) -> _Walked:
        _, name, target, arg_nodes = node
        operands = ((target,) if target is not None else ()) + tuple(arg_nodes)
        cost, units, sizes = self.walk_all(operands, scope)
        tops = [s.top for s in sizes]
        if name == "scores":
            result = self.scores_size(operands, scope)
        else:
            result = RESULTS.get(name, _unknown)(sizes)
        if id(node) in self.open_calls:
            cost += 1
        elif name in RESULT_COSTED:
            cost += result_cost_bound(name, tops, result.top)
        else:
            cost += call_cost_bound(name, tops)
        return cost, units + result.top, result

    def scores_size(self, operands: Sequence[Node], scope: _Scope) -> Size:
        """sdk-go's ``scores``: the items of the cluster's score of that name, when the
        receiver is the cluster itself and the name is written out."""
        if self.cluster is None or self.scores is None:
            return UNKNOWN
        if len(operands) != 2 or operands[0] != ("ident", self.variable):
            return UNKNOWN
        if scope.get(self.variable) is not scope.get(_CLUSTER_MARK) or operands[1][0] != "lit":
            return UNKNOWN  # the name bound by a comprehension, or a computed score name
        metadata = self.cluster.get("metadata")
        cluster_name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(cluster_name, str) or not isinstance(operands[1][1], str):
            return SCALAR  # the call fails: an error
        found = self.scores(cluster_name, operands[1][1])
        if found is None:
            return SCALAR
        items = [dict(item) for item in found]
        return Size.of(len(items), largest(items))

    def fold(self, node: Node, scope: _Scope) -> _Walked:
        _, macro, var, range_node, first, second = node
        cost, units, source = self.walk(range_node, scope)
        inner = {**scope, var: source.item()}
        step_cost, step_units, value = self.walk(first, inner)
        if second is not None:
            more = self.walk(second, inner)
            step_cost, step_units, value = step_cost + more[0], step_units + more[1], more[2]
        # per element: the loop condition, the step reading the accumulator, and what it adds
        step_cost += SELECT_COST + _STEP_COSTS[macro]
        if macro in ("map", "filter"):
            cost += LIST_COST  # the accumulator's empty list
            step_units += 1
        cost += source.top * step_cost + SELECT_COST + (1 if macro == "exists_one" else 0)
        units += source.top * step_units
        if macro == "map":
            return cost, units, Size.of(source.top, value.inner)
        if macro == "filter":
            return cost, units, Size.of(source.top, source.inner)
        return cost, units, SCALAR


#: What a comprehension's element costs beyond its expressions and the accumulator's
#: read: the loop condition (``all`` 2, ``exists`` 3), the count (``exists_one``), the
#: list literal and the ``+`` of the element (``map``, ``filter``, which also reads it).
_STEP_COSTS = {"all": 2, "exists": 3, "exists_one": 1, "map": LIST_COST + 1}
_STEP_COSTS["filter"] = LIST_COST + 1 + SELECT_COST

#: The scope's entry that marks which size is the cluster's own (a comprehension may
#: bind the same name to something else).
_CLUSTER_MARK = "@cluster"

_STEPS: dict[str, Callable[[_Walker, Node, _Scope], _Walked]] = {
    "lit": _Walker.lit,
    "ident": _Walker.ident,
    "select": _Walker.select,
    "has": _Walker.select,
    "index": _Walker.select,
    "list": _Walker.make_list,
    "map": _Walker.make_map,
    "and": _Walker.logic,
    "or": _Walker.logic,
    "cond": _Walker.cond,
    "call": _Walker.call,
    "fold": _Walker.fold,
}


# ------------------------------------------------------------------ results' sizes


def _unknown(sizes: Sequence[Size]) -> Size:
    return UNKNOWN


def _scalar(sizes: Sequence[Size]) -> Size:
    return SCALAR


def _as_receiver(sizes: Sequence[Size]) -> Size:
    """At most as large as the receiver (a part of it, or it changed in place)."""
    return sizes[0] if sizes else UNKNOWN


def _item(sizes: Sequence[Size]) -> Size:
    return sizes[0].item() if sizes else UNKNOWN


def _concat(sizes: Sequence[Size]) -> Size:
    if len(sizes) != 2:
        return SCALAR
    top = sizes[0].top + sizes[1].top
    return Size.of(top, max(sizes[0].inner, sizes[1].inner))


def _parts(sizes: Sequence[Size]) -> Size:
    """``split``, ``findAll``: pieces of the receiver, at most one more than its length."""
    text = sizes[0].top if sizes else UNBOUNDED
    return Size.of(min(MAX_ITEMS, text + 1), text)


def _replace(sizes: Sequence[Size]) -> Size:
    if len(sizes) < 3:
        return SCALAR
    text, new = sizes[0].top, sizes[2].top
    chars = min(MAX_CHARS, text + (text + 1) * new)  # longer: the function's error
    return Size.of(chars, chars)


def _join(sizes: Sequence[Size]) -> Size:
    if not sizes:
        return SCALAR
    separator = sizes[1].top if len(sizes) > 1 else 0
    chars = min(MAX_CHARS, sizes[0].top * (sizes[0].inner + separator))
    return Size.of(chars, chars)


def _string(sizes: Sequence[Size]) -> Size:
    """``string()``: the text given, or a number's or a time's (a double written out in
    full is some 330 characters)."""
    top = max(sizes[0].top, _NUMBER_TEXT) if sizes else UNBOUNDED
    return Size.of(top, top)


def _bytes(sizes: Sequence[Size]) -> Size:
    """``bytes()``: a string's UTF-8, up to 4 bytes a character."""
    top = 4 * sizes[0].top if sizes else UNBOUNDED
    return Size.of(top, top)


_NUMBER_TEXT = 1024


def _tagged_text(sizes: Sequence[Size]) -> Size:
    """An object type that keeps its text as given (``url``, ``semver``)."""
    return Size.of(1, sizes[0].top) if sizes else UNKNOWN


def _tagged(sizes: Sequence[Size]) -> Size:
    """An object type whose canonical text may be longer than what it was made from."""
    return Size(1, UNBOUNDED)


#: The calls whose result is a scalar (a bool, a number, a time, one character).
_SCALARS = (
    "_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "!_", "-_", "_-_", "_*_", "_/_", "_%_",
    "@in", "size", "int", "uint", "double", "bool", "type", "timestamp", "duration", "matches",
    "contains", "startsWith", "endsWith", "getFullYear", "getMonth", "getDate",
    "getDayOfMonth", "getDayOfWeek", "getDayOfYear", "getHours", "getMinutes", "getSeconds",
    "getMilliseconds", "charAt", "indexOf", "lastIndexOf", "isSorted", "sum", "isQuantity",
    "sign", "isInteger", "asInteger", "asApproximateFloat", "isGreaterThan", "isLessThan",
    "compareTo", "isSemver", "major", "minor", "patch", "isIP", "family", "isUnspecified",
    "isLoopback", "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast", "isCIDR",
    "containsIP", "containsCIDR", "prefixLength", "isURL",
)  # fmt: skip

#: How large a call's result can be, from its operands' sizes (a member call's receiver
#: first), for every function whose result is bounded; the others' results have no bound.
RESULTS: dict[str, Callable[[Sequence[Size]], Size]] = {
    **dict.fromkeys(_SCALARS, _scalar),
    "_+_": _concat,
    "dyn": _as_receiver,
    "string": _string,
    "bytes": _bytes,
    # ext.Strings, Lists, Regex
    **dict.fromkeys(("lowerAscii", "upperAscii", "reverse", "trim", "substring"), _as_receiver),
    "find": _as_receiver,
    "replace": _replace,
    "split": _parts,
    "findAll": _parts,
    "join": _join,
    "min": _item,
    "max": _item,
    # the object types and their parts; sdk-go's JSON: nothing longer than its text
    **dict.fromkeys(("quantity", "add", "sub", "ip", "cidr", "masked"), _tagged),
    "url": _tagged_text,
    "semver": _tagged_text,
    **dict.fromkeys(
        ("getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery"), _item
    ),
    "parseJSON": _as_receiver,
}
