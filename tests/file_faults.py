"""Injected failures of the file operations dsf's writes use (``os.replace``, ``rename``,
``link``…): the ``n``-th one raises, as a full disk or a kill would stop it."""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

OPERATIONS = ("replace", "rename", "link", "unlink", "rmdir", "mkdir", "fdopen")


def _eio() -> BaseException:
    return OSError(5, "Input/output error (injected)")


def fail_at(
    monkeypatch: pytest.MonkeyPatch,
    n: int,
    error: Callable[[], BaseException] = _eio,
    operations: tuple[str, ...] = OPERATIONS,
) -> dict[str, int]:
    """Make the ``n``-th file operation of the kinds in ``operations`` raise ``error()``
    (EIO by default)."""
    calls = {"n": 0}
    for name in operations:
        real = getattr(os, name)

        def failing(*args: object, _real: Callable[..., object] = real, **kwargs: object) -> object:
            calls["n"] += 1
            if calls["n"] == n:
                raise error()
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, failing)
    return calls
