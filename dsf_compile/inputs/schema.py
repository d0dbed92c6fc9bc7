"""One document against its model, and what every document must not hold.

:func:`validate_model` turns pydantic's errors into problems located at their field (the
wording is :mod:`dsf_contract.validation_errors`'); :func:`precheck` refuses credentials
written in Git, whatever the document's kind.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import ValidationError

from dsf_compile.edges.untrusted import has_secret_query
from dsf_compile.inputs.located import M
from dsf_compile.inputs.messages import input_field_names
from dsf_contract.bounded_yaml import Document, Pointer
from dsf_contract.problem import Problem
from dsf_contract.validation_errors import error_message


def validate_model(
    model: type[M], document: Document, data: Any, base: Pointer = ()
) -> tuple[M | None, list[Problem]]:
    try:
        return model.model_validate(data), []
    except ValidationError as err:
        problems = []
        for error in err.errors():
            # "[key]" marks an error about a mapping's key: the key's own position is its field's
            loc = tuple(
                p
                for p in error["loc"]
                if not (isinstance(p, str) and (p.startswith("function-") or p == "[key]"))
            )
            pointer = (*base, *loc)
            if any(pointer[: len(done)] == done for done in document.reported):
                continue  # loading refused what was written here and said so
            if _short_by_failed_items(error):
                continue  # the failing item is reported at its own field
            message = error_message(error, document.plain_text.get(pointer), input_field_names())
            problems.append(document.problem(pointer, message))
        return None, problems


def _short_by_failed_items(error: Any) -> bool:
    """A list "too short" only because some of its items failed (each reported itself)."""
    written = error.get("input")
    minimum = (error.get("ctx") or {}).get("min_length")
    return (
        error["type"] == "too_short"
        and isinstance(written, list | tuple)
        and isinstance(minimum, int)
        and len(written) >= minimum
    )


#: Keys (lower case, without ``-`` and ``_``) whose value would be a credential written in Git.
_CREDENTIAL_KEYS = frozenset({
    "token", "password", "passwd", "secret", "apikey", "accesstoken", "bearertoken",
    "clientsecret", "privatekey", "credentials", "authorization",
})  # fmt: skip
_URL_WITH_CREDENTIALS = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/?#\s]*@")


def _carries_credentials(url: str) -> bool:
    found = _URL_WITH_CREDENTIALS.match(url)
    if found is None:
        return False
    # ssh://git@host/repo names the login, not a secret; the key stays in a Secret
    return not (url[:6].lower() == "ssh://" and ":" not in found.group(0)[6:])


def precheck(document: Document) -> list[Problem]:
    """Credentials in Git: literal token/password fields and URLs with user:password@."""
    problems: list[Problem] = []
    _precheck_value(document, document.data, (), problems)
    return problems


def _precheck_value(
    document: Document, value: Any, pointer: Pointer, problems: list[Problem]
) -> None:
    """``value`` at ``pointer``, then what it holds, in document order."""
    if pointer and isinstance(pointer[-1], str) and _bare_key(pointer[-1]) in _CREDENTIAL_KEYS:
        problems.append(
            document.problem(
                pointer,
                "credentials must not be written in Git; reference a Secret with auth.tokenSecretRef",
            )
        )
    elif isinstance(value, str):
        _precheck_url(document, value, pointer, problems)
    if isinstance(value, dict):
        for key, child in value.items():
            _precheck_value(document, child, (*pointer, key), problems)
    elif isinstance(value, list):
        for index, child in enumerate(value):
            _precheck_value(document, child, (*pointer, index), problems)


def _bare_key(key: str) -> str:
    """A key as credential names are compared: lower case, without ``-`` and ``_``."""
    return key.replace("-", "").replace("_", "").lower()


def _precheck_url(
    document: Document, value: str, pointer: Pointer, problems: list[Problem]
) -> None:
    if _carries_credentials(value):
        problems.append(
            document.problem(
                pointer, "URL carries credentials (user:password@host); use a Secret reference"
            )
        )
    elif "://" in value and has_secret_query(value):
        problems.append(
            document.problem(
                pointer,
                "URL carries a secret query parameter (token=, api_key=, ...); use a Secret reference",
            )
        )


# --------------------------------------------------------------- documents
