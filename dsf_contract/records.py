"""``@frozen``: what ``@dataclass(frozen=True)`` makes, with half the source compiled.

Every command defines a hundred frozen dataclasses before it does anything, and the
standard library writes six methods of each as source text and compiles them one by one
(``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__``, ``__delattr__``):
a tenth of ``validate`` of a small fleet went into those compilations. Here the
standard library still writes the three that depend on how the instance is built
(``__init__``, and the two that refuse assignment), and the three that only read the
fields are shared functions, given each class's fields (a class is built in about 60 %
of the time). They compare, hash and print exactly as the generated ones do: the same
fields (``compare``, ``hash`` and ``repr`` of :func:`dataclasses.field` honoured), the
same tuples, the same text, ``...`` for a record that holds itself. A class that
writes one of those methods itself gets the standard library's decorator unchanged.
"""

from __future__ import annotations

import dataclasses
import reprlib
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform

_Class = TypeVar("_Class", bound=type)
#: The methods :func:`frozen` shares instead of generating.
_SHARED = ("__eq__", "__hash__", "__repr__")


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field, dataclasses.Field))
def frozen(cls: _Class) -> _Class:
    """``@dataclass(frozen=True)``, with ``__eq__``, ``__hash__`` and ``__repr__`` shared."""
    made: Any
    if any(name in cls.__dict__ for name in _SHARED):
        made = dataclasses.dataclass(frozen=True)(cls)
        return made  # type: ignore[no-any-return]
    made = dataclasses.dataclass(frozen=True, eq=False, repr=False)(cls)
    fields = dataclasses.fields(made)
    compared = _values([f.name for f in fields if f.compare])
    hashed = _values([f.name for f in fields if (f.compare if f.hash is None else f.hash)])
    shown = tuple(f.name for f in fields if f.repr)
    for method in (_eq(compared), _hash(hashed), _repr(shown)):
        method.__qualname__ = f"{made.__qualname__}.{method.__name__}"
        setattr(made, method.__name__, method)
    return made  # type: ignore[no-any-return]


def _values(names: list[str]) -> Callable[[object], tuple[Any, ...]]:
    """The tuple of ``names``' values of a record (a tuple for one name and for none too)."""
    if len(names) > 1:
        return attrgetter(*names)
    if names:
        name = names[0]
        return lambda record: (getattr(record, name),)
    return lambda record: ()


def _eq(values: Callable[[object], tuple[Any, ...]]) -> Callable[[object, object], Any]:
    def __eq__(self: object, other: object) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented

    return __eq__


def _hash(values: Callable[[object], tuple[Any, ...]]) -> Callable[[object], int]:
    def __hash__(self: object) -> int:
        return hash(values(self))

    return __hash__


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    @reprlib.recursive_repr()
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{self.__class__.__qualname__}({shown})"

    return __repr__
