"""The one parser of the times a user types: an RFC 3339 time, or a duration back from now.

Every time is RFC 3339 with its zone, read by :func:`dsf_contract.fields.parse_time` (the
reader the inputs and the hub's objects share). Two named variants: :func:`parse_moment`,
RFC 3339 only (``--at``), and :func:`window_bound`, RFC 3339 or a duration back from now
(``backtest --from``/``--to``: ``7d``, ``36h``), in seconds since the epoch. ``--step`` is a
:func:`duration_seconds`.
"""

from __future__ import annotations

import re
from datetime import datetime

from dsf_compile.errors import UsageError

_DURATION = re.compile(r"^(?:[0-9]{1,9}(?:ms|s|m|h|d|w))+$")
_PART = re.compile(r"([0-9]+)(ms|s|m|h|d|w)")
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
#: 9999-12-31T23:59:59Z: the last second RFC 3339 (and every report) can write.
LAST_SECOND = 253_402_300_799


def is_duration(text: str) -> bool:
    """Whether ``text`` is a duration like ``30s``, ``5m``, ``1h30m`` or ``7d``."""
    return bool(_DURATION.match(text))


def duration_seconds(text: str) -> float:
    """``5m``, ``1h30m``, ``7d`` → seconds; UsageError otherwise."""
    if not is_duration(text):
        raise UsageError(f"{text!r} is not a duration like 30s, 5m, 1h or 7d")
    return sum(int(n) * _UNITS[unit] for n, unit in _PART.findall(text))


def parse_moment(text: str) -> datetime:
    """An RFC 3339 time with its zone, in UTC (ValueError saying what is wrong)."""
    from dsf_contract.fields import parse_time  # not on the no-op path: it imports pydantic

    return parse_time(text)


def window_bound(text: str, now: datetime) -> int:
    """A ``--from``/``--to``: RFC 3339, or a duration back from ``now``; seconds since the
    epoch, from 1970 to 9999 (a usage error otherwise)."""
    if is_duration(text):
        found = int(now.timestamp() - duration_seconds(text))
    else:
        try:
            found = int(parse_moment(text).timestamp())
        except (ValueError, OverflowError) as err:
            raise UsageError(f"{text!r}: {err}") from None
    if not 0 <= found <= LAST_SECOND:
        raise UsageError(f"{text!r}: a time between 1970 and 9999 is expected")
    return found
