"""pydantic's validation errors in our words: one table from error type to message.

Every reader of a document that pydantic checks words its errors here — the compiler's
inputs, the lockfile, a scorer's ``/config`` answer, the hub's objects, the agent's
configuration — so that one mistake reads the same wherever it is made. A message is one
short line that says what the value must be, chosen by pydantic's error ``type`` (never by
its text); a field is named by its dotted path (``spec.numberOfClusters``). Adding a
wording is one entry in :data:`MESSAGES`; an error type not in it keeps pydantic's own
text.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from dsf_contract.records import frozen

#: What names the whole document when an error is about no field of it.
WHOLE_DOCUMENT = "(document)"


@frozen
class _Error:
    """One pydantic error as the wordings read it."""

    error: Mapping[str, Any]
    #: The unquoted YAML text the value was written as, when it was a plain scalar.
    plain_text: str | None
    #: The field names an unknown field may be a misspelling of.
    fields: Sequence[str]

    @property
    def ctx(self) -> Mapping[str, Any]:
        return self.error.get("ctx") or {}

    @property
    def value(self) -> Any:
        return self.error.get("input")


def error_message(
    error: Mapping[str, Any], plain_text: str | None = None, fields: Sequence[str] = ()
) -> str:
    """One short line for a pydantic error; ``plain_text`` is the unquoted YAML the value
    was, ``fields`` the names an unknown field is compared with for a did-you-mean hint."""
    wording = MESSAGES.get(error["type"])
    said = wording(_Error(error, plain_text, fields)) if wording is not None else None
    return said if said is not None else str(error["msg"])


def field_path(loc: Iterable[object]) -> str:
    """The field an error is about, dotted (``scoring.params.interval``); empty for the
    whole document."""
    return ".".join(str(part) for part in loc)


def described(error: Mapping[str, Any]) -> str:
    """``FIELD: MESSAGE`` for one error (:data:`WHOLE_DOCUMENT` when it names no field)."""
    return f"{field_path(error['loc']) or WHOLE_DOCUMENT}: {error_message(error)}"


def first_error(err: ValidationError) -> str:
    """The first error by field, described, and how many more there are."""
    errors = sorted(err.errors(include_url=False), key=lambda e: [str(part) for part in e["loc"]])
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{described(errors[0])}{more}"


def _unknown_field(e: _Error) -> str:
    field = str(e.error["loc"][-1]) if e.error["loc"] else ""
    # a field of another model is no hint: "labels" at the top of a scorer is not "labels"
    candidates = [name for name in e.fields if name != field]
    import difflib  # only to suggest a field: valid inputs never load it

    close = difflib.get_close_matches(field, candidates, n=1, cutoff=0.75)
    hint = f" (did you mean '{close[0]}'?)" if close else ""
    return f"unknown field{hint}"


def _one_of(e: _Error) -> str:
    expected = re.findall(r"'([^']*)'", str(e.ctx.get("expected", "")))
    return f"must be one of: {', '.join(expected)}" if expected else "has an unexpected value"


def _string(e: _Error) -> str:
    if e.value is None:
        # `name: null`, `name: ~` or `name:` mean "no value", not the text "null"
        return "must be a string, not null (no value is written here)"
    scalar = (bool, int, float, datetime.date, datetime.datetime)
    if isinstance(e.value, scalar) and e.plain_text:
        # an unquoted word YAML read as a boolean, number or date: quoting keeps the text
        return f'must be a string (quote it: "{e.plain_text}")'
    return "must be a string"


def _number(e: _Error) -> str:
    if isinstance(e.value, int) and not isinstance(e.value, bool):
        return "must be a finite number (this integer is too large for one)"
    return "must be a number"


def _fixed(text: str) -> Callable[[_Error], str]:
    return lambda _: text


def _too_short(e: _Error) -> str | None:
    # an empty list has pydantic's own wording, which says how many items it needs
    return "must not be empty" if isinstance(e.value, str) else None


#: pydantic error type → our wording (None: pydantic's own text).
MESSAGES: Mapping[str, Callable[[_Error], str | None]] = {
    "missing": _fixed("required field is missing"),
    "extra_forbidden": _unknown_field,
    "literal_error": _one_of,
    "string_type": _string,
    "str_type": _string,
    "finite_number": _fixed("must be a finite number"),
    "int_type": _fixed("must be an integer"),
    "int_parsing": _fixed("must be an integer"),
    "int_from_float": _fixed("must be an integer"),
    "float_type": _number,
    "float_parsing": _number,
    "bool_type": _fixed("must be true or false"),
    "dict_type": _fixed("must be a mapping"),
    "model_type": _fixed("must be a mapping"),
    "model_attributes_type": _fixed("must be a mapping"),
    "list_type": _fixed("must be a list"),
    "tuple_type": _fixed("must be a list"),
    "greater_than": lambda e: f"must be > {e.ctx.get('gt')}",
    "greater_than_equal": lambda e: f"must be >= {e.ctx.get('ge')}",
    "less_than_equal": lambda e: f"must be <= {e.ctx.get('le')}",
    "string_too_short": _fixed("must not be empty"),
    "too_short": _too_short,
    "string_too_long": lambda e: f"must be at most {e.ctx.get('max_length')} characters",
    "string_pattern_mismatch": lambda e: f"does not match the pattern {e.ctx.get('pattern')}",
    "value_error": lambda e: str(e.ctx.get("error", e.error["msg"])),
}
