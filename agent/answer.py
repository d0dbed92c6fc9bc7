"""A Prometheus answer checked and forwarded as JSON text, never built as Python objects.

Decoded, a 20 MB ``query_range`` answer is millions of small lists and strings: 10 to 15
times its size in memory, only to be encoded again for the Scoring API. The agent does not
look at the points, so the answer is read one series at a time — each series is parsed
(which checks its syntax and shape) and dropped — and only the position of the
``data.result`` list is kept. The request to the Scoring API is then built from those
bytes. A cycle holds the answer about twice (its bytes, then the request), not fifteen
times.
"""

from __future__ import annotations

import gc
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent.errors import FetchError, Reason
from dsf_contract.failures import RequestFailure

_SPACE = re.compile(r"[ \t\n\r]*")
#: A member's key as the scanner reads it when it holds no escape (its text is then the
#: key), and the colon after it: one match instead of four steps for most keys.
_KEY = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
#: What follows an entry: spaces, then a comma and spaces (group 1) or not.
_AFTER = re.compile(r"[ \t\n\r]*(,[ \t\n\r]*)?")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# The C scanner of the standard library parses one value at a given position; NaN and
# Infinity, which JSON does not have, are refused (they would be forwarded as is).
_scan: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder(
    parse_constant=_no_constant
).scan_once  # type: ignore[attr-defined]  # public since Python 2, untyped in typeshed


class Malformed(Exception):
    """The answer is not JSON, or not shaped as a Prometheus API response."""


@dataclass(frozen=True)
class SeriesBlock:
    """The series of one answer as JSON text: ``data.result``'s items, comma-separated,
    without the brackets (``raw[start:end]``)."""

    raw: bytes | bytearray
    start: int
    end: int
    count: int

    @property
    def empty(self) -> bool:
        """Whether the answer held no series."""
        return self.count == 0


def scoring_request(blocks: list[SeriesBlock]) -> bytes:
    """The ``/scoring`` body ``{"data": [...]}`` holding every series of ``blocks``, in order.

    ``blocks`` is emptied: the answers are not held beside the request while it is sent.
    """
    parts: list[Any] = [b'{"data":[']
    for block in blocks:
        if block.empty:
            continue
        if len(parts) > 1:
            parts.append(b",")
        parts.append(memoryview(block.raw)[block.start : block.end])
    parts.append(b"]}")
    blocks.clear()
    body = b"".join(parts)
    parts.clear()
    return body


def series_block(body: bytes | bytearray) -> SeriesBlock:
    """Check a Prometheus API answer and locate its ``data.result`` series, or
    :class:`FetchError`.

    Everything is checked as JSON; the envelope must be ``status: success`` with a
    ``data.result`` list whose items are objects with a ``metric`` map and a ``values``
    list. The points are not looked at.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as err:
        raise FetchError(
            "not a Prometheus API response", reason=RequestFailure.INVALID_RESPONSE
        ) from err
    found = _Found()
    collecting = gc.isenabled()
    gc.disable()  # see _walk_answer
    try:
        _walk_answer(text, found)
    except (Malformed, StopIteration, ValueError, IndexError, RecursionError) as err:
        raise FetchError(
            "not a Prometheus API response", reason=RequestFailure.INVALID_RESPONSE
        ) from err
    finally:
        if collecting:
            gc.enable()
    if found.status is None:
        raise FetchError("not a Prometheus API response", reason=RequestFailure.INVALID_RESPONSE)
    if found.status != "success":
        error = str(found.error)[:200]
        raise FetchError(
            f"Prometheus answered status {found.status!r}: {error}", reason=Reason.QUERY_ERROR
        )
    if found.result is None:
        raise FetchError(
            "Prometheus answer has no data.result list", reason=RequestFailure.INVALID_RESPONSE
        )
    if found.malformed_series:
        raise FetchError(
            "Prometheus answer holds a malformed series", reason=RequestFailure.INVALID_RESPONSE
        )
    start, stop, count = found.result
    if text.isascii():  # offsets in the text are offsets in the bytes
        return SeriesBlock(raw=body, start=start, end=stop, count=count)
    raw = text[start:stop].encode()
    return SeriesBlock(raw=raw, start=0, end=len(raw), count=count)


def _walk_answer(text: str, found: _Found) -> None:
    """Walk the whole answer into ``found``, with the cyclic garbage collector paused (by
    the caller).

    Each series is built as Python lists and strings, then dropped: a big answer makes
    millions of objects, freed by their reference counts, none in a cycle. Left running,
    the collector would start dozens of passes over every object of the process while a
    series is alive (a fifth of a big answer's CPU), and find nothing to free.
    """
    end = walk_object(text, skip_space(text, 0), found.top)
    if skip_space(text, end) != len(text):
        raise Malformed


class _Found:
    """What the walk over an answer saw."""

    def __init__(self) -> None:
        self.status: Any = None
        self.error: Any = ""
        self.result: tuple[int, int, int] | None = None
        self.malformed_series = False

    def top(self, text: str, key: str, at: int) -> int:
        if key == "data" and text.startswith("{", at):
            self.result = None
            return walk_object(text, at, self.data)
        value, end = _scan(text, at)
        if key == "status":
            self.status = value
        elif key == "error":
            self.error = value
        elif key == "data":
            self.result = None
        return int(end)

    def data(self, text: str, key: str, at: int) -> int:
        if key != "result":
            return int(_scan(text, at)[1])
        if not text.startswith("[", at):
            self.result = None
            return int(_scan(text, at)[1])
        return self._result(text, at)

    def _result(self, text: str, at: int) -> int:
        first = skip_space(text, at + 1)
        count = 0
        malformed = False
        last = first

        def series(index: int) -> int:
            nonlocal count, malformed, last
            value, last = _scan(text, index)
            count += 1
            if (
                not isinstance(value, dict)
                or not isinstance(value.get("metric"), dict)
                or not isinstance(value.get("values"), list)
            ):
                malformed = True
            return int(last)

        end = walk_array(text, at, series)
        self.result = (first, last, count)
        self.malformed_series = malformed
        return end


def skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    assert match is not None  # the pattern matches the empty string
    return match.end()


def walk_object(text: str, at: int, member: Callable[[str, str, int], int]) -> int:
    """Walk the object at ``text[at]``, calling ``member(text, key, value_start)`` for each
    member (it returns where the value ends); returns where the object ends."""

    def pair(index: int) -> int:
        simple = _KEY.match(text, index)
        if simple is not None:
            return member(text, simple.group(1), simple.end())
        if not text.startswith('"', index):
            raise Malformed
        key, index = _scan(text, index)
        index = skip_space(text, index)
        if not text.startswith(":", index):
            raise Malformed
        return member(text, key, skip_space(text, index + 1))

    return _walk(text, at, "{", "}", pair)


def walk_array(text: str, at: int, item: Callable[[int], int]) -> int:
    """Walk the array at ``text[at]``, calling ``item(value_start)`` for each item (it
    returns where the item ends); returns where the array ends."""
    return _walk(text, at, "[", "]", item)


def _walk(text: str, at: int, opening: str, closing: str, each: Callable[[int], int]) -> int:
    """The comma-separated entries between ``opening`` at ``text[at]`` and ``closing``."""
    if not text.startswith(opening, at):
        raise Malformed
    index = skip_space(text, at + 1)
    if text.startswith(closing, index):
        return index + 1
    while True:
        after = _AFTER.match(text, each(index))
        assert after is not None  # the pattern matches the empty string
        index = after.end()
        if after.lastindex is None:  # no comma: the closing must follow
            if text.startswith(closing, index):
                return index + 1
            raise Malformed
