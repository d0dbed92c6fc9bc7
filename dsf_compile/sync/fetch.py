"""Sync: scorers → lock entries. The only module of the compiler that touches the network.

For each scorer, ``configSyncMode: Full`` fetches ``spec.configURL`` and records the
``/config`` document; ``configSyncMode: None`` only checks ``<scheme>://<host>/healthz``.
Every scorer ends **Active** or **Inactive** with a short, deterministic reason (no
timings, no addresses that vary between runs), so an unchanged fleet gives an unchanged
lockfile.

CI fetches URLs taken from pull requests, so sync must not become a way to probe the
network: only ``http``/``https``, an optional host allow-list checked before every request
(redirect targets included), redirects followed by hand and only within the same
scheme + host + port, a response size cap enforced while streaming, and a time budget per
scorer that covers its retries. Requests run concurrently on one ``httpx.AsyncClient``,
bounded by a semaphore: plain http over :mod:`dsf_transport.plainhttp`, https over httpcore;
the transport is injectable so tests can pass their own.
"""

from __future__ import annotations

import asyncio
import fnmatch
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx
from pydantic import ValidationError

from dsf_compile.errors import SyncError, UsageError
from dsf_compile.inputs.scorer import DynamicScorer, DynamicScorerSpec
from dsf_compile.inputs.settings import SyncSettings
from dsf_compile.sync.lock import LockEntry, Lockfile, make_entry
from dsf_compile.untrusted import first_string_problem, has_credentials, safe_message
from dsf_contract.bounded_json import load_json
from dsf_contract.failures import RequestFailure
from dsf_contract.scoring_api import ScorerConfig
from dsf_transport.connect_to import (
    DEFAULT_PORTS,
    Address,
    ResolveError,
    parse_connect_to,
    parse_resolve_entry,
)
from dsf_transport.connect_transport import ConnectToTransport
from dsf_transport.http import (
    BodyTooLargeError,
    UserAgent,
    describe_failure,
    new_client,
    read_capped,
)
from dsf_transport.plainhttp import PlainHTTPTransport

__all__ = [
    "MAX_REDIRECTS",
    "ConnectTo",
    "Fetched",
    "format_progress",
    "parse_resolve_options",
    "parse_resolve_setting",
    "sync_lock",
]

ConnectTo = Mapping[tuple[str, int], tuple[str, int]]
"""``(host, port)`` as named in URLs → ``(address, port)`` to connect to instead."""

MAX_REDIRECTS = 5

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

# Backoff between attempts: 0.2 s, 0.4 s, 0.8 s ... capped, and never past the budget.
_BACKOFF_BASE = 0.2
_BACKOFF_CAP = 2.0
# Reasons end up in a reviewed lockfile and on a terminal: keep them one short line.
_REASON_LIMIT = 300

# ------------------------------------------------------------------- public API


@dataclass(frozen=True)
class Fetched:
    """The new lockfile, and which refreshed scorers could not be reached at all."""

    lock: Lockfile
    #: Failed at the connection level (refused, unreachable, name not resolved, timed
    #: out): what sync's unreachable-fleet guard counts. An HTTP error, a bad document or
    #: a TLS failure means the scorer was reached, and is not in here.
    unreachable: frozenset[str] = frozenset()


