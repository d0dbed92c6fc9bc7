"""CEL's regular expressions as OCM runs them: RE2 syntax and linear time, Go's results.

OCM's ``matches`` (cel-go) and ``find``/``findAll`` (``k8s.io/apiserver/pkg/cel/library``
regex.go) compile their pattern with Go's ``regexp``: RE2 syntax (``[[:alpha:]]``,
``\\pL``, at most 1000 repetitions; ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII; ``$``
is the end of the text, not a newline before it) and a matcher whose time is linear in
the text. Python's ``re`` has none of that (a backtracking ``(a+)+$`` runs for ever), so
patterns go to RE2 itself (``google-re2``), and the errors read as Go prints them.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # RE2 is loaded by the first pattern: most fleets' CEL has none
    import re2

#: Go's ``regexp/syntax`` error codes for RE2's (same grammar, other words).
_GO_CODES = {
    "invalid escape sequence": "invalid escape sequence",
    "invalid character class": "invalid character class",
    "invalid character class range": "invalid character class range",
    "missing ]": "missing closing ]",
    "missing )": "missing closing )",
    "unexpected )": "unexpected )",
    "trailing \\": "trailing backslash at end of expression",
    "no argument for repetition operator": "missing argument to repetition operator",
    "invalid repetition size": "invalid repeat count",
    "bad repetition operator": "invalid nested repetition operator",
    "invalid perl operator": "invalid or unsupported Perl syntax",
    "invalid UTF-8": "invalid UTF-8",
    "invalid named capture group": "invalid named capture",
    "pattern too large - compile failed": "expression too large",
}
#: ``\C`` (one byte): RE2 has it, Go's parser refuses it.
_BYTE_ESCAPE_RE = re.compile(r"(?<!\\)(?:\\\\)*\\C")
#: The most patterns kept compiled (one run sees few distinct ones).
_CACHED = 1024


class RegexError(ValueError):
    """A pattern Go's ``regexp`` does not compile; the text is Go's message."""


@functools.cache
def _options() -> re2.Options:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would print every bad pattern on stderr
    return options


@functools.lru_cache(maxsize=_CACHED)
def _compile(pattern: str) -> re2._Regexp:
    import re2

    if _BYTE_ESCAPE_RE.search(pattern):
        raise RegexError("error parsing regexp: invalid escape sequence: `\\C`")
    try:
        return re2.compile(pattern, _options())
    except re2.error as err:
        raise RegexError(_go_message(err)) from None
    except (UnicodeError, TypeError):
        raise RegexError("error parsing regexp: invalid UTF-8") from None


def _go_message(err: re2.error) -> str:
    raw = err.args[0] if err.args else b""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
    code, _, argument = text.partition(": ")
    if code == "trailing \\":
        argument = ""
    return f"error parsing regexp: {_GO_CODES.get(code, code)}: `{argument}`"


def regex_error(pattern: str) -> str | None:
    """Go's error compiling ``pattern``, or None when it compiles."""
    try:
        _compile(pattern)
    except RegexError as err:
        return str(err)
    return None


def matches(text: str, pattern: str) -> bool:
    """cel-go's ``matches``: the pattern occurs anywhere in the text (RegexError if bad)."""
    return _search(_compile(pattern), text, 0) is not None


def find(text: str, pattern: str) -> str:
    """k8s ``find``: Go's ``FindString``, the leftmost-first match or ``""``."""
    found = _search(_compile(pattern), text, 0)
    return text[found[0] : found[1]] if found else ""


def find_all(text: str, pattern: str, limit: int, cap: int) -> list[str]:
    """k8s ``findAll``: Go's ``FindAllString`` (at most ``limit`` when >= 0, and ``cap``).

    Go skips an empty match right after the previous match (Python's ``finditer`` keeps
    it), and steps one character past an empty match.
    """
    compiled = _compile(pattern)
    out: list[str] = []
    pos, previous_end = 0, -1
    while pos <= len(text) and len(out) < cap and (limit < 0 or len(out) < limit):
        found = _search(compiled, text, pos)
        if found is None:
            break
        start, end = found
        accept = not (start == end == previous_end)
        pos = end + 1 if end == start else end
        previous_end = end
        if accept:
            out.append(text[start:end])
    return out


def _search(compiled: re2._Regexp, text: str, pos: int) -> tuple[int, int] | None:
    try:
        found = compiled.search(text, pos)
    except UnicodeError:  # a lone surrogate: not a string Go could hold
        raise RegexError("invalid UTF-8 in the string") from None
    return found.span() if found is not None else None
