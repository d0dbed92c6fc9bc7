"""CEL's operators and standard functions as the cost meter applies them.

:mod:`.cel_cost` walks an expression on the cluster's values; each call it reaches is
applied here with CEL's semantics (heterogeneous equality, ordering within a type,
int64 overflow, truncated division), a standard function it does not model (the
conversions, time) by the interpreter itself (:func:`delegate`). A wrong operand type
raises ``TypeError`` (cel-go's ``no such overload``): the meter turns it into an error
value.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from dsf_compile.placement import cel_engine, cel_regex

_INT64 = (-(2**63), 2**63 - 1)
#: Types ordered within themselves (timestamps and durations come back from the
#: interpreter as datetime and timedelta).
_ORDERED = (str, bytes, bool, datetime, timedelta)


def hashable(value: object) -> bool:
    """Whether ``value`` can be a map key here (CEL's lists and maps cannot)."""
    return not isinstance(value, list | dict)


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
        return hashable(item) and item in container
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


#: The calls the meter applies itself, by the name cel-go gives the overload's function.
OPERATORS: dict[str, Callable[..., Any]] = {
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


def delegate(name: str, member: bool, args: list[Any]) -> Any:
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
        program = _DELEGATED[key] = cel_engine.engine.compile(call)
    return program.execute({f"a{i}": a for i, a in enumerate(args)})