async def sync_lock(
    scorers: Sequence[DynamicScorer],
    previous: Lockfile,
    settings: SyncSettings,
    *,
    only: frozenset[str] | None = None,
    connect_to: ConnectTo | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Callable[[str, LockEntry], None] | None = None,
) -> Fetched:
    """Fetch every scorer's ``/config`` (or ``/healthz``): the new lockfile, and who was unreachable.

    ``only`` refreshes just the named scorers (``None`` or empty: all of them); the
    others keep their entry from ``previous`` unchanged, or stay without one. Entries of
    scorers no longer in ``scorers`` are dropped. The result's keys are sorted.

    ``connect_to`` works like curl's ``--connect-to``: a request whose URL names
    ``host:port`` opens its TCP connection to ``address:port2`` instead, while the URL,
    the ``Host`` header and, for ``https``, the TLS SNI name and the certificate check all
    keep the original host. The allow-list is checked against the host named in the URL,
    and the lockfile records URLs as written. Environment proxies are not used.

    At most ``settings.concurrency`` scorers are in flight. Each gets
    ``settings.timeoutSeconds`` from the moment it holds a slot, retries included, so a
    hanging scorer costs that much and delays no other. Connection errors, connect
    timeouts and 5xx answers are retried up to ``settings.retries`` times with backoff
    (0.2 s, 0.4 s, ... capped at 2 s) while the budget lasts; 4xx, bad documents,
    refused redirects and oversized bodies are final. An accepted request that gets no
    answer waits out the budget.

    ``transport`` replaces the default ``httpx.AsyncHTTPTransport`` (tests pass their
    own); it is not closed here. ``progress`` is called once per refreshed scorer, as
    soon as it finishes, with its name and new entry.

    A scorer that cannot be reached, answers wrongly or too slowly is Inactive with a
    reason; this never raises for that. It raises :class:`SyncError` only for misuse: a
    name in ``only`` that is not a scorer, or a scorer listed twice.
    """
    by_name = _by_name(scorers)
    selected = _selected(by_name, only)
    entries: dict[str, LockEntry] = {
        name: previous.scorers[name]
        for name in by_name
        if name not in selected and name in previous.scorers
    }
    unreachable: set[str] = set()
    if selected:
        semaphore = asyncio.Semaphore(settings.concurrency)

        async def refresh(name: str, client: httpx.AsyncClient) -> None:
            # The budget starts once the scorer holds a slot, so waiting for a slot
            # behind slow scorers never counts against it.
            async with semaphore:
                entry, reached = await _check_scorer(client, by_name[name].spec, settings)
            entries[name] = entry
            if not reached:
                unreachable.add(name)
            if progress is not None:
                progress(name, entry)

        async with (
            _open_client(settings, connect_to or {}, transport) as client,
            asyncio.TaskGroup() as group,
        ):
            for name in selected:
                group.create_task(refresh(name, client))
    lock = Lockfile(scorers={name: entries[name] for name in sorted(entries)})
    return Fetched(lock, frozenset(unreachable))


def _by_name(scorers: Sequence[DynamicScorer]) -> dict[str, DynamicScorer]:
    by_name: dict[str, DynamicScorer] = {}
    for scorer in scorers:
        name = scorer.metadata.name
        if name in by_name:
            raise SyncError(f"scorer {name!r} is listed twice")
        by_name[name] = scorer
    return by_name


def _selected(by_name: Mapping[str, DynamicScorer], only: frozenset[str] | None) -> list[str]:
    """The scorers to refresh, sorted: those of ``only``, or all of them."""
    if not only:
        return sorted(by_name)
    unknown = sorted(only - by_name.keys())
    if unknown:
        raise SyncError(
            f"no such scorer: {', '.join(unknown)}; known scorers are in scorers/*.yaml"
        )
    return sorted(only)


def parse_resolve_options(values: Iterable[str]) -> dict[Address, Address]:
    """Parse ``sync --resolve HOST:PORT:ADDR[:PORT]`` values; :class:`UsageError` when one
    is malformed (the agent parses its own ``--resolve`` with the same contract function)."""
    try:
        return parse_connect_to(values)
    except ResolveError as err:
        raise UsageError(str(err)) from err


def parse_resolve_setting(mapping: Mapping[str, str]) -> dict[Address, Address]:
    """Parse ``dsf.yaml`` ``sync.resolve`` (``{'host:port': 'addr[:port]'}``).

    Same meaning as :func:`parse_resolve_options`; raises :class:`SyncError` naming the bad key
    (``validate`` reports it first, at its line).
    """
    result: dict[Address, Address] = {}
    for key_text in sorted(mapping):
        where = f"sync.resolve[{key_text!r}]"
        try:
            key, target = parse_resolve_entry(key_text, mapping[key_text])
        except ValueError as err:
            raise SyncError(f"{where}: {err}") from err
        if result.get(key, target) != target:
            raise SyncError(f"{where}: {key[0]}:{key[1]} is mapped twice to different addresses")
        result[key] = target
    return result


