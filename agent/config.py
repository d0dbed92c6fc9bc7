"""Configuration: the summary list, from the ConfigMap (watched through the API) or a file.

Parsing is pure (:func:`parse_config_text`, :func:`parse_config_document`); the two
sources only deliver raw documents and report when they change. A document that cannot
be used at all raises :class:`ConfigError` and the caller keeps its last good
configuration; a single bad summary is reported and left out, and the others are used.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agent.errors import ConfigError
from agent.logs import fields
from agent.settings import CONFIG_MAP_KEY
from dsf_compile.contract import Summary
from dsf_compile.contract import sanitize_score_name as sanitize_name
from dsf_compile.fields import check_http_url

log = logging.getLogger("dsf.agent.config")
MAX_CONFIG_BYTES = (
    8 * 1024 * 1024
)  # a ConfigMap holds at most 1 MiB; anything far larger is not one


@dataclass(frozen=True)
class ParsedConfig:
    """A usable configuration: the good summaries, what was wrong with the others, and the
    score names of rejected summaries (their running scorers keep their last good settings)."""

    summaries: tuple[Summary, ...]
    problems: tuple[str, ...] = ()
    rejected_score_names: frozenset[str] = field(default_factory=frozenset)


def _semantic_problems(summary: Summary) -> list[str]:
    """What the schema cannot say: URLs, Prometheus fields, both-or-neither Secret refs."""
    problems: list[str] = []
    try:
        check_http_url(summary.scoringEndpoint)
    except ValueError as err:
        problems.append(f"scoringEndpoint {err}")
    if summary.sourceType == "Prometheus":
        try:
            check_http_url(summary.sourceEndpoint)
        except ValueError as err:
            problems.append(f"sourceEndpoint {err}")
        if not summary.sourceQuery.strip():
            problems.append("sourceQuery must not be empty when sourceType is Prometheus")
        if summary.sourceRange <= 0 or summary.sourceStep <= 0:
            problems.append("sourceRange and sourceStep must be > 0 when sourceType is Prometheus")
    for prefix in ("sourceEndpointAuth", "scoringEndpointAuth"):
        name, key = getattr(summary, f"{prefix}Name"), getattr(summary, f"{prefix}Key")
        if bool(name) != bool(key):
            problems.append(f"{prefix}Name and {prefix}Key must be set together")
    return problems


def _summary_list(document: Any) -> list[Any]:
    """The summary list inside ``document``: a bare list, or a ConfigMap's ``data.summaries``."""
    if isinstance(document, list):
        return document
    if not isinstance(document, dict):
        raise ConfigError(
            "expected a JSON list of summaries or a ConfigMap", reason="invalid_document"
        )
    if document.get("kind") not in (None, "ConfigMap"):
        raise ConfigError(
            f"expected a ConfigMap, found kind {document.get('kind')!r}", reason="invalid_document"
        )
    data = document.get("data")
    if not isinstance(data, dict) or CONFIG_MAP_KEY not in data:
        raise ConfigError(f"the ConfigMap has no data.{CONFIG_MAP_KEY} key", reason="missing_key")
    raw = data[CONFIG_MAP_KEY]
    if not isinstance(raw, str):
        raise ConfigError(f"data.{CONFIG_MAP_KEY} must be a string", reason="invalid_document")
    try:
        inner = json.loads(raw)
    except ValueError as err:
        raise ConfigError(
            f"data.{CONFIG_MAP_KEY} is not valid JSON: {err}", reason="invalid_json"
        ) from None
    if not isinstance(inner, list):
        raise ConfigError(f"data.{CONFIG_MAP_KEY} must be a JSON list", reason="invalid_document")
    return inner


def parse_config_document(document: Any) -> ParsedConfig:
    """Validate every summary of ``document``; a bad one is reported and left out."""
    good: list[Summary] = []
    problems: list[str] = []
    rejected: set[str] = set()
    seen_names: dict[str, str] = {}
    for index, item in enumerate(_summary_list(document)):
        label = f"summaries[{index}]"
        score_name = item.get("scoreName") if isinstance(item, dict) else None
        if isinstance(score_name, str):
            label = f"{label} ({score_name})"
        try:
            summary = Summary.model_validate(item)
        except ValidationError as err:
            details = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                for e in err.errors()
            )
            problems.append(f"{label}: {details}")
            if isinstance(score_name, str):
                rejected.add(score_name)
            continue
        issues = _semantic_problems(summary)
        object_name = sanitize_name(summary.scoreName)
        if summary.scoreName in {s.scoreName for s in good}:
            issues.append(f"scoreName {summary.scoreName!r} is used by an earlier summary")
        elif object_name in seen_names:
            issues.append(
                f"scoreName {summary.scoreName!r} gives the same AddOnPlacementScore name {object_name!r} "
                f"as {seen_names[object_name]!r}"
            )
        if issues:
            problems.append(f"{label}: {'; '.join(issues)}")
            rejected.add(summary.scoreName)
            continue
        seen_names[object_name] = summary.scoreName
        good.append(summary)
    # A scorer both kept (first) and rejected (duplicate) keeps its good settings.
    rejected -= {s.scoreName for s in good}
    return ParsedConfig(tuple(good), tuple(problems), frozenset(rejected))


