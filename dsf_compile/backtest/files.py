"""The files ``backtest`` reads and writes beside the history: ``--baseline`` (an
earlier run's JSON, refused unless it is one) and ``--save-history``'s target (a regular
file or a new one, never anything else)."""

from __future__ import annotations

import math
import stat
from pathlib import Path
from typing import Any

import orjson

from dsf_compile.backtest.report import Totals
from dsf_compile.edges.files import read_regular_file
from dsf_compile.errors import InputError
from dsf_contract.problem import Problem

#: The largest ``--baseline`` read: the JSON of a run over a week of 20 Placements is a
#: few megabytes (its timelines); anything this large is not one.
MAX_BASELINE_BYTES = 64 * 1024 * 1024
#: The largest count a baseline may hold (JSON's exact integers).
_MAX_COUNT = 2**53


def read_baseline(path: str) -> dict[str, Totals]:
    """An earlier run's JSON: each Placement's changes, churn and meanLoss. A file that is
    not a backtest's JSON (deep, huge, not finite numbers...) is refused, located."""
    try:
        document: Any = orjson.loads(read_regular_file(path, max_bytes=MAX_BASELINE_BYTES))
    except OSError as err:
        raise _not_baseline(path, "", f"cannot read: {err.strerror or err}") from None
    except orjson.JSONDecodeError as err:
        raise _not_baseline(path, "", f"not the JSON of a backtest: {err}") from None
    placements = document.get("placements") if isinstance(document, dict) else None
    if not isinstance(placements, list):
        raise _not_baseline(path, "placements", "expected the list of a backtest's JSON")
    found = {}
    for position, entry in enumerate(placements):
        totals = _baseline_entry(entry)
        if totals is None:
            raise _not_baseline(
                path,
                f"placements[{position}]",
                "expected namespace and name (strings), changes and churn (whole numbers "
                "0 or more) and meanLoss (a finite number)",
            )
        found[f"{entry['namespace']}/{entry['name']}"] = totals
    return found


def _baseline_entry(entry: Any) -> Totals | None:
    if not isinstance(entry, dict):
        return None
    names = (entry.get("namespace"), entry.get("name"))
    counts = (entry.get("changes"), entry.get("churn"))
    loss = entry.get("meanLoss")
    if not all(isinstance(n, str) for n in names):
        return None
    if not all(type(c) is int and 0 <= c <= _MAX_COUNT for c in counts):
        return None
    if not isinstance(loss, int | float) or isinstance(loss, bool) or not math.isfinite(loss):
        return None
    return Totals(int(entry["changes"]), int(entry["churn"]), float(loss))


def _not_baseline(path: str, where: str, message: str) -> InputError:
    return InputError([Problem(path, 0, 0, where, f"--baseline: {message}")])


def saving_target(path: str) -> Path:
    """``--save-history``'s path, when it is a regular file or absent: anything else there
    (a device, a FIFO, a link, a folder) is refused, never replaced."""
    target = Path(path)
    try:
        mode = target.lstat().st_mode
    except FileNotFoundError:
        return target
    except OSError as err:
        raise _not_saved(path, f"cannot look at it: {err.strerror or err}") from None
    if not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        raise _not_saved(path, f"is {kind}: --save-history writes a regular file or a new one")
    return target


def _not_saved(path: str, message: str) -> InputError:
    return InputError([Problem(path, 0, 0, "", f"--save-history: {message}")])
