"""One scorer refreshed: its ``/config`` (``Full``) or ``/healthz`` (``None``) fetched under sync's policy.

CI fetches URLs taken from pull requests, so sync must not become a way to probe the
network: only ``http``/``https``, an optional host allow-list checked before every request
(redirect targets included), redirects followed by hand and only within the same
scheme + host + port, a response size cap enforced while streaming, and a time budget per
scorer that covers its retries. Connection errors, connect timeouts and 5xx answers are
retried up to ``sync.retries`` times with backoff (0.2 s, 0.4 s, ... capped at 2 s) while
the budget lasts; 4xx, bad documents, refused redirects and oversized bodies are final.
Every outcome is a lock entry with a short, deterministic reason.
"""

from __future__ import annotations

import asyncio
import fnmatch
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from dsf_compile.edges.untrusted import first_string_problem, has_credentials, safe_message
from dsf_compile.inputs.scorer import DynamicScorerSpec
from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_compile.sync.client import SyncClient, header, request_errors
from dsf_compile.sync.lock import LockEntry, make_entry
from dsf_contract.bounded_json import load_json
from dsf_contract.failures import RequestFailure
from dsf_contract.scoring_api import ScorerConfig
from dsf_contract.validation_errors import first_error
from dsf_transport.connect_to import DEFAULT_PORTS
from dsf_transport.http import BodyTooLargeError, describe_failure, read_capped
from dsf_transport.http1 import Response

if TYPE_CHECKING:
    import httpx

    from dsf_compile.sync.client import Answer, Target

MAX_REDIRECTS = 5

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

# Backoff between attempts: 0.2 s, 0.4 s, 0.8 s ... capped, and never past the budget.
_BACKOFF_BASE = 0.2
_BACKOFF_CAP = 2.0
# Reasons end up in a reviewed lockfile and on a terminal: keep them one short line.
_REASON_LIMIT = 300


