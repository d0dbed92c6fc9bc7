"""The fleet's score history: ``dynamic_score`` series as VictoriaMetrics exports them.

One series per line, ``{"metric": {"__name__": "dynamic_score", <labels>}, "values":
[...], "timestamps": [<ms>...]}``, optionally gzip-compressed. A series is known by its
``ds_*`` labels (what the agent sets): lines with the same ``ds_*`` labels (one series
split in parts, or seen by two scrapers under different ``instance`` labels) are folded
into one, sorted by time, a later line winning a timestamp both hold.

Parsing is bounded (bytes, series, points) and every problem is located ``FILE:LINE``.
"""

from __future__ import annotations

import functools
import gzip
import math
import struct
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from dsf_compile.errors import DsfError, InputError
from dsf_compile.inputs.settings import HistorySettings
from dsf_contract import metrics
from dsf_contract.placement_scores import RESULT_LABELS
from dsf_contract.problem import Problem

METRIC = metrics.SCORE
CLUSTER_LABEL = metrics.SCORE_CLUSTER_LABEL
SCORE_NAME_LABEL = metrics.SCORE_NAME_LABEL
#: A series' identity: its cluster, its score name and the agent's result labels.
IDENTITY_LABELS = (CLUSTER_LABEL, SCORE_NAME_LABEL, *(f"ds_{label}" for label in RESULT_LABELS))
_GZIP_MAGIC = b"\x1f\x8b"
_MAX_NUMBER_TEXT = 64


class HistoryReadError(DsfError):
    """The history source could not be read (unreachable, refused, too big, too slow): exit 2.

    ``where`` is the file or URL (empty: the history as a whole), ``line`` its line (0: none).
    """

    def __init__(self, message: str, where: str = "", line: int = 0) -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.message, self.where, self.line = message, where, line


@dataclass(frozen=True)
class Series:
    """One ``dynamic_score`` series: its labels and its samples, sorted by time (ms)."""

    cluster: str
    score_name: str
    #: The agent's result labels (``node``, ``device``… without ``ds_``), empty ones omitted.
    labels: Mapping[str, str]
    timestamps: np.ndarray[Any, np.dtype[np.int64]]
    values: np.ndarray[Any, np.dtype[np.float64]]

    @property
    def key(self) -> tuple[str, ...]:
        """The ``ds_*`` label values, in :data:`IDENTITY_LABELS` order."""
        return (self.cluster, self.score_name, *(self.labels.get(k, "") for k in RESULT_LABELS))


@dataclass
class _Parts:
    """The parts of one series met so far (lines may repeat a series)."""

    timestamps: list[np.ndarray[Any, np.dtype[np.int64]]] = field(default_factory=list)
    values: list[np.ndarray[Any, np.dtype[np.float64]]] = field(default_factory=list)


@dataclass
class HistoryReader:
    """Collects series (from a file's lines or an API's answers) within a window and limits.

    ``clusters`` and ``score_names`` select the series kept; samples outside
    ``[start_ms, end_ms]`` are dropped. :meth:`series` folds what was collected.
    """

    clusters: frozenset[str]
    score_names: frozenset[str]
    start_ms: int
    end_ms: int
    #: What one read may hold: bytes, series and points (``history.*`` in ``dsf.yaml``).
    limits: HistorySettings
    _parts: dict[tuple[str, ...], _Parts] = field(default_factory=dict)
    _points: int = 0
    #: The last line's timestamps, as given and as an array, and which are in the window
    #: (None: all): the series of one scrape target share their scrape times, and then
    #: their array (converted once, held once).
    _times: (
        tuple[
            list[Any],
            np.ndarray[Any, np.dtype[np.int64]],
            np.ndarray[Any, np.dtype[np.bool_]] | None,
        ]
        | None
    ) = None

    def add(self, metric: Any, timestamps: Any, values: Any) -> str | None:
        """Add one series' samples; the problem (``field: message``) when they are not history."""
        problem = _check_metric(metric)
        if problem is not None:
            return problem
        if metric.get("__name__", METRIC) != METRIC:
            return None  # an export of more than the scores: the other metrics are not ours
        if metric.get(CLUSTER_LABEL) not in self.clusters:
            return None
        if metric.get(SCORE_NAME_LABEL) not in self.score_names:
            return None
        shared = self._times is not None and timestamps == self._times[0]
        samples = _samples(self._times[1] if shared else timestamps, values)  # type: ignore[index]
        if isinstance(samples, str):
            return samples
        times, numbers = samples
        if not shared:
            times.flags.writeable = False  # shared by the series with the same times
            within = (times >= self.start_ms) & (times <= self.end_ms)
            self._times = (timestamps, times, within if not within.all() else None)
        assert self._times is not None
        inside = self._times[2]
        # the minimum is NaN exactly when a value is: one pass, no mask, in the usual case
        if inside is not None or (len(numbers) and math.isnan(numbers.min())):
            keep = ~np.isnan(numbers) if inside is None else inside & ~np.isnan(numbers)
            times, numbers = times[keep], numbers[keep]
        key = tuple(str(metric.get(k, "")) for k in IDENTITY_LABELS)
        parts = self._parts.get(key)
        if parts is None:
            if len(self._parts) >= self.limits.maxSeries:
                raise HistoryReadError(
                    f"more than {self.limits.maxSeries} series (history.maxSeries)"
                )
            parts = self._parts[key] = _Parts()
        self._points += len(times)
        if self._points > self.limits.maxPoints:
            raise HistoryReadError(f"more than {self.limits.maxPoints} samples (history.maxPoints)")
        parts.timestamps.append(times)
        parts.values.append(numbers)
        return None

    def series(self) -> list[Series]:
        """Every series collected, folded, sorted by its ``ds_*`` labels; no empty one."""
        out = []
        for key in sorted(self._parts):
            times, values = _fold(self._parts[key])
            if len(times) == 0:
                continue
            labels = {k: v for k, v in zip(RESULT_LABELS, key[2:], strict=True) if v}
            out.append(Series(key[0], key[1], labels, times, values))
        return out


