"""Kubernetes CEL object types OCM's environment has: Quantity, Semver, IP, CIDR, URL.

Each function follows the Go one it is named after (``k8s.io/apiserver/pkg/cel/library``:
quantity.go, semver.go, ip.go, cidr.go, urls.go), and ``parseJSON`` sdk-go's
``pkg/cel/library/json.go``. The types are CEL object types in Go; here they are one-key
maps (``{"@quantity": "3/2"}``) whose key names the type and whose value is canonical,
so that ``==`` compares values as Go's ``Equal`` does, and ``<`` on them is an error, as
in Go.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any
from urllib.parse import urlsplit

from dsf_compile.inputs.quantity import QuantityError, quantity_value
from dsf_compile.placement.cel_library import INT64_RANGE, CelFunctionError, int_arg, string_arg

#: A semantic version as blang/semver parses it: no leading "v", no leading zeros.
_SEMVER_RE = re.compile(
    r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
    r"(?:-((?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)(?:\.(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*))*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?"
)


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
        value = quantity_value(string_arg(text))
    except QuantityError as err:
        raise CelFunctionError(f"quantities must match the regular expression: {err}") from None
    return {_QUANTITY: str(value)}


def _q(value: object) -> Fraction:
    return Fraction(_tagged(value, _QUANTITY))


def _q_other(value: object) -> Fraction:
    return Fraction(int_arg(value)) if isinstance(value, int) else _q(value)


def _semver(text: object) -> dict[str, str]:
    s = string_arg(text)
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
    text = string_arg(value)
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
    text = string_arg(value)
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
    text = string_arg(value)
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
        return json.loads(string_arg(text), parse_int=float, parse_constant=_no_constant)
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
    if q.denominator != 1 or not INT64_RANGE[0] <= q <= INT64_RANGE[1]:
        raise CelFunctionError("cannot convert value to integer")
    return int(q)


def _family(value: object) -> int:
    return _address(value).version if _kind(value) == _IP else _network(value).version


#: The object types' functions, by name (a member call passes the receiver first).
FUNCTIONS: dict[str, Callable[..., Any]] = {
    # Quantity
    "quantity": _quantity,
    "isQuantity": _valid(_quantity),
    "sign": lambda q: (_q(q) > 0) - (_q(q) < 0),
    "isInteger": lambda q: _q(q).denominator == 1 and INT64_RANGE[0] <= _q(q) <= INT64_RANGE[1],
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
