"""The CEL functions OCM's environment has and the interpreter lacks.

OCM's environment (sdk-go ``pkg/cel/common/values.go``: ``BaseEnvOpts``) enables cel-go's
``ext.Strings()`` and the Kubernetes libraries ``Lists``, ``Regex``, ``URLs``,
``Quantity``, ``IP``, ``CIDR``, ``Format`` and ``Semver`` (``k8s.io/apiserver/pkg/cel/
library``), plus sdk-go's ``parseJSON``. Each function here follows the Go one it is
named after; a failure raises :class:`CelFunctionError`, which CEL turns into an
evaluation error (absorbed by ``||``/``&&`` where CEL absorbs errors).

Quantities, semantic versions, IPs, CIDRs and URLs are CEL object types in Go. Here they
are one-key maps (``{"@quantity": "3/2"}``) whose key names the type and whose value is
canonical, so that ``==`` compares values as Go's ``Equal`` does, and ``<`` on them is
an error, as in Go.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any
from urllib.parse import urlsplit

import cel

from dsf_compile.inputs.quantity import QuantityError, quantity_value


class CelFunctionError(Exception):
    """A library function's error (an evaluation error in CEL)."""


#: What the library cannot evaluate: names OCM's environment declares (``format``
#: named formats, ``strings.quote``, ``format()`` on strings, optional types).
UNSUPPORTED_FUNCTIONS = frozenset({"format", "quote", "orValue", "hasValue", "value", "or"})
UNSUPPORTED_VARIABLES = frozenset({"format", "strings", "optional"})
#: The most items ``findAll`` and ``split`` return (bounded like every loop here).
_MAX_ITEMS = 100_000
#: The longest string ``replace`` and ``join`` build (an expression is untrusted).
_MAX_CHARS = 1_000_000
_INT64 = (-(2**63), 2**63 - 1)
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


def regex_error(pattern: str) -> str | None:
    """Why ``pattern`` is not an RE2 regex (the engine CEL's ``matches`` uses), or None."""
    try:
        cel.evaluate("''.matches(p)", {"p": pattern})
    except Exception as err:  # the interpreter's message names the problem
        message = " ".join(str(err).split())
        message = message.removeprefix("Function 'matches' error: ")
        return message.split(". Check function arguments")[0][:300]
    return None


def _compiled(pattern: object) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise CelFunctionError("no such overload")
    problem = regex_error(pattern)
    if problem is not None:
        raise CelFunctionError(problem)
    try:
        return re.compile(pattern)
    except re.error as err:
        raise CelFunctionError(str(err)) from None


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise CelFunctionError("no such overload")
    return value


def _int(value: object) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise CelFunctionError("no such overload")
    return value


# ------------------------------------------------------------ ext.Strings


def _char_at(text: object, index: object) -> str:
    s, i = _str(text), _int(index)
    if i < 0 or i > len(s):
        raise CelFunctionError(f"index out of range: {i}")
    return s[i : i + 1]


def _index_of(receiver: object, target: object, offset: object = 0) -> int:
    if isinstance(receiver, list):
        # k8s Lists: the first index of an equal element, or -1
        return next((i for i, item in enumerate(receiver) if item == target), -1)
    s, sub, start = _str(receiver), _str(target), _int(offset)
    if start < 0 or start > len(s):
        raise CelFunctionError(f"index out of range: {start}")
    return s.find(sub, start)


def _last_index_of(receiver: object, target: object, offset: object = None) -> int:
    if isinstance(receiver, list):
        return next((i for i in reversed(range(len(receiver))) if receiver[i] == target), -1)
    s, sub = _str(receiver), _str(target)
    end = len(s) if offset is None else _int(offset)
    if end < 0 or end > len(s):
        raise CelFunctionError(f"index out of range: {end}")
    return s.rfind(sub, 0, end + len(sub))


def _ascii(convert: Callable[[str], str]) -> Callable[[object], str]:
    def apply(text: object) -> str:
        return "".join(convert(c) if c.isascii() else c for c in _str(text))

    return apply


def _replace(text: object, old: object, new: object, count: object = -1) -> str:
    n = _int(count)
    return _bounded(_str(text).replace(_str(old), _str(new), n if n >= 0 else -1))


def _bounded(text: str) -> str:
    if len(text) > _MAX_CHARS:
        raise CelFunctionError(f"a string of more than {_MAX_CHARS} characters")
    return text


def _split(text: object, separator: object, count: object = -1) -> list[str]:
    # Go's strings.SplitN: n == 0 gives nothing, n < 0 everything, "" splits characters
    s, sep, n = _str(text), _str(separator), _int(count)
    if n == 0:
        return []
    if sep == "":
        parts = list(s) if n < 0 or n >= len(s) else [*s[: n - 1], s[n - 1 :]]
    else:
        parts = s.split(sep) if n < 0 else s.split(sep, n - 1)
    if len(parts) > _MAX_ITEMS:
        raise CelFunctionError(f"split: more than {_MAX_ITEMS} parts")
    return parts


