"""Text and JSON written by others: bounded parsing, credential redaction, printable messages.

A scorer's ``/config`` answer, its redirects and a lockfile edited by hand are untrusted.
Before such text reaches a message it goes through :func:`safe_message`: credentials in
URLs are replaced by ``***`` and characters a terminal would act on (escape sequences,
bidi overrides, lone surrogates) are shown escaped. Before such a document is kept, its
strings go through :func:`string_problem`. JSON from outside is parsed by
:func:`dsf_contract.bounded_json.load_json`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from dsf_contract.escaping import terminal

__all__ = [
    "first_string_problem",
    "has_credentials",
    "redact",
    "safe_message",
    "string_problem",
    "strings",
]

REDACTED = "***"

# Query parameters whose value is a secret: token=, access_token=, api_key=, password=, ...
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*(?:token|passw(?:or)?d|pwd|secret|api[-_]?key|access[-_]?key"
    r"|auth|credential|signature|sig)[A-Za-z0-9_.-]*"
)
# The value ends at the next parameter, or before a ':' that ends the URL in "GET URL: ...".
_SECRET_PARAM = re.compile(rf"(?i)([?&;]{_SECRET_NAME}=)([^&;#\s'\")]*?)(?=:?(?:[\s&;#'\")]|$))")
# user:password@ after a scheme, or at the start of a bare host ("user:pw@host:9090").
_SCHEME_USERINFO = re.compile(r"(?i)([a-z][a-z0-9+.-]*://)([^/?#\s@'\"]*@)")
_BARE_USERINFO = re.compile(r"(^|[\s'\"])([^/?#\s@:'\"(]+:[^/?#\s@'\"]*@)")
_CONTROL_OK = frozenset("\t\n\r")


def redact(text: str) -> str:
    """``text`` with the userinfo and secret query values of every URL in it replaced by ``***``."""
    text = _SCHEME_USERINFO.sub(rf"\1{REDACTED}@", text)
    text = _BARE_USERINFO.sub(rf"\1{REDACTED}@", text)
    return _SECRET_PARAM.sub(rf"\1{REDACTED}", text)


def has_secret_query(text: str) -> bool:
    """Whether ``text`` holds a query parameter whose value is a secret (``?token=…``)."""
    return _SECRET_PARAM.search(text) is not None


def has_credentials(text: str) -> bool:
    """Whether ``text`` holds a URL with ``user:password@`` or a secret query parameter."""
    if "@" not in text and "=" not in text:
        return False  # each pattern needs one of them; a /config has thousands of strings
    return redact(text) != text


def safe_message(text: str) -> str:
    """What may be printed or recorded of ``text``: redacted, and escaped to one printable line."""
    return terminal(redact(text))


def string_problem(value: str) -> str | None:
    """Why ``value`` (a string from outside) cannot be kept, or None.

    Refused: lone surrogates (they cannot be written as UTF-8), control characters other
    than tab and line breaks, and URLs carrying credentials.
    """
    # printable text holds neither surrogates nor control characters: skip the scan
    for ch in "" if value.isprintable() else value:
        if "\ud800" <= ch <= "\udfff":
            return f"is not valid Unicode (lone surrogate U+{ord(ch):04X})"
        if (ch < " " or "\x7f" <= ch <= "\x9f") and ch not in _CONTROL_OK:
            return f"holds the control character U+{ord(ch):04X}"
    if has_credentials(value):
        return "carries credentials (a user name or password, or a secret query parameter); refused"
    return None


def strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a JSON value (keys included) with its dotted path."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, child in value.items():
            where = f"{path}.{key}" if path else str(key)
            if isinstance(key, str):
                yield where, key
            yield from strings(child, where)
    elif isinstance(value, list | tuple):
        for index, child in enumerate(value):
            yield from strings(child, f"{path}[{index}]")


def first_string_problem(value: Any) -> str | None:
    """``FIELD: reason`` for the first string of a JSON value that cannot be kept, or None."""
    if not _holds_string_problem(value):
        return None  # the usual case: no string's path written out only to be dropped
    for where, text in strings(value):
        problem = string_problem(text)
        if problem is not None:
            return f"{where or '(document)'}: {problem}"
    return None


def _holds_string_problem(value: Any) -> bool:
    """Whether any string of a JSON value (keys included) cannot be kept: the strings
    :func:`strings` walks, without their paths."""
    if isinstance(value, str):
        return string_problem(value) is not None
    if isinstance(value, dict):
        return any(
            (isinstance(key, str) and string_problem(key) is not None)
            or _holds_string_problem(child)
            for key, child in value.items()
        )
    if isinstance(value, list | tuple):
        return any(_holds_string_problem(child) for child in value)
    return False
