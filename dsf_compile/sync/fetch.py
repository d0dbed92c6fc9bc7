"""Sync: scorers → lock entries, every scorer refreshed concurrently within its budget.

For each scorer, ``configSyncMode: Full`` fetches ``spec.configURL`` and records the
``/config`` document; ``configSyncMode: None`` only checks ``<scheme>://<host>/healthz``.
Every scorer ends **Active** or **Inactive** with a short, deterministic reason (no
timings, no addresses that vary between runs), so an unchanged fleet gives an unchanged
lockfile. How one scorer is fetched, and what sync refuses to fetch, is
:mod:`dsf_compile.sync.refresh`; the client it goes through, :mod:`dsf_compile.sync.client`.

Concurrency and budgets: at most ``sync.concurrency`` scorers are in flight. Each gets
``sync.timeoutSeconds`` from the moment it holds a slot, retries included, so a hanging
scorer costs that much and delays no other; an accepted request that gets no answer waits
out the budget.

``--resolve`` (and ``sync.resolve``) work like curl's ``--connect-to``: a request whose URL
names ``host:port`` opens its TCP connection to ``address:port2`` instead, while the URL,
the ``Host`` header and, for ``https``, the TLS SNI name and the certificate check all keep
the original host. The allow-list is checked against the host named in the URL, and the
lockfile records URLs as written. Environment proxies are not used.

A scorer that cannot be reached, answers wrongly or too slowly is Inactive with a reason;
sync never raises for that, only for misuse (a name it does not know, a scorer listed twice).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dsf_compile.edges.untrusted import safe_message
from dsf_compile.errors import SyncError, UsageError
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_compile.sync.client import ConnectTo, SyncClient, open_client
from dsf_compile.sync.lock import LockEntry, Lockfile
from dsf_compile.sync.refresh import MAX_REDIRECTS, refresh_scorer
from dsf_transport.connect_to import (
    Address,
    ResolveError,
    parse_connect_to,
    parse_resolve_entry,
)

if TYPE_CHECKING:
    import httpx

__all__ = [
    "MAX_REDIRECTS",
    "ConnectTo",
    "Fetched",
    "format_progress",
    "parse_resolve_options",
    "parse_resolve_setting",
    "sync_lock",
]


@dataclass(frozen=True, repr=False)
class Fetched:
    """The new lockfile, and which refreshed scorers could not be reached at all."""

    lock: Lockfile
    #: Failed at the connection level (refused, unreachable, name not resolved, timed
    #: out): what sync's unreachable-fleet guard counts. An HTTP error, a bad document or
    #: a TLS failure means the scorer was reached, and is not in here.
    unreachable: frozenset[str] = frozenset()

    def __repr__(self) -> str:
        # Short: asyncio.run formats its task, result included, when it puts back the
        # SIGINT handler (Python 3.11's signal.getsignal), and the whole lockfile's repr
        # cost a 200-scorer sync 8 ms.
        return f"Fetched({len(self.lock.scorers)} scorers, {len(self.unreachable)} unreachable)"


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
    scorers no longer in ``scorers`` are dropped; the result's keys are sorted.
    ``connect_to`` is ``--resolve`` (see the module's docstring for it, the budgets and
    the retries). ``transport`` replaces the default (tests pass their own; it is not
    closed here); ``progress`` is called once per refreshed scorer as soon as it finishes.
    Raises :class:`SyncError` only for misuse: an unknown name in ``only``, a scorer twice.
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

        async def refresh(name: str, client: SyncClient) -> None:
            # The budget starts once the scorer holds a slot, so waiting for a slot
            # behind slow scorers never counts against it.
            async with semaphore:
                entry, reached = await refresh_scorer(client, by_name[name].spec, settings)
            entries[name] = entry
            if not reached:
                unreachable.add(name)
            if progress is not None:
                progress(name, entry)

        async with (
            open_client(settings, connect_to or {}, transport) as client,
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
