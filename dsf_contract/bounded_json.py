"""JSON from outside, parsed with bounds: nesting and number sizes checked first.

A scorer's ``/config`` and Scoring API answers, a lockfile edited by hand and the agent's
configuration are untrusted: a 100,000-deep array or a 6,000-digit number must give a
``ValueError`` naming the reason, never a ``RecursionError`` or a long conversion.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Deepest nesting accepted in JSON from outside (a /config or a lockfile is about 6 deep).
MAX_JSON_DEPTH = 64
#: Longest number literal accepted (Python refuses to convert integers above 4,300 digits).
MAX_NUMBER_CHARS = 100

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def load_json(data: bytes | bytearray | str, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse JSON from outside; raise ``ValueError`` with a short reason when it is not acceptable.

    Nesting deeper than ``max_depth`` and number literals longer than
    :data:`MAX_NUMBER_CHARS` are refused before Python's parser sees them (it recurses per
    level and converts integers of any length); ``NaN`` and ``Infinity`` are refused too.
    """
    text = data.decode(json.detect_encoding(data)) if not isinstance(data, str) else data
    depth = nesting_depth(text, max_depth)
    if depth > max_depth:
        raise ValueError(f"nested deeper than {max_depth} levels")
    return json.loads(
        text, parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
    )


def nesting_depth(text: str, limit: int) -> int:
    """The bracket nesting of JSON ``text`` outside strings; stops counting past ``limit``."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub('""', text)):
        if match.group() in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    break
        else:
            depth -= 1
    return deepest


def _parse_int(literal: str) -> int:
    if len(literal) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(literal)} digits")
    return int(literal)


def _parse_float(literal: str) -> float:
    if len(literal) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(literal)} characters")
    value = float(literal)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {literal} is out of range")
    return value


def _parse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")