class _FetchFailedError(Exception):
    """One attempt failed; ``reason`` is what the lock entry says, ``retry`` whether to try again."""

    def __init__(
        self, reason: str, *, retry: bool = False, timeout: bool = False, unreachable: bool = False
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry or timeout
        self.timeout = timeout
        self.unreachable = unreachable or timeout


async def refresh_scorer(
    client: SyncClient, spec: DynamicScorerSpec, settings: SyncSettings
) -> tuple[LockEntry, bool]:
    """The scorer's entry, and whether it was reached (False: a connection-level failure)."""
    full = spec.configSyncMode == "Full"
    url = spec.configURL if full else _healthz_url(spec.configURL)
    budget = settings.timeoutSeconds
    if has_credentials(url):
        # Sending it would hand the secret to whoever answers, and the reason would print it.
        reason = f"GET {url}: the URL carries credentials; refused (use auth.tokenSecretRef)"
        return make_entry(spec, healthy=False, reason=_clean(reason)), True
    try:
        async with asyncio.timeout(budget):
            config = await _fetch_with_retries(client, url, full=full, settings=settings)
    except TimeoutError:
        return make_entry(spec, healthy=False, reason=_timed_out(url, budget)), False
    except _FetchFailedError as failure:
        # Whether httpx's timeout or the budget fired first is a race; both read the
        # same so the lockfile does not flap.
        reason = _timed_out(url, budget) if failure.timeout else failure.reason
        return make_entry(spec, healthy=False, reason=_clean(reason)), not failure.unreachable
    return make_entry(spec, healthy=True, config=config), True


async def _fetch_with_retries(
    client: SyncClient, url: str, *, full: bool, settings: SyncSettings
) -> ScorerConfig | None:
    loop = asyncio.get_running_loop()
    budget = settings.timeoutSeconds
    deadline = loop.time() + budget
    # Connecting gets an even share of the budget, so an unanswered SYN leaves room to
    # retry. Waiting for an accepted request's answer does not: cutting every attempt to
    # a share made a loaded machine time out a whole burst of slow-but-healthy scorers
    # at once and retry them all together. A silent server holds its scorer until the
    # budget ends (the caller's asyncio.timeout), which is all a retry could do too. So
    # reading and writing get no timeout of their own: one as long as the budget starts
    # later and could never fire first, and each would cost a timer per read.
    connect = budget / (settings.retries + 1)
    attempt = 0
    while True:
        try:
            return await _fetch_once(client, url, full=full, settings=settings, connect=connect)
        except _FetchFailedError as failure:
            if attempt >= settings.retries or not failure.retry:
                raise
            delay = min(_BACKOFF_BASE * 2**attempt, _BACKOFF_CAP)
            if loop.time() + delay >= deadline:
                raise
        await asyncio.sleep(delay)
        attempt += 1


async def _fetch_once(
    client: SyncClient,
    url: str,
    *,
    full: bool,
    settings: SyncSettings,
    connect: float,
) -> ScorerConfig | None:
    """One attempt: GET ``url``, following same-origin redirects by hand; connecting takes
    at most ``connect`` seconds."""
    shown = url  # as written for the first hop, so reasons name the URL from Git
    current = client.target(url)
    if current is None:
        raise _FetchFailedError(f"GET {shown}: invalid URL")
    for _hop in range(MAX_REDIRECTS + 1):
        _check_target(current, shown, settings.allowedHosts)
        try:
            response = await client.get(current, connect)
            try:
                status = response.status_code
                if status in _REDIRECT_STATUSES:
                    target = _redirect_target(client.url(current), shown, response)
                elif status != 200:
                    raise _FetchFailedError(f"GET {shown}: HTTP {status}", retry=status >= 500)
                elif not full:
                    return None
                else:
                    body = await _read_capped(response, shown, settings.maxResponseBytes)
                    return _parse_config(body, shown)
            finally:
                await _close(response)
        except request_errors() as err:
            raise _request_failed(shown, err) from err
        current, shown = target, str(target)
    raise _FetchFailedError(f"GET {url}: too many redirects (more than {MAX_REDIRECTS})")


async def _close(response: Answer) -> None:
    if isinstance(response, Response):
        response.close()
    else:
        await response.aclose()


def _request_failed(shown: str, err: Exception) -> _FetchFailedError:
    """The attempt's failure in the contract's words (:func:`describe_failure`)."""
    failure = describe_failure(err)
    assert failure is not None  # every error of a request is described
    return _FetchFailedError(
        f"GET {shown}: {failure.words}",
        retry=failure.transient,
        timeout=failure.reason is RequestFailure.TIMEOUT,
        unreachable=failure.unreached,
    )


def _check_target(url: Target, shown: str, allowed_hosts: Sequence[str]) -> None:
    if url.scheme not in DEFAULT_PORTS:
        raise _FetchFailedError(f"GET {shown}: only http and https URLs are allowed")
    if not url.host:
        raise _FetchFailedError(f"GET {shown}: the URL names no host")
    if allowed_hosts and not _host_allowed(url.host, allowed_hosts):
        raise _FetchFailedError(f"GET {shown}: host not in sync.allowedHosts")


def _host_allowed(host: str, patterns: Sequence[str]) -> bool:
    name = host.lower().rstrip(".")
    return any(fnmatch.fnmatchcase(name, pattern.lower().rstrip(".")) for pattern in patterns)


def _redirect_target(current: httpx.URL, shown: str, response: Answer) -> httpx.URL:
    import httpx

    location = header(response, "location")
    if not location:
        raise _FetchFailedError(
            f"GET {shown}: HTTP {response.status_code} without a Location header"
        )
    try:
        target = current.join(location).copy_with(fragment=None)
    except httpx.InvalidURL as err:
        raise _FetchFailedError(f"GET {shown}: invalid redirect Location") from err
    if target.userinfo:
        raise _FetchFailedError(f"GET {shown}: redirect to a URL with credentials refused")
    if target.host.lower() != current.host.lower():
        raise _FetchFailedError(f"GET {shown}: redirect to another host ({target}) refused")
    if _origin(target) != _origin(current):
        raise _FetchFailedError(
            f"GET {shown}: redirect to another scheme or port ({target}) refused"
        )
    return target


def _origin(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host.lower(), url.port or DEFAULT_PORTS.get(url.scheme, 0)


async def _read_capped(response: Answer, shown: str, limit: int) -> bytes | bytearray:
    value = header(response, "content-encoding")
    encoding = ("identity" if value is None else value).strip().lower()
    if encoding not in ("", "identity"):
        # We ask for identity; decoding would let a small compressed body blow past the cap.
        raise _FetchFailedError(f"GET {shown}: unsupported Content-Encoding {encoding!r}")
    try:
        if isinstance(response, Response):  # nothing to decode: the bytes as sent
            return await response.read(limit)
        return await read_capped(response, limit, decoded=False)
    except BodyTooLargeError:
        raise _FetchFailedError(f"GET {shown}: response larger than {limit} bytes") from None


def _parse_config(body: bytes | bytearray, shown: str) -> ScorerConfig:
    try:
        data: Any = load_json(body)
    except ValueError as err:  # also: nested too deeply, a number too long to convert
        raise _FetchFailedError(f"GET {shown}: not JSON") from err
    if not isinstance(data, dict):
        raise _FetchFailedError(f"GET {shown}: invalid /config document: not a JSON object")
    try:
        config = ScorerConfig.model_validate(data)
    except (ValidationError, RecursionError) as err:
        raise _FetchFailedError(
            f"GET {shown}: invalid /config document: {_first_error(err)}"
        ) from err
    # What is kept ends up in a committed lockfile and in rendered/: no string that cannot
    # be written as UTF-8, no terminal control characters, no credentials in a URL.
    found = first_string_problem(config.model_dump(mode="json", exclude_none=True))
    if found is not None:
        raise _FetchFailedError(f"GET {shown}: invalid /config document: {found}")
    return config


def _first_error(err: ValidationError | RecursionError) -> str:
    if not isinstance(err, ValidationError):
        return "nested too deeply"
    return first_error(err)


def _healthz_url(config_url: str) -> str:
    parts = urlsplit(config_url)
    return f"{parts.scheme}://{parts.netloc}/healthz"


def _timed_out(url: str, budget: float) -> str:
    """The reason of a scorer whose budget ran out (worded only then: a healthy fleet's
    scorers never need it)."""
    return _clean(f"GET {url}: timed out after {_seconds(budget)} s")


def _seconds(value: float) -> str:
    return f"{value:g}"


def _clean(reason: str) -> str:
    """A reason fit for the lockfile and a terminal: no credentials, escaped, one short line."""
    reason = safe_message(reason)
    return reason if len(reason) <= _REASON_LIMIT else reason[: _REASON_LIMIT - 1] + "…"