def format_progress(name: str, entry: LockEntry, done: int, total: int) -> str:
    """One terminal line for a finished scorer: ``[ 3/12] sample-scorer  Active``.

    Inactive scorers carry their reason: ``[ 4/12] other  Inactive: GET ...: HTTP 500``.
    """
    counter = f"[{done:>{len(str(total))}}/{total}]"
    line = f"{counter} {name}  {entry.health}"
    return safe_message(f"{line}: {entry.reason}" if entry.reason else line)


# ------------------------------------------------------------------ one scorer


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


async def _check_scorer(
    client: httpx.AsyncClient, spec: DynamicScorerSpec, settings: SyncSettings
) -> tuple[LockEntry, bool]:
    """The scorer's entry, and whether it was reached (False: a connection-level failure)."""
    full = spec.configSyncMode == "Full"
    url = spec.configURL if full else _healthz_url(spec.configURL)
    budget = settings.timeoutSeconds
    timed_out = _clean(f"GET {url}: timed out after {_seconds(budget)} s")
    if has_credentials(url):
        # Sending it would hand the secret to whoever answers, and the reason would print it.
        reason = f"GET {url}: the URL carries credentials; refused (use auth.tokenSecretRef)"
        return make_entry(spec, healthy=False, reason=_clean(reason)), True
    try:
        async with asyncio.timeout(budget):
            config = await _fetch_with_retries(client, url, full=full, settings=settings)
    except TimeoutError:
        return make_entry(spec, healthy=False, reason=timed_out), False
    except _FetchFailedError as failure:
        # Whether httpx's timeout or the budget fired first is a race; both read the
        # same so the lockfile does not flap.
        reason = timed_out if failure.timeout else failure.reason
        return make_entry(spec, healthy=False, reason=_clean(reason)), not failure.unreachable
    return make_entry(spec, healthy=True, config=config), True


async def _fetch_with_retries(
    client: httpx.AsyncClient, url: str, *, full: bool, settings: SyncSettings
) -> ScorerConfig | None:
    loop = asyncio.get_running_loop()
    budget = settings.timeoutSeconds
    deadline = loop.time() + budget
    # Connecting gets an even share of the budget, so an unanswered SYN leaves room to
    # retry. Waiting for an accepted request's answer does not: cutting every attempt to
    # a share made a loaded machine time out a whole burst of slow-but-healthy scorers
    # at once and retry them all together. A silent server holds its scorer until the
    # budget ends (the caller's asyncio.timeout), which is all a retry could do too.
    timeout = httpx.Timeout(budget, connect=budget / (settings.retries + 1))
    attempt = 0
    while True:
        try:
            return await _fetch_once(client, url, full=full, settings=settings, timeout=timeout)
        except _FetchFailedError as failure:
            if attempt >= settings.retries or not failure.retry:
                raise
            delay = min(_BACKOFF_BASE * 2**attempt, _BACKOFF_CAP)
            if loop.time() + delay >= deadline:
                raise
        await asyncio.sleep(delay)
        attempt += 1


async def _fetch_once(
    client: httpx.AsyncClient,
    url: str,
    *,
    full: bool,
    settings: SyncSettings,
    timeout: httpx.Timeout,
) -> ScorerConfig | None:
    """One attempt: GET ``url``, following same-origin redirects by hand."""
    shown = url  # as written for the first hop, so reasons name the URL from Git
    try:
        current = httpx.URL(url)
    except httpx.InvalidURL as err:
        raise _FetchFailedError(f"GET {shown}: invalid URL") from err
    for _hop in range(MAX_REDIRECTS + 1):
        _check_target(current, shown, settings.allowedHosts)
        try:
            async with client.stream("GET", current, timeout=timeout) as response:
                status = response.status_code
                if status in _REDIRECT_STATUSES:
                    target = _redirect_target(current, shown, response)
                elif status != 200:
                    raise _FetchFailedError(f"GET {shown}: HTTP {status}", retry=status >= 500)
                elif not full:
                    return None
                else:
                    body = await _read_capped(response, shown, settings.maxResponseBytes)
                    return _parse_config(body, shown)
        except httpx.HTTPError as err:
            failure = describe_failure(err)
            assert failure is not None  # every httpx error is described
            raise _FetchFailedError(
                f"GET {shown}: {failure.words}",
                retry=failure.transient,
                timeout=failure.reason is RequestFailure.TIMEOUT,
                unreachable=failure.unreached,
            ) from err
        current, shown = target, str(target)
    raise _FetchFailedError(f"GET {url}: too many redirects (more than {MAX_REDIRECTS})")


