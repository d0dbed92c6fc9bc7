"""The CEL functions OCM's environment has and the interpreter lacks: strings, lists, regex.

OCM's environment (sdk-go ``pkg/cel/common/values.go``: ``BaseEnvOpts``) enables cel-go's
``ext.Strings()`` and the Kubernetes libraries ``Lists``, ``Regex``, ``URLs``,
``Quantity``, ``IP``, ``CIDR``, ``Format`` and ``Semver`` (``k8s.io/apiserver/pkg/cel/
library``), plus sdk-go's ``parseJSON``. This module has the string, list and regex
functions (the object types are in :mod:`dsf_compile.placement.cel_values`). Each follows
the Go one it is named after; a failure raises :class:`CelFunctionError`, which CEL turns
into an evaluation error (absorbed by ``||``/``&&`` where CEL absorbs errors).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

from dsf_compile.placement import cel_regex


class CelFunctionError(Exception):
    """A library function's error (an evaluation error in CEL)."""


#: What the library cannot evaluate: names OCM's environment declares (``format``
#: named formats, ``strings.quote``, ``format()`` on strings, optional types).
UNSUPPORTED_FUNCTIONS = frozenset({"format", "quote", "orValue", "hasValue", "value", "or"})
UNSUPPORTED_VARIABLES = frozenset({"format", "strings", "optional"})
#: The most items ``findAll`` and ``split`` return (bounded like every loop here).
MAX_ITEMS = 100_000
#: The longest string ``replace`` and ``join`` build (an expression is untrusted).
MAX_CHARS = 1_000_000
#: CEL's int: a 64-bit signed integer.
INT64_RANGE = (-(2**63), 2**63 - 1)


def regex_error(pattern: str) -> str | None:
    """Go's error compiling ``pattern`` (RE2 syntax, as cel-go and Kubernetes use), or None."""
    return cel_regex.regex_error(pattern)


def string_arg(value: object) -> str:
    if not isinstance(value, str):
        raise CelFunctionError("no such overload")
    return value


def int_arg(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CelFunctionError("no such overload")
    return value


# ------------------------------------------------------------ ext.Strings


def _char_at(text: object, index: object) -> str:
    s, i = string_arg(text), int_arg(index)
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    return s[i : i + 1]


def _index_of(receiver: object, target: object, offset: object = 0) -> int:
    if isinstance(receiver, list):
        # k8s Lists: the first index of an equal element, or -1
        return next((i for i, item in enumerate(receiver) if item == target), -1)
    s, sub, start = string_arg(receiver), string_arg(target), int_arg(offset)
    if start < 0 or start > len(s):
        raise CelFunctionError(f"index out of range: {start}")
    return s.find(sub, start)


def _last_index_of(receiver: object, target: object, offset: object = None) -> int:
    if isinstance(receiver, list):
        return next((i for i in reversed(range(len(receiver))) if receiver[i] == target), -1)
    s, sub = string_arg(receiver), string_arg(target)
    end = len(s) if offset is None else int_arg(offset)
    if end < 0 or end > len(s):
        raise CelFunctionError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))


def _ascii(convert: Callable[[str], str]) -> Callable[[object], str]:
    def apply(text: object) -> str:
        return "".join(convert(c) if c.isascii() else c for c in string_arg(text))

    return apply


def _replace(text: object, old: object, new: object, count: object = -1) -> str:
    s, a, b, n = string_arg(text), string_arg(old), string_arg(new), int_arg(count)
    found = len(s) + 1 if a == "" else s.count(a)  # "" is found around every character
    _bounded(len(s) + (found if n < 0 else min(found, n)) * (len(b) - len(a)))
    return s.replace(a, b, n if n >= 0 else -1)


def _bounded(length: int) -> None:
    """Refuse a string of ``length`` characters past :data:`MAX_CHARS`, before building it."""
    if length > MAX_CHARS:
        raise CelFunctionError(f"a string of more than {MAX_CHARS} characters")


