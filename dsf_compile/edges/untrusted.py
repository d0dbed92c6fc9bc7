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
from typing import Any

from dsf_contract.escaping import terminal

__all__ = [
    "first_string_problem",
    "has_credentials",
    "redact",
    "safe_message",
    "string_problem",
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


def first_string_problem(value: Any) -> str | None:
    """``FIELD: reason`` for the first string of a JSON value that cannot be kept, or None."""
    found = _first_problem(value)
    if found is None:
        return None
    where, problem = found
    return f"{where or '(document)'}: {problem}"


def _first_problem(value: Any) -> tuple[str, str] | None:
    """(dotted path, reason) of the first string, keys included, that cannot be kept.

    The path is written on the way back, for that string only: the usual value holds none,
    and writing every string's path was most of checking a lockfile.
    """
    if isinstance(value, str):
        problem = string_problem(value)
        return None if problem is None else ("", problem)
    if isinstance(value, dict):
        for key, child in value.items():
            head = str(key)
            if isinstance(key, str) and (problem := string_problem(key)) is not None:
                return head, problem
            if (found := _first_problem(child)) is not None:
                return _joined(head, found)
    elif isinstance(value, list | tuple):
        for index, child in enumerate(value):
            if (found := _first_problem(child)) is not None:
                return _joined(f"[{index}]", found)
    return None


def _joined(head: str, found: tuple[str, str]) -> tuple[str, str]:
    """``found``'s path under ``head``: ``head.field``, ``head[index]``, or ``head`` itself."""
    rest, problem = found
    if rest and not rest.startswith("["):
        rest = f".{rest}"
    return f"{head}{rest}", problem