def _substring(text: object, start: object, end: object = None) -> str:
    s, i = _str(text), _int(start)
    j = len(s) if end is None else _int(end)
    if i < 0 or i > len(s) or j < 0 or j > len(s) or i > j:
        raise CelFunctionError(f"index out of range: {i}, {j}")
    return s[i:j]


def _trim(text: object) -> str:
    return _str(text).strip()


def _join(items: object, separator: object = "") -> str:
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise CelFunctionError("no such overload")
    return _bounded(_str(separator).join(items))


def _reverse(text: object) -> str:
    return _str(text)[::-1]


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
    if isinstance(total, int) and not _INT64[0] <= total <= _INT64[1]:
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


def _find(text: object, pattern: object) -> str:
    found = _compiled(pattern).search(_str(text))
    return found.group(0) if found else ""


def _find_all(text: object, pattern: object, limit: object = -1) -> list[str]:
    n = _int(limit)
    out: list[str] = []
    for found in _compiled(pattern).finditer(_str(text)):
        if 0 <= n <= len(out) or len(out) >= _MAX_ITEMS:
            break
        out.append(found.group(0))
    return out


# ------------------------------------------------------------ typed values

_QUANTITY, _SEMVER, _IP, _CIDR, _URL = "@quantity", "@semver", "@ip", "@cidr", "@url"


def _tagged(value: object, tag: str) -> str:
    if not isinstance(value, dict) or set(value) != {tag}:
        raise CelFunctionError("no such overload")
    return str(value[tag])


def _kind(value: object) -> str:
    if isinstance(value, dict) and len(value) == 1:
        (tag,) = value
        if tag in (_QUANTITY, _SEMVER, _IP, _CIDR, _URL):
            return str(tag)
    raise CelFunctionError("no such overload")


def _quantity(text: object) -> dict[str, str]:
    try:
        value = quantity_value(_str(text))
    except QuantityError as err:
        raise CelFunctionError(f"quantities must match the regular expression: {err}") from None
    return {_QUANTITY: str(value)}


def _q(value: object) -> Fraction:
    return Fraction(_tagged(value, _QUANTITY))


def _is_quantity(text: object) -> bool:
    try:
        _quantity(text)
    except CelFunctionError:
        return False
    return True


def _q_other(value: object) -> Fraction:
    return Fraction(_int(value)) if isinstance(value, int) else _q(value)


def _semver(text: object) -> dict[str, str]:
    s = _str(text)
    if not _SEMVER_RE.fullmatch(s):
        raise CelFunctionError(f"could not parse {s!r} as a semantic version")
    return {_SEMVER: s}


def _is_semver(text: object) -> bool:
    return isinstance(text, str) and _SEMVER_RE.fullmatch(text) is not None


def _semver_key(value: object) -> tuple[Any, ...]:
    found = _SEMVER_RE.fullmatch(_tagged(value, _SEMVER))
    assert found is not None  # built by _semver
    core = (int(found[1]), int(found[2]), int(found[3]))
    if found[4] is None:
        return (*core, 1, ())  # a release ranks above its pre-releases
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in found[4].split("."))
    return (*core, 0, parts)


def _semver_part(index: int) -> Callable[[object], int]:
    def apply(value: object) -> int:
        return int(_semver_key(value)[index])

    return apply


def _compare(a: object, b: object) -> int:
    kind = _kind(a)
    if kind == _QUANTITY:
        x, y = _q(a), _q(b)
        return (x > y) - (x < y)
    if kind == _SEMVER:
        p, q = _semver_key(a), _semver_key(b)
        return (p > q) - (p < q)
    raise CelFunctionError("no such overload")


def _ip(value: object) -> dict[str, str]:
    if isinstance(value, dict):  # cidr.ip()
        return {_IP: str(ipaddress.ip_interface(_tagged(value, _CIDR)).ip)}
    text = _str(value)
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise CelFunctionError(f"IP Address {text!r} parse error") from None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        raise CelFunctionError(f"IPv4-mapped IPv6 address {text!r} is not allowed")
    return {_IP: str(address)}


def _address(value: object) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(value, str):
        value = _ip(value)
    return ipaddress.ip_address(_tagged(value, _IP))


def _cidr(value: object) -> dict[str, str]:
    text = _str(value)
    try:
        interface = ipaddress.ip_interface(text)
    except ValueError:
        raise CelFunctionError(
            f"network address parse error during conversion from string: {text!r}"
        ) from None
    if "/" not in text:
        raise CelFunctionError(
            f"network address parse error during conversion from string: {text!r}"
        )
    return {_CIDR: str(interface)}


