"""The AI-workload scorer's application file: its candidates, pod globs and static scores.

Upstream's ``static/config.json``: per application a name, its ``device_candidates`` (the
``(app, device)`` pairs scored, in the file's order) and ``pod_alias`` globs that name its
pods; ``static_score.performance`` holds the performance scores served as they are.
:func:`device_of` names the device candidate of a DCGM ``GPU_I_PROFILE`` label.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

# Upstream's application file: two apps, three device layouts.
_APPS = ("app01", "app02")
_DEVICES = ["all", "2g.24gb", "3g.48gb"]
# device -> (app01's, app02's) performance score, in upstream's order.
_PERFORMANCE = {"all": (80, 80), "3g.48gb": (60, 55), "2g.24gb": (10, 15)}
DEFAULT_APPLICATIONS: dict[str, Any] = {
    "applications": [
        {"name": name, "device_candidates": _DEVICES, "pod_alias": [f"{name}*"]} for name in _APPS
    ],
    "static_score": {
        "performance": [
            {"metric": {"app": app, "device": device}, "score": score}
            for device, scores in _PERFORMANCE.items()
            for app, score in zip(_APPS, scores, strict=True)
        ]
    },
}
# Bounds on what an application file may ask for.
MAX_POD_NAME = 253
MAX_GLOBS = 1000


@dataclass(frozen=True)
class Applications:
    """The application file: candidates in order, pod-name globs, static performance scores."""

    candidates: tuple[tuple[str, str], ...]
    globs: tuple[tuple[re.Pattern[str], str], ...]
    performance: tuple[dict[str, Any], ...]

    def app_of(self, pod: str) -> str:
        """The first application whose glob matches the whole pod name, else ``unknown``."""
        if not pod or len(pod) > MAX_POD_NAME:
            return "unknown"
        return next((app for pattern, app in self.globs if pattern.fullmatch(pod)), "unknown")


def glob_pattern(glob: str) -> re.Pattern[str]:
    """``*`` any text, ``?`` one character, everything else literal; an empty glob matches ''."""
    parts = {"*": ".*", "?": "."}
    return re.compile("".join(parts.get(c) or re.escape(c) for c in glob.strip()))


def device_of(profile: str) -> str:
    """The device candidate of a MIG profile label, as upstream names them."""
    if not profile:
        return "unknown"
    for prefix, device in (("3g.47gb", "3g.48gb"), ("2g", "2g.24gb"), ("1g", "1g.12gb")):
        if profile.startswith(prefix):
            return device
    return "all"


def parse_applications(document: Any, where: str) -> Applications:
    """Check an application file and build its tables; SystemExit says what is wrong."""
    if not isinstance(document, dict) or not isinstance(document.get("applications"), list):
        raise SystemExit(f"{where}: error: applications: must be a list")
    candidates: list[tuple[str, str]] = []
    globs: list[tuple[re.Pattern[str], str]] = []
    for index, app in enumerate(document["applications"]):
        name, devices, aliases = _application(app, f"{where}: error: applications[{index}]")
        candidates += [(name, device) for device in devices]
        globs += [(glob_pattern(alias), name) for alias in aliases if alias]
    performance = (document.get("static_score") or {}).get("performance") or []
    if not isinstance(performance, list) or not all(_score_entry(e) for e in performance):
        raise SystemExit(
            f"{where}: error: static_score.performance: items must be "
            '{"metric": {str: str}, "score": number}'
        )
    if len(globs) > MAX_GLOBS:
        raise SystemExit(f"{where}: error: more than {MAX_GLOBS} pod_alias globs")
    return Applications(tuple(candidates), tuple(globs), tuple(performance))


def _application(app: Any, where: str) -> tuple[str, list[str], list[str]]:
    if isinstance(app, dict):
        name, devices = app.get("name"), app.get("device_candidates", [])
        aliases = app.get("pod_alias") or []
        if isinstance(name, str) and _strings(devices) and _strings(aliases):
            return name, devices, aliases
    raise SystemExit(f"{where}: needs a name and lists of strings")


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _score_entry(entry: Any) -> bool:
    if not isinstance(entry, dict) or not isinstance(entry.get("metric", {}), dict):
        return False
    score = entry.get("score", 0)
    return (
        all(isinstance(v, str) for v in entry.get("metric", {}).values())
        and isinstance(score, int | float)
        and not isinstance(score, bool)
        and math.isfinite(score)
    )


def load_applications(path: str | None) -> Applications:
    """The application file at ``path``, or upstream's when None."""
    if path is None:
        return parse_applications(DEFAULT_APPLICATIONS, "built-in applications")
    try:
        with open(path, "rb") as handle:
            document = json.loads(handle.read(4 * 1024 * 1024))
    except (OSError, ValueError) as error:
        raise SystemExit(f"{path}: error: {error}") from None
    return parse_applications(document, path)
