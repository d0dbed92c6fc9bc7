"""The fleet-wide guards: a sync that would lose most of the fleet writes nothing.

The unreachable-fleet guard: a runner that reaches none of the scorers writes nothing.

A scheduled sync on a machine that cannot reach the scorers (a runner outside the
fleet's network, a DNS outage) would otherwise record every scorer Inactive, and the
render after it would propose removing the whole fleet. So when more than
``sync.maxUnreachableFraction`` of the scorers that are Active in the current lockfile,
among those this sync refreshed, fail at the connection level (refused, unreachable,
name not resolved, timed out), sync writes nothing and exits 1; ``--allow-mass-failure``
records them Inactive all the same, once.

Only scorers this sync contacted count: ``sync NAME`` says nothing about the others. A
scorer that was already Inactive, or new, has nothing to lose and does not count either.
So with one Active scorer, its connection failure trips the guard (nothing tells this
machine's fault from the scorer's); with two, one failing is half, not more than half,
and it goes Inactive.

The mass-removal guard (``sync --clusters``): a hub that lists no clusters, or far fewer
than ``clusters/discovered.yaml`` holds (a wrong kubeconfig, a hub restored from an old
backup, an API server answering an empty list), would empty the inventory, and the render
after it would remove the whole fleet. When more than ``sync.maxClusterRemovalFraction``
of the clusters in the file would go, nothing is written and sync exits 1;
``--allow-mass-removal`` removes them all the same, once. With one cluster in the file its
removal trips the guard, as one unreachable Active scorer does.
"""

from __future__ import annotations

from collections.abc import Iterable, Set

from dsf_compile.sync.lock import Lockfile

__all__ = ["mass_removal", "unreachable_fleet"]


def unreachable_fleet(
    previous: Lockfile, refreshed: Iterable[str], unreachable: Iterable[str], fraction: float
) -> tuple[tuple[str, ...], int]:
    """The Active scorers lost to connection failures when they are too many, and how many could be.

    Returns ``((), counted)`` when the guard holds, ``(names, counted)`` when it trips:
    ``names`` sorted, ``counted`` the refreshed scorers that were Active before.
    """
    was_active = sorted(
        name
        for name in set(refreshed)
        if name in previous.scorers and previous.scorers[name].health == "Active"
    )
    failed = set(unreachable)
    lost = tuple(name for name in was_active if name in failed)
    if lost and len(lost) > fraction * len(was_active):
        return lost, len(was_active)
    return (), len(was_active)


def mass_removal(before: Set[str], after: Set[str], fraction: float) -> tuple[str, ...]:
    """The clusters in ``before`` but not ``after``, sorted, when they are too many; else ()."""
    removed = tuple(sorted(before - after))
    if removed and len(removed) > fraction * len(before):
        return removed
    return ()