def _check_metric(metric: Any) -> str | None:
    if not isinstance(metric, dict):
        return "metric: expected an object of labels"
    for name, value in metric.items():
        if not isinstance(value, str):
            return f"metric.{name}: expected a string label value"
    return None


def _samples(
    timestamps: Any, values: Any
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]] | str:
    """The samples as arrays, or what is wrong with them."""
    if not isinstance(timestamps, list | np.ndarray) or not isinstance(values, list):
        return "values, timestamps: expected two lists"
    if len(timestamps) != len(values):
        return f"timestamps: {len(timestamps)} timestamps for {len(values)} values"
    try:
        times = (
            timestamps
            if isinstance(timestamps, np.ndarray)
            else np.array(timestamps, dtype=np.int64)
        )
        numbers = _numbers(values)
    except (TypeError, ValueError, OverflowError):
        return "values, timestamps: expected numbers (timestamps in milliseconds)"
    if times.ndim != 1 or numbers.ndim != 1:
        return "values, timestamps: expected flat lists of numbers"
    return times, numbers


def _numbers(values: list[Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """The values as floats: at C speed when they are all numbers (a boolean among numbers
    reads as 0 or 1 there), one by one otherwise (strings, and what is not a number)."""
    try:  # the usual export: numbers only, packed as doubles at C speed (twice as fast as
        # numpy's item by item conversion; what it refuses is left to that conversion)
        return np.frombuffer(_doubles(len(values)).pack(*values), dtype=np.float64)
    except (struct.error, OverflowError):
        pass
    try:  # numpy converts each item to float64 (a nested list is refused; None reads as
        # NaN, and a string holding a number as that number)
        return np.fromiter(values, dtype=np.float64, count=len(values))
    except (TypeError, ValueError, OverflowError):
        pass  # what is not a number among them: one by one, below, for the error
    return np.array([_number(v) for v in values], dtype=np.float64)


@functools.lru_cache(maxsize=8)
def _doubles(count: int) -> struct.Struct:
    """The packing of ``count`` doubles (the lines of one export mostly share a length)."""
    return struct.Struct(f"{count}d")


def _number(value: Any) -> float:
    """A sample value: a number, or the strings VictoriaMetrics writes for the others."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a sample")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str) and len(value) <= _MAX_NUMBER_TEXT:
        return float(value)  # "NaN", "+Inf", and Prometheus' API's values as strings
    raise TypeError("not a number")


def _fold(
    parts: _Parts,
) -> tuple[np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]]:
    """One series' parts joined and sorted by time; of equal times the later part wins."""
    if len(parts.timestamps) == 1:
        times, values = parts.timestamps[0], parts.values[0]
    else:
        times, values = np.concatenate(parts.timestamps), np.concatenate(parts.values)
    if len(parts.timestamps) == 1 and (len(times) < 2 or bool((times[1:] > times[:-1]).all())):
        return times, values  # one line, in time order: as it came
    order = np.argsort(times, kind="stable")
    times, values = times[order], values[order]
    if len(times) > 1:
        # of a run of equal times keep the last (the stable sort kept their line order)
        last = np.append(times[1:] != times[:-1], True)
        times, values = times[last], values[last]
    return times, values


# ------------------------------------------------------------------ the file


def read_export_file(path: Path, reader: HistoryReader) -> list[Series]:
    """The series of an export file (JSON lines, gzip when it starts so).

    :class:`InputError` (exit 1) located ``FILE:LINE`` for a line that is not history;
    :class:`HistoryReadError` (exit 2) when the file cannot be read or is over the byte cap.
    """
    try:
        handle = path.open("rb")
    except OSError as err:
        raise HistoryReadError(f"cannot read: {err.strerror or err}", str(path)) from None
    with handle:
        stream: IO[bytes] = handle
        if handle.peek(2)[:2] == _GZIP_MAGIC:
            stream = gzip.GzipFile(fileobj=handle)  # type: ignore[assignment]  # reads bytes
        try:
            for number, line in _lines(stream, reader.limits.maxBytes, str(path)):
                _add_line(reader, line, str(path), number)
        except (gzip.BadGzipFile, EOFError, zlib.error) as err:
            # compressed, but not (or no longer) gzip: not a history file
            raise InputError([Problem(str(path), 0, 0, "", f"not a gzip file: {err}")]) from None
        except OSError as err:
            raise HistoryReadError(f"cannot read: {err.strerror or err}", str(path)) from None
    return reader.series()


#: Bytes read from a history file at a time.
_CHUNK = 8 * 1024 * 1024
#: The longest line a history may hold: one series over the window (7 days of a sample
#: every second are about 15 MB of export text). A longer line is not history.
MAX_LINE_BYTES = 64 * 1024 * 1024


class LineSplitter:
    """Lines out of chunks as they arrive, each at most :data:`MAX_LINE_BYTES`: the part of
    a line not ended yet is all that is held, so an endless line costs the line cap."""

    def __init__(self, name: str, max_line: int = MAX_LINE_BYTES) -> None:
        self.name, self.max_line = name, max_line
        self.number = 0
        self._pieces: list[bytes] = []
        self._held = 0

    def feed(self, chunk: bytes) -> Iterator[tuple[int, bytes]]:
        """The non-blank lines ``chunk`` ends, with their numbers (1-based)."""
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            yield from self._ended(chunk[start:end])
            start = end + 1
        if start < len(chunk):
            self._hold(chunk[start:])

    def finish(self) -> Iterator[tuple[int, bytes]]:
        """The last line, when the stream does not end with a line break."""
        if self._pieces:
            yield from self._ended(b"")

    def _hold(self, piece: bytes) -> None:
        self._held += len(piece)
        if self._held > self.max_line:
            raise self.too_long()
        self._pieces.append(piece)

    def _ended(self, piece: bytes) -> Iterator[tuple[int, bytes]]:
        if self._pieces:
            self._hold(piece)
            piece = b"".join(self._pieces)
            self._pieces, self._held = [], 0
        elif len(piece) > self.max_line:
            raise self.too_long()
        self.number += 1
        if piece and not piece.isspace():  # not blank (as strip() would say, without a copy)
            yield self.number, piece

    def too_long(self) -> InputError:
        """Line ``number + 1`` is over the cap: located, as every line that is not history."""
        message = f"a line longer than {self.max_line} bytes is not one series of history"
        return InputError([Problem(self.name, self.number + 1, 1, "", message)])


def _lines(stream: IO[bytes], max_bytes: int, name: str) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines with their numbers, refusing more than ``max_bytes`` in all
    (read a chunk at a time, so one endless line costs the line cap, no more)."""
    total = 0
    lines = LineSplitter(name)
    while chunk := stream.read(_CHUNK):
        total += len(chunk)
        if total > max_bytes:
            raise HistoryReadError(f"larger than {max_bytes} bytes (history.maxBytes)", name)
        yield from lines.feed(chunk)
    yield from lines.finish()


def _add_line(reader: HistoryReader, line: bytes, name: str, number: int) -> None:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError as err:
        column = getattr(err, "pos", 0) + 1
        raise InputError(
            [Problem(name, number, column, "", f"not a JSON line of an export: {err.msg}")]
        ) from None
    if not isinstance(document, dict) or "metric" not in document:
        raise InputError(
            [Problem(name, number, 1, "", 'expected {"metric": …, "values": …, "timestamps": …}')]
        )
    problem = reader.add(document["metric"], document.get("timestamps"), document.get("values"))
    if problem is not None:
        where, _, message = problem.partition(": ")
        raise InputError([Problem(name, number, 1, where, message)])


def write_export_file(path: Path, series: Iterable[Series]) -> None:
    """``--save-history``: the series as export lines (gzip when ``path`` ends in ``.gz``),
    written to a temporary file and renamed, so that no half-written file is left."""
    from dsf_compile.edges.files import atomic_write

    lines = bytearray()
    for one in series:
        metric = {"__name__": METRIC, CLUSTER_LABEL: one.cluster, SCORE_NAME_LABEL: one.score_name}
        metric |= {f"ds_{k}": v for k, v in one.labels.items()}
        values = [_json_value(v) for v in one.values.tolist()]
        lines += orjson.dumps(
            {"metric": metric, "values": values, "timestamps": one.timestamps.tolist()}
        )
        lines += b"\n"
    data = gzip.compress(bytes(lines), mtime=0) if path.name.endswith(".gz") else bytes(lines)
    atomic_write(path, data)


def _json_value(value: float) -> float | int | str:
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return int(value) if value.is_integer() and abs(value) < 2**53 else value
