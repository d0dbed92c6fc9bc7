"""Kubernetes resource quantities (``100m``, ``2Gi``, ``1.5``, ``1e3``), parsed exactly.

The grammar is apimachinery's ``resource.Quantity``::

    quantity  ::= sign? number suffix
    number    ::= digits | digits "." digits? | "." digits
    suffix    ::= "" | binarySI | decimalSI | ("e" | "E") sign? digits
    binarySI  ::= Ki | Mi | Gi | Ti | Pi | Ei
    decimalSI ::= n | u | m | k | M | G | T | P | E

The value is a :class:`fractions.Fraction`, so ``100m`` is exactly ``1/10``, ``1Gi`` is
exactly ``1024Mi`` and two quantities compare without rounding. A negative quantity
parses; callers that need a non-negative one check :attr:`Quantity.value` themselves.

Kubernetes documents that no quantity may exceed 2^63 − 1 in magnitude; a larger one
(``1e400``, ``10E``, ``8Ei``) is refused here, so no caller ever meets a value that overflows a
float64 or an int64 on the hub.
"""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator

from dsf_contract.records import frozen

_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?:(?P<binary>[KMGTPE]i)|[eE](?P<exponent>[+-]?[0-9]+)|(?P<decimal>[numkMGTPE]?))"
)
#: A quantity's exponent is bounded so that ``1e999999999`` cannot exhaust memory.
_MAX_EXPONENT = 1000
#: Digits of the number itself: Python refuses to convert longer ones (and would be slow).
_MAX_DIGITS = 100
#: apimachinery: "no quantity may represent a number greater than 2^63-1 in magnitude".
MAX_MAGNITUDE = 2**63 - 1


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity; the message says what one looks like."""


@frozen
class Quantity:
    """A parsed quantity: its exact value and the text it was written as."""

    value: Fraction
    text: str

    @property
    def negative(self) -> bool:
        """Whether the quantity is below zero (``-5Gi``)."""
        return self.value < 0


def parse_quantity(raw: str | int | float) -> Quantity:
    """Parse a quantity as YAML gives it: a string, or a bare integer or float.

    Raises :class:`QuantityError` for anything else (``lots``, ``2 Gi``, ``1.5.2``).
    """
    if isinstance(raw, bool):
        raise QuantityError(f"{raw!r} is not a quantity; {_EXPECTED}")
    text = repr(raw) if isinstance(raw, float) else str(raw)
    found = _QUANTITY_RE.fullmatch(text)
    if found is None:
        raise QuantityError(f"{text!r} is not a quantity; {_EXPECTED}")
    if len(found["number"]) > _MAX_DIGITS:
        raise QuantityError(f"{_shown(text)}: more than {_MAX_DIGITS} digits")
    value = Fraction(found["number"])
    if found["binary"]:
        value *= 1024 ** _BINARY[found["binary"]]
    else:
        if found["exponent"] is not None:
            exponent = int(found["exponent"])
            if abs(exponent) > _MAX_EXPONENT:
                raise QuantityError(f"{_shown(text)}: the exponent is out of range")
        else:
            exponent = _DECIMAL[found["decimal"]]
        value *= Fraction(10) ** exponent
    if abs(value) > MAX_MAGNITUDE:
        raise QuantityError(
            f"{_shown(text)} is out of range: a Kubernetes quantity is at most 2^63-1 "
            f"({MAX_MAGNITUDE}) in magnitude"
        )
    if found["sign"] == "-":
        value = -value
    return Quantity(value=value, text=text)


def _shown(text: str) -> str:
    return repr(text if len(text) <= 40 else text[:37] + "...")


def quantity_value(raw: str | int | float) -> Fraction:
    """The exact value of a quantity (see :func:`parse_quantity`)."""
    return parse_quantity(raw).value


_EXPECTED = (
    "expected a number with an optional suffix, like 100m, 1.5, 2Gi, 512Mi, 4k or 1e3 "
    "(suffixes: n u m k M G T P E, Ki Mi Gi Ti Pi Ei, or e/E and an exponent)"
)


def _as_text(raw: object) -> object:
    # YAML reads `cpu: 2` as an int and `cpu: 1.5` as a float; both are quantities.
    if isinstance(raw, float | int) and not isinstance(raw, bool):
        return repr(raw) if isinstance(raw, float) else str(raw)
    return raw


def _check_quantity(text: str) -> str:
    try:
        parse_quantity(text)
    except QuantityError as err:
        raise ValueError(str(err)) from None
    return text


#: A quantity field of a model: a string (bare YAML numbers are turned into one), checked
#: against the grammar and kept as written.
QuantityText = Annotated[str, BeforeValidator(_as_text), AfterValidator(_check_quantity)]
