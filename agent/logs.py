"""Structured logging: one line per event, ``key=value`` text or JSON, never a token.

Call sites log an *event* name plus fields (``log.info("cycle_failed", extra=fields(...))``).
Every token the agent reads is registered with :data:`REDACTOR`; the formatter replaces
any occurrence in the final line, so even an exception message that happened to quote a
header cannot leak one.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
from typing import Any, TextIO

_FIELDS = "dsf_fields"
_MIN_SECRET_LENGTH = 4  # shorter strings would redact ordinary words


class Redactor:
    """The set of secret strings that must never appear in output (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()

    def add(self, secret: str) -> None:
        """Remember ``secret`` so that later output hides it."""
        if len(secret) >= _MIN_SECRET_LENGTH and secret not in self._secrets:
            with self._lock:
                self._secrets = self._secrets | {secret}

    def redact(self, text: str) -> str:
        """``text`` with every known secret replaced by ``***``."""
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, "***")
        return text


REDACTOR = Redactor()


def fields(**values: Any) -> dict[str, Any]:
    """The ``extra=`` argument that attaches structured fields to a log record."""
    return {_FIELDS: values}


def _timestamp(record: logging.LogRecord) -> str:
    seconds = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
    return f"{seconds}.{int(record.msecs):03d}Z"


class _Formatter(logging.Formatter):
    def __init__(self, *, as_json: bool, redactor: Redactor) -> None:
        super().__init__()
        self._json = as_json
        self._redactor = redactor

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        data.update(getattr(record, _FIELDS, {}))
        if record.exc_info and record.exc_info[1] is not None:
            data["exception"] = f"{type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        if self._json:
            line = json.dumps(data, default=str, ensure_ascii=False)
        else:
            line = " ".join(f"{key}={_text_value(value)}" for key, value in data.items())
        return self._redactor.redact(line)


def _text_value(value: Any) -> str:
    text = str(value)
    if text and not any(c.isspace() or c in '"=' for c in text):
        return text
    return json.dumps(text, ensure_ascii=False)


def configure_logging(
    level: str, log_format: str, *, stream: TextIO | None = None, redactor: Redactor = REDACTOR
) -> None:
    """Send every log record to ``stream`` (stderr) in the chosen format."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(_Formatter(as_json=log_format == "json", redactor=redactor))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Library chatter (one line per HTTP request) would drown the agent's own events.
    for noisy in ("httpx", "httpcore", "kubernetes", "urllib3", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
