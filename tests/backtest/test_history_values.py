"""A history line's values as the reader takes them: whatever the mix of numbers, booleans,
nulls and strings, the same floats (or the same refusal) as numpy's item by item
conversion, then the spelled-out one, give; NaN samples and samples outside the window
dropped."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from dsf_compile.backtest.history import HistoryReader, _number, _numbers
from dsf_compile.inputs.settings import HistorySettings

items = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([True, False, None, "NaN", "+Inf", "-Inf", "1.5", "x", "9" * 400, [1.0]]),
)


def converted(values: list[Any]) -> list[float] | str:
    """The conversion spelled out: numpy item by item, else one by one (the reader's rules)."""
    try:
        found = np.fromiter(values, dtype=np.float64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        try:
            found = np.array([_number(v) for v in values], dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            return "refused"
    return found.tolist()


def numbers(values: list[Any]) -> list[float] | str:
    try:
        return _numbers(values).tolist()
    except (TypeError, ValueError, OverflowError):
        return "refused"


@settings(max_examples=300, deadline=None)
@given(st.lists(items, max_size=12))
def test_values_convert_as_numpy_item_by_item(values: list[Any]) -> None:
    found, expected = numbers(values), converted(values)
    if isinstance(found, str) or isinstance(expected, str):
        assert found == expected
    else:  # NaN is not equal to itself: compare the bits
        assert np.array_equal(np.array(found), np.array(expected), equal_nan=True)


def _reader(start: int, end: int) -> HistoryReader:
    return HistoryReader(
        frozenset({"c"}),
        frozenset({"s"}),
        start,
        end,
        HistorySettings(maxBytes=10**9, maxSeries=100, maxPoints=10**6),
    )


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 100), st.one_of(st.floats(-1e3, 1e3), st.none())),
        min_size=1,
        max_size=20,
        unique_by=lambda sample: sample[0],
    ),
    st.integers(0, 100),
    st.integers(0, 100),
)
def test_nan_samples_and_samples_outside_the_window_are_dropped(
    samples: list[tuple[int, float | None]], start: int, length: int
) -> None:
    samples.sort()
    reader = _reader(start, start + length)
    labels = {"ds_cluster": "c", "ds_score_name": "s"}
    times, values = [t for t, _ in samples], [v for _, v in samples]
    assert reader.add(labels, times, values) is None
    kept = [(t, v) for t, v in samples if v is not None and start <= t <= start + length]
    found = reader.series()
    if not kept:
        assert found == []
    else:
        assert found[0].timestamps.tolist() == [t for t, _ in kept]
        assert found[0].values.tolist() == [v for _, v in kept]
