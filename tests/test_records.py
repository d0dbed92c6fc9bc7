"""``@frozen`` behaves as ``@dataclass(frozen=True)``: compared, hashed, printed alike."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

from dsf_contract.records import frozen


def _twins(body: dict[str, Any], annotations: dict[str, Any]) -> tuple[Any, Any]:
    """The same class body as a standard frozen dataclass and as a :func:`frozen` one."""
    made: list[Any] = []
    for decorate in (dataclass(frozen=True), frozen):
        namespace = {"__annotations__": dict(annotations), "__qualname__": "Outer.Record"}
        namespace.update(body)
        made.append(decorate(type("Record", (), namespace)))
    return made[0], made[1]


SHAPES: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "none": ({}, {}),
    "one": ({}, {"a": int}),
    "several": ({"b": "", "c": ()}, {"a": int, "b": str, "c": tuple}),
    "not compared": ({"b": field(default="x", compare=False)}, {"a": int, "b": str}),
    "hashed only": ({"b": field(default="x", compare=False, hash=True)}, {"a": int, "b": str}),
    "not hashed": ({"b": field(default="x", hash=False)}, {"a": int, "b": str}),
    "not shown": ({"b": field(default="x", repr=False)}, {"a": int, "b": str}),
    "factory": ({"b": field(default_factory=list)}, {"a": int, "b": list}),
}


@pytest.mark.parametrize("shape", SHAPES, ids=list(SHAPES))
def test_a_frozen_record_is_a_frozen_dataclass(shape: str) -> None:
    body, annotations = SHAPES[shape]
    standard, shared = _twins(body, annotations)
    values: list[dict[str, Any]] = [{"a": 1}, {"a": 1}, {"a": 2}]
    if "a" not in annotations:
        values = [{}, {}, {}]
    if "b" in annotations and shape != "factory":
        values[1]["b"] = "y"  # differs only in b: equal where b is not compared
    for one in values:
        for other in values:
            s1, s2 = standard(**one), standard(**other)
            f1, f2 = shared(**one), shared(**other)
            assert (s1 == s2, s1 != s2) == (f1 == f2, f1 != f2)
            assert repr(s1) == repr(f1)
            if shape != "factory":  # a list field: unhashable for both
                assert hash(s1) == hash(f1)
        assert shared(**one) != standard(**one)  # another class: never equal, as before
    assert repr(dataclasses.fields(shared)) == repr(dataclasses.fields(standard))
    assert shared.__match_args__ == standard.__match_args__


def test_assigning_or_deleting_a_field_is_refused() -> None:
    _, shared = _twins({}, {"a": int})
    record = shared(a=1)
    with pytest.raises(FrozenInstanceError):
        record.a = 2
    with pytest.raises(FrozenInstanceError):
        del record.a
    assert dataclasses.replace(record, a=3) == shared(a=3)


def test_a_record_that_holds_itself_prints_dots() -> None:
    standard, shared = _twins({}, {"a": list})
    for kind in (standard, shared):
        record = kind(a=[])
        record.a.append(record)
        assert repr(record) == "Outer.Record(a=[...])"


@frozen
class _Pickled:
    name: str
    sizes: tuple[int, ...] = ()


def test_a_record_survives_pickling() -> None:
    record = _Pickled("x", (1, 2))
    assert pickle.loads(pickle.dumps(record)) == record


def test_a_class_with_its_own_comparison_keeps_the_standard_decorator() -> None:
    @frozen
    class Own:
        a: int

        def __eq__(self, other: object) -> bool:
            return True

    assert Own(1) == Own(2)
    assert hash(Own(1)) == hash((1,))  # generated, as dataclass(frozen=True) does
