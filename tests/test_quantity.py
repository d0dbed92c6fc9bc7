"""Kubernetes quantities: apimachinery's grammar, exact values, clear refusals."""

from __future__ import annotations

from fractions import Fraction

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from dsf_compile.inputs.quantity import QuantityError, QuantityText, parse_quantity


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("100m", Fraction(1, 10)),
        ("2Gi", Fraction(2 * 1024**3)),
        ("1.5", Fraction(3, 2)),
        ("1e3", Fraction(1000)),
        ("1E3", Fraction(1000)),
        ("2E", Fraction(2 * 10**18)),
        ("1.5e-3", Fraction(3, 2000)),
        ("-5Gi", Fraction(-5 * 1024**3)),
        ("+4k", Fraction(4000)),
        (".5", Fraction(1, 2)),
        ("5.", Fraction(5)),
        ("512Mi", Fraction(512 * 1024**2)),
        ("250u", Fraction(1, 4000)),
        ("3n", Fraction(3, 10**9)),
        ("0", Fraction(0)),
        ("1Ei", Fraction(1024**6)),
        (2, Fraction(2)),
        (0.1, Fraction(1, 10)),
        (1e20, Fraction(10**20)),
    ],
)
def test_values_are_exact(raw: str | int | float, value: Fraction) -> None:
    assert parse_quantity(raw).value == value


def test_negative_parses_and_is_flagged() -> None:
    assert parse_quantity("-5Gi").negative
    assert not parse_quantity("5Gi").negative


@pytest.mark.parametrize(
    "raw",
    [
        "lots",
        "",
        "2 Gi",
        "1.5.2",
        "2gi",
        "2KI",
        "Gi",
        "1e",
        "e3",
        "--1",
        "1i",
        "1Kib",
        "1e1.5",
        "nan",
        float("inf"),
    ],
)
def test_garbage_is_refused(raw: str | float) -> None:
    with pytest.raises(QuantityError, match="is not a quantity; expected a number"):
        parse_quantity(raw)


def test_bool_is_not_a_quantity() -> None:
    with pytest.raises(QuantityError):
        parse_quantity(True)


def test_huge_exponent_is_refused_not_computed() -> None:
    with pytest.raises(QuantityError, match="exponent is out of range"):
        parse_quantity("1e999999999")


class _Holder(BaseModel):
    model_config = ConfigDict(strict=True, frozen=True, extra="forbid")
    cpu: QuantityText


@pytest.mark.parametrize(("raw", "text"), [("100m", "100m"), (2, "2"), (1.5, "1.5")])
def test_model_field_keeps_the_text(raw: str | int | float, text: str) -> None:
    assert _Holder.model_validate({"cpu": raw}).cpu == text


def test_model_field_refuses_garbage_with_the_grammar() -> None:
    with pytest.raises(ValidationError, match="'lots' is not a quantity"):
        _Holder.model_validate({"cpu": "lots"})