def _network(value: object) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    if isinstance(value, str):
        value = _cidr(value)
    return ipaddress.ip_interface(_tagged(value, _CIDR)).network


def _valid(parse: Callable[[object], object]) -> Callable[[object], bool]:
    def apply(value: object) -> bool:
        try:
            parse(value)
        except CelFunctionError:
            return False
        return True

    return apply


def _url(value: object) -> dict[str, str]:
    text = _str(value)
    parts = urlsplit(text)
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment
    if not (parts.scheme or text.startswith("/")) or "#" in text:
        raise CelFunctionError(f"URL parse error during conversion from string: {text}")
    return {_URL: text}


def _url_part(part: str) -> Callable[[object], object]:
    def apply(value: object) -> object:
        parts = urlsplit(_tagged(value, _URL))
        if part == "host":
            return parts.netloc.rpartition("@")[2]
        if part == "hostname":
            return parts.hostname or ""
        if part == "port":
            return str(parts.port) if parts.port is not None else ""
        if part == "path":
            return parts.path
        if part == "scheme":
            return parts.scheme
        query: dict[str, list[str]] = {}
        for pair in parts.query.split("&") if parts.query else ():
            key, _, val = pair.partition("=")
            query.setdefault(key, []).append(val)
        return query

    return apply


def _parse_json(text: object) -> object:
    try:
        # Go's encoding/json decodes every number as float64
        return json.loads(_str(text), parse_int=float, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:
        raise CelFunctionError(f"failed to parse json: {err}") from None


def _no_constant(name: str) -> object:
    raise ValueError(f"invalid character {name!r}")


def _add(a: object, b: object) -> dict[str, str]:
    return {_QUANTITY: str(_q(a) + _q_other(b))}


def _sub(a: object, b: object) -> dict[str, str]:
    return {_QUANTITY: str(_q(a) - _q_other(b))}


def _as_integer(value: object) -> int:
    q = _q(value)
    if q.denominator != 1 or not _INT64[0] <= q <= _INT64[1]:
        raise CelFunctionError("cannot convert value to integer")
    return int(q)


def _family(value: object) -> int:
    return _address(value).version if _kind(value) == _IP else _network(value).version


#: Name → function, as registered with the interpreter (a member call passes the
#: receiver first).
LIBRARY: dict[str, Callable[..., Any]] = {
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
    # Quantity
    "quantity": _quantity,
    "isQuantity": _is_quantity,
    "sign": lambda q: (_q(q) > 0) - (_q(q) < 0),
    "isInteger": lambda q: _q(q).denominator == 1 and _INT64[0] <= _q(q) <= _INT64[1],
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: float(_q(q)),
    "add": _add,
    "sub": _sub,
    # Quantity and Semver
    "isGreaterThan": lambda a, b: _compare(a, b) > 0,
    "isLessThan": lambda a, b: _compare(a, b) < 0,
    "compareTo": _compare,
    # Semver
    "semver": _semver,
    "isSemver": _is_semver,
    "major": _semver_part(0),
    "minor": _semver_part(1),
    "patch": _semver_part(2),
    # IP and CIDR
    "ip": _ip,
    "isIP": _valid(_ip),
    "family": _family,
    "isUnspecified": lambda a: _address(a).is_unspecified,
    "isLoopback": lambda a: _address(a).is_loopback,
    "isLinkLocalMulticast": lambda a: _address(a).is_multicast and _address(a).is_link_local,
    "isLinkLocalUnicast": lambda a: _address(a).is_link_local and not _address(a).is_multicast,
    "isGlobalUnicast": lambda a: _is_global_unicast(_address(a)),
    "cidr": _cidr,
    "isCIDR": _valid(_cidr),
    "containsIP": lambda c, a: _address(a) in _network(c),
    "containsCIDR": lambda c, d: (
        _network(d).subnet_of(_network(c))  # type: ignore[arg-type]
        if _network(d).version == _network(c).version
        else False
    ),
    "masked": lambda c: {_CIDR: str(_network(c))},
    "prefixLength": lambda c: _network(c).prefixlen,
    # URLs
    "url": _url,
    "isURL": _valid(_url),
    "getScheme": _url_part("scheme"),
    "getHost": _url_part("host"),
    "getHostname": _url_part("hostname"),
    "getPort": _url_part("port"),
    "getEscapedPath": _url_part("path"),
    "getQuery": _url_part("query"),
    # sdk-go JsonLib
    "parseJSON": _parse_json,
}


def _is_global_unicast(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    # Go's netip.Addr.IsGlobalUnicast: not unspecified, loopback, multicast, link-local
    # or the IPv4 broadcast address
    if address.is_unspecified or address.is_loopback or address.is_multicast:
        return False
    if address.is_link_local:
        return False
    return not (address.version == 4 and str(address) == "255.255.255.255")
