"""Kubernetes quantities: apimachinery's grammar, exact values, clear refusals."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict, ValidationError

from dsf_compile.inputs.quantity import QuantityError, QuantityText, parse_quantity
from tests.fleet_repo import copy_fleet


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
        (1e18, Fraction(10**18)),
        ("1Pi", Fraction(1024**5)),
        ("2e18", Fraction(2 * 10**18)),
        ("1Gi", parse_quantity("1024Mi").value),
        ("9223372036854775807", Fraction(2**63 - 1)),
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


@pytest.mark.parametrize(
    "raw", ["1e400", "1e19", "10E", "8Ei", "9223372036854775808", "-1e400", 1e300, "1" * 101]
)
def test_absurd_magnitudes_are_refused(raw: str | float) -> None:
    # past Kubernetes' 2^63-1 a float64 on the hub (and here) overflows or rounds
    with pytest.raises(QuantityError, match=r"out of range|more than 100 digits"):
        parse_quantity(raw)


def test_a_long_quantity_is_shortened_in_the_message() -> None:
    with pytest.raises(QuantityError) as caught:
        parse_quantity("1" * 500)
    assert len(str(caught.value)) < 120


@pytest.mark.parametrize(
    "command",
    [
        ["validate"],
        ["render"],
        ["render", "--check"],
        ["diff"],
        ["explain", "--scores", "snapshots", "--at", "2026-11-22T10:00:00Z"],
    ],
)
def test_an_absurd_allocatable_is_a_located_error_in_every_command(
    tmp_path: Path, command: list[str]
) -> None:
    # issue 17 row 13: "1e400" used to pass validate, then every command crashed with
    # OverflowError where the ResourceAllocatable prioritizer reads it as a float
    root = copy_fleet(tmp_path / "fleet")
    inventory = root / "clusters/inventory.yaml"
    text = inventory.read_text(encoding="utf-8")
    inventory.write_text(text.replace('cpu: "28"', 'cpu: "1e400"', 1), encoding="utf-8")
    before = sorted((p, p.read_bytes()) for p in (root / "rendered").rglob("*") if p.is_file())
    done = subprocess.run(
        [sys.executable, "-m", "dsf_compile", "--root", str(root), *command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )
    # render --check and diff compare: invalid inputs mean they could not (2)
    compares = command[0] == "diff" or "--check" in command
    assert done.returncode == (2 if compares else 1), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(
        "clusters/inventory.yaml:13:5: error: status.allocatable.cpu: '1e400' is out of range"
    ), done.stderr
    after = sorted((p, p.read_bytes()) for p in (root / "rendered").rglob("*") if p.is_file())
    assert after == before
