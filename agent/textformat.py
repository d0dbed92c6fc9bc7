"""The Prometheus text format (version 1.0.0), as ``/metrics`` writes it.

Byte for byte what ``prometheus_client`` 0.26's ``generate_latest`` writes for the
agent's metrics with its ``*_created`` series turned off, as the agent has always served
them (they would double the counters, and nobody reads them); the agent's metric and
label names are constants in the legacy character set, so no name is ever escaped. The agent does not load ``prometheus_client``: its
imports (``http.server``, ``wsgiref``, ``email``, ``urllib.request``...) held 2.3 MiB of
a process meant to stay under 40 MiB for the few families it declares.
``tests/agent/test_agent_textformat.py`` diffs this against ``prometheus_client``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Literal

#: What ``/metrics`` answers with (``prometheus_client.CONTENT_TYPE_LATEST``).
CONTENT_TYPE = "text/plain; version=1.0.0; charset=utf-8"

Kind = Literal["counter", "gauge", "histogram"]


def number(value: float) -> str:
    """A sample's value as Go writes floats: ``+Inf``, ``-Inf``, ``NaN``, and an exponent
    from 1e+07 on (where Python's ``repr`` would still write the digits)."""
    value = float(value)
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    text = repr(value)
    dot = text.find(".")
    if value > 0 and dot > 6:
        mantissa = f"{text[0]}.{text[1:dot]}{text[dot + 1 :]}".rstrip("0.")
        return f"{mantissa}e+{dot - 1:02d}"
    return text


def label_value(value: str) -> str:
    """A label value between its quotes: backslash, line feed and quote escaped."""
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def head(name: str, help: str, kind: Kind) -> str:
    """A family's HELP and TYPE lines (``name`` as its samples say it: a counter's ends
    in ``_total``)."""
    escaped = help.replace("\\", r"\\").replace("\n", r"\n")
    return f"# HELP {name} {escaped}\n# TYPE {name} {kind}\n"


def sample_prefix(name: str, labels: Iterable[tuple[str, str]]) -> str:
    """A sample's line up to the space before its value (label names sorted)."""
    pairs = ",".join(f'{label}="{label_value(value)}"' for label, value in sorted(labels))
    return f"{name}{{{pairs}}}" if pairs else name