def _split(text: object, separator: object, count: object = -1) -> list[str]:
    # Go's strings.SplitN: n == 0 gives nothing, n < 0 everything, "" splits characters
    s, sep, n = string_arg(text), string_arg(separator), int_arg(count)
    if n == 0:
        return []
    if sep == "":
        parts = list(s) if n < 0 or n >= len(s) else [*s[: n - 1], s[n - 1 :]]
    else:
        parts = s.split(sep) if n < 0 else s.split(sep, n - 1)
    if len(parts) > MAX_ITEMS:
        raise CelFunctionError(f"split: more than {MAX_ITEMS} parts")
    return parts


def _substring(text: object, start: object, end: object = None) -> str:
    s, i = string_arg(text), int_arg(start)
    j = len(s) if end is None else int_arg(end)
    if i < 0 or i > len(s) or j < 0 or j > len(s) or i > j:
        raise CelFunctionError(f"index out of range: {i}, {j}")
    return s[i:j]


def _trim(text: object) -> str:
    return string_arg(text).strip()


def _join(items: object, separator: object = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise CelFunctionError("no such overload")
    sep = string_arg(separator)
    _bounded(sum(map(len, items)) + len(sep) * max(0, len(items) - 1))
    return sep.join(items)


def _reverse(text: object) -> str:
    return string_arg(text)[::-1]


# ------------------------------------------------------------ k8s Lists, Regex


def _number_list(items: object) -> list[Any]:
    if not isinstance(items, list):
        raise CelFunctionError("no such overload")
    return items


def _is_sorted(items: object) -> bool:
    values = _number_list(items)
    try:
        return all(a <= b for a, b in itertools.pairwise(values))
    except TypeError:
        raise CelFunctionError("no such overload") from None


def _sum(items: object) -> object:
    values = _number_list(items)
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        raise CelFunctionError("no such overload")
    total = sum(values)
    if isinstance(total, int) and not INT64_RANGE[0] <= total <= INT64_RANGE[1]:
        raise CelFunctionError("integer overflow")
    return total


def _extreme(pick: Callable[..., Any], name: str) -> Callable[[object], object]:
    def apply(items: object) -> object:
        values = _number_list(items)
        if not values:
            raise CelFunctionError(f"{name} called on empty list")
        try:
            return pick(values)
        except TypeError:
            raise CelFunctionError("no such overload") from None

    return apply


def _regex(pattern: object) -> str:
    if not isinstance(pattern, str):
        raise CelFunctionError("no such overload")
    return pattern


def _find(text: object, pattern: object) -> str:
    try:
        return cel_regex.find(string_arg(text), _regex(pattern))
    except cel_regex.RegexError as err:
        raise CelFunctionError(f"Illegal regex: {err}") from None


def _find_all(text: object, pattern: object, limit: object = -1) -> list[str]:
    try:
        return cel_regex.find_all(string_arg(text), _regex(pattern), int_arg(limit), MAX_ITEMS)
    except cel_regex.RegexError as err:
        raise CelFunctionError(f"Illegal regex: {err}") from None


def matches(text: object, pattern: object) -> bool:
    """cel-go's ``matches`` on RE2 (the interpreter's own engine is not RE2)."""
    try:
        return cel_regex.matches(string_arg(text), _regex(pattern))
    except cel_regex.RegexError as err:
        raise CelFunctionError(str(err)) from None


#: The string, list and regex functions, by name (a member call passes the receiver
#: first).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    # ext.Strings
    "charAt": _char_at,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    "lowerAscii": _ascii(str.lower),
    "upperAscii": _ascii(str.upper),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": _trim,
    "join": _join,
    "reverse": _reverse,
    # Lists
    "isSorted": _is_sorted,
    "sum": _sum,
    "min": _extreme(min, "min"),
    "max": _extreme(max, "max"),
    # Regex
    "find": _find,
    "findAll": _find_all,
}