def parse_config_text(text: str | bytes) -> ParsedConfig:
    """Parse a file's content: the JSON summary list, or a ConfigMap in YAML or JSON."""
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(f"configuration larger than {MAX_CONFIG_BYTES} bytes", reason="too_large")
    try:
        document = json.loads(text)
    except ValueError:
        try:
            document = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ConfigError(f"neither JSON nor YAML: {err}", reason="invalid_yaml") from None
    if document is None:
        raise ConfigError("the configuration is empty", reason="empty")
    return parse_config_document(document)


# -------------------------------------------------------------------- sources

ConfigEvent = ParsedConfig | ConfigError


class FileSource:
    """A configuration file, polled: catches in-place writes, renames and symlink swaps.

    The kubelet updates a mounted ConfigMap by re-pointing a ``..data`` symlink, which
    inotify on the file path misses; comparing the content every ``poll`` seconds sees
    every kind of update and costs one small read.
    """

    def __init__(self, path: Path, *, poll: float = 1.0) -> None:
        self._path = path
        self._poll = poll

    async def events(self) -> AsyncIterator[ConfigEvent]:
        """Yield the parsed configuration (or its error) now and whenever it changes."""
        last: str | None = None
        while True:
            try:
                raw = await asyncio.to_thread(self._read)
                digest = hashlib.sha256(raw).hexdigest()
            except ConfigError as err:
                raw, digest = b"", f"error:{err}"
            if digest != last:
                last = digest
                if digest.startswith("error:"):
                    yield ConfigError(digest[len("error:") :], reason="unreadable")
                else:
                    try:
                        yield parse_config_text(raw)
                    except ConfigError as err:
                        yield err
            await asyncio.sleep(self._poll)

    def _read(self) -> bytes:
        try:
            with self._path.open("rb") as handle:
                return handle.read(MAX_CONFIG_BYTES + 1)
        except OSError as err:
            raise ConfigError(
                f"cannot read {self._path}: {err.strerror or err}", reason="unreadable"
            ) from None


class ConfigMapSource:
    """The ConfigMap, listed and then watched through the API in a background thread.

    The synchronous client blocks in a watch for minutes; a daemon thread (rather than a
    worker of ``asyncio.to_thread``) lets the process exit without waiting for it.
    """

    def __init__(
        self,
        core_api: Any,
        namespace: str,
        name: str,
        *,
        watch_seconds: int = 300,
        timeout: float = 30.0,
        max_backoff: float = 30.0,
    ) -> None:
        self._api = core_api
        self._namespace = namespace
        self._name = name
        self._watch_seconds = watch_seconds
        self._timeout = timeout
        self._max_backoff = max_backoff
        self._stop = threading.Event()
        self._response: Any = None

    async def events(self) -> AsyncIterator[ConfigEvent]:
        """Yield the parsed configuration (or its error) now and whenever it changes."""
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[ConfigEvent] = asyncio.Queue()

        def deliver(event: ConfigEvent) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed during shutdown
                loop.call_soon_threadsafe(queue.put_nowait, event)

        thread = threading.Thread(
            target=self._run, args=(deliver,), name="configmap-watch", daemon=True
        )
        thread.start()
        try:
            while True:
                yield await queue.get()
        finally:
            self.stop()

    def stop(self) -> None:
        """Ask the watch thread to end (it also unblocks a watch in progress)."""
        self._stop.set()
        response = self._response
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()

    def _run(self, deliver: Any) -> None:
        backoff = 1.0
        last: str | None = None

        def offer(obj: Any) -> None:
            nonlocal last
            digest = hashlib.sha256(json.dumps(obj, sort_keys=True).encode()).hexdigest()
            if digest != last:  # a resync or a label change would otherwise restart nothing noisily
                last = digest
                try:
                    deliver(parse_config_document(obj) if obj is not None else self._missing())
                except ConfigError as err:
                    deliver(err)

        while not self._stop.is_set():
            try:
                version = self._list(offer)
                backoff = 1.0
                self._watch(version, offer)
            except Exception as err:  # API unreachable, 410 Gone, bad stream: list again
                if self._stop.is_set():
                    return
                log.warning(
                    "configmap_watch_error",
                    extra=fields(error=f"{type(err).__name__}: {err}"[:300], retry_seconds=backoff),
                )
                self._stop.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff)

    def _missing(self) -> ConfigError:
        return ConfigError(
            f"ConfigMap {self._namespace}/{self._name} not found", reason="not_found"
        )

    def _list(self, offer: Any) -> str:
        response = self._api.list_namespaced_config_map(
            self._namespace,
            field_selector=f"metadata.name={self._name}",
            _preload_content=False,
            _request_timeout=self._timeout,
        )
        document = json.loads(response.data)
        items = document.get("items") or []
        offer(items[0] if items else None)
        return str(document.get("metadata", {}).get("resourceVersion", ""))

    def _watch(self, version: str, offer: Any) -> None:
        from kubernetes.watch.watch import iter_resp_lines

        response = self._api.list_namespaced_config_map(
            self._namespace,
            field_selector=f"metadata.name={self._name}",
            watch=True,
            resource_version=version,
            timeout_seconds=self._watch_seconds,
            _preload_content=False,
            _request_timeout=(self._timeout, self._watch_seconds + self._timeout),
        )
        self._response = response
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if self._stop.is_set():
                    return
                event = json.loads(line)
                kind = event.get("type")
                if kind in ("ADDED", "MODIFIED"):
                    offer(event.get("object"))
                elif kind == "DELETED":
                    offer(None)
                elif kind == "ERROR":
                    raise ConfigError(
                        f"watch ended: {str(event.get('object'))[:200]}", reason="watch_error"
                    )
        finally:
            self._response = None
            response.release_conn()