def _check_target(url: httpx.URL, shown: str, allowed_hosts: Sequence[str]) -> None:
    if url.scheme not in DEFAULT_PORTS:
        raise _FetchFailedError(f"GET {shown}: only http and https URLs are allowed")
    if not url.host:
        raise _FetchFailedError(f"GET {shown}: the URL names no host")
    if allowed_hosts and not _host_allowed(url.host, allowed_hosts):
        raise _FetchFailedError(f"GET {shown}: host not in sync.allowedHosts")


def _host_allowed(host: str, patterns: Sequence[str]) -> bool:
    name = host.lower().rstrip(".")
    return any(fnmatch.fnmatchcase(name, pattern.lower().rstrip(".")) for pattern in patterns)


def _redirect_target(current: httpx.URL, shown: str, response: httpx.Response) -> httpx.URL:
    location = response.headers.get("location")
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


async def _read_capped(response: httpx.Response, shown: str, limit: int) -> bytes | bytearray:
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("", "identity"):
        # We ask for identity; decoding would let a small compressed body blow past the cap.
        raise _FetchFailedError(f"GET {shown}: unsupported Content-Encoding {encoding!r}")
    try:
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
    errors = sorted(
        err.errors(include_url=False, include_input=False), key=lambda e: [str(p) for p in e["loc"]]
    )
    first = errors[0]
    where = ".".join(str(part) for part in first["loc"]) or "(document)"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return f"{where}: {first['msg']}{more}"


def _healthz_url(config_url: str) -> str:
    parts = urlsplit(config_url)
    return f"{parts.scheme}://{parts.netloc}/healthz"


def _seconds(value: float) -> str:
    return f"{value:g}"


def _clean(reason: str) -> str:
    """A reason fit for the lockfile and a terminal: no credentials, escaped, one short line."""
    reason = safe_message(reason)
    return reason if len(reason) <= _REASON_LIMIT else reason[: _REASON_LIMIT - 1] + "…"


# --------------------------------------------------------------------- transport


@asynccontextmanager
async def _open_client(
    settings: SyncSettings, connect_to: ConnectTo, transport: httpx.AsyncBaseTransport | None
) -> AsyncIterator[httpx.AsyncClient]:
    tls: list[ssl.SSLContext] = []

    def make_transport() -> httpx.AsyncBaseTransport:
        # One TLS context (CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR) for every pool:
        # loading the CA bundle costs tens of milliseconds, so only a first https
        # request pays for it (and for importing httpcore).
        if not tls:
            tls.append(httpx.create_ssl_context())
        # The semaphore bounds concurrency; the pool must not add a second, smaller bound.
        return httpx.AsyncHTTPTransport(
            verify=tls[0],
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
        )

    if transport is None:
        # Plain http goes through the lean keep-alive transport: httpcore's pool rescans
        # every connection for each of hundreds of concurrent requests, and importing it
        # (with anyio, and trio when installed) costs a sync a tenth of a second.
        inner: httpx.AsyncBaseTransport = PlainHTTPTransport(
            _OnFirstUse(make_transport), max_idle_per_host=settings.concurrency
        )
    else:
        inner = transport
    wrapper = ConnectToTransport(
        inner,
        connect_to,
        owns_inner=transport is None,
        make_transport=make_transport if transport is None else None,
    )
    # Redirects are followed by hand, same origin only; no environment proxies or netrc:
    # sync connects where it is told. Each request carries its own timeout (the budget).
    client = new_client(
        UserAgent.SYNC,
        transport=wrapper,
        timeout=httpx.Timeout(settings.timeoutSeconds),
        headers={"Accept": "application/json", "Accept-Encoding": "identity"},
    )
    async with client:
        yield client


class _OnFirstUse(httpx.AsyncBaseTransport):
    """A transport made when the first request needs it (``https``), and closed if made."""

    def __init__(self, make: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self._make = make
        self._made: httpx.AsyncBaseTransport | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self._made is None:
            self._made = self._make()
        return await self._made.handle_async_request(request)

    async def aclose(self) -> None:
        if self._made is not None:
            await self._made.aclose()
