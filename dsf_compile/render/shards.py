"""Sharding past one Application: the per-cluster folders split into ``shards/<k>/``.

Pure. Argo CD's repo server sends one Application's whole manifest set in one gRPC message
(200 MiB at most by default) and the project holds every Application's and Flux
Kustomization's ``kubectl kustomize`` output to 64 MiB. What fills them is bytes, and a
cluster's objects weigh anything from a few KB to OCM's 500 KiB ManifestWork cap, so the
threshold is a byte budget: ``render.shardBytes`` (default 32 MiB, about 450 clusters of
100 scorers), the size of all per-cluster files together.

At or under the budget nothing changes: ``clusters/<c>/`` as always. Over it, the number of
shards is the smallest power of two that brings the average shard under the budget (or
the power of two ``render.shards`` pins), and a cluster's shard is its name's SHA-256
modulo that number. So:

- adding or removing a cluster rewrites its own folder and its shard's kustomization,
  nothing else; when the count doubles (or halves) each shard splits in two (or two
  merge): a cluster then moves only between a shard and its own half;
- the average shard stays between half the budget and the budget, and a hash spreads
  whole clusters evenly enough that no shard is far above it (``bench/shard_bench.py``
  measures the largest ``kubectl kustomize`` output at 10,000 clusters × 100 scorers).

A shard is ``shards/<k>/`` (``k`` zero-padded to a fixed width) holding whole cluster
folders and a ``kustomization.yaml`` listing them; it is not in the root kustomization:
the root keeps the CRDs and the hub objects, and each shard is an Application (or Flux
Kustomization) of its own (:mod:`dsf_compile.render.gitops`).

A change of the count moves clusters out of the Application that applies them, which
then prunes their objects: ``render.shards`` pins the count, and :func:`reshard` is what
``render``, ``render --check`` and ``diff`` compare with the committed tree before they
let the count move (:mod:`dsf_compile.render.reshard`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from dsf_compile.inputs.shard_limits import shard_digits
from dsf_contract.records import frozen

CLUSTERS_FOLDER = "clusters"
SHARDS_FOLDER = "shards"
#: Where the procedure for a change of the count is; the messages point there.
RESHARD_PROCEDURE = "docs/gitops.md#changing-the-number-of-shards"


@frozen
class Sharding:
    """The shards of a fleet: their folders (relative to ``rendered/``), in order."""

    folders: tuple[str, ...] = ()

    @property
    def sharded(self) -> bool:
        return bool(self.folders)


#: A fleet within the budget: ``clusters/`` as always.
UNSHARDED = Sharding()


def shard_count(total_bytes: int, budget: int) -> int:
    """1 when ``total_bytes`` fits the budget, else the smallest power of two that does."""
    count = 1
    while total_bytes > count * budget:
        count *= 2
    return count


def shard_of(cluster: str, count: int) -> int:
    """The shard of ``cluster`` among ``count``: stable, and spread evenly by the hash."""
    digest = hashlib.sha256(cluster.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count


def shard_folder(index: int, count: int) -> str:
    return f"{SHARDS_FOLDER}/{index:0{shard_digits(count)}d}"


def cluster_bytes(files: Mapping[str, str]) -> int:
    """What the byte budget counts: every ``clusters/<c>/…`` file of an unsharded render."""
    prefix = CLUSTERS_FOLDER + "/"
    return sum(len(text.encode("utf-8")) for path, text in files.items() if path.startswith(prefix))


def split_clusters(files: Mapping[str, str], count: int) -> tuple[dict[str, str], Sharding]:
    """``files`` with every ``clusters/<c>/…`` moved into its shard among ``count``.

    ``files`` holds objects only (no kustomization yet). Unchanged, with no shards, when
    ``count`` is 1.
    """
    if count == 1:
        return dict(files), UNSHARDED
    prefix = CLUSTERS_FOLDER + "/"
    out: dict[str, str] = {}
    shard_by_cluster: dict[str, str] = {}
    for path, text in files.items():
        if not path.startswith(prefix):
            out[path] = text
            continue
        cluster, _, rest = path[len(prefix) :].partition("/")
        folder = shard_by_cluster.get(cluster)
        if folder is None:
            folder = shard_by_cluster[cluster] = shard_folder(shard_of(cluster, count), count)
        out[f"{folder}/{cluster}/{rest}"] = text
    # every shard exists, even one the hash left empty: the wiring lists them all
    return out, Sharding(tuple(shard_folder(index, count) for index in range(count)))


# ------------------------------------------------------------ a change of the count


def cluster_folders(paths: Iterable[str]) -> dict[str, str]:
    """Cluster → the folder that holds it (``clusters`` or ``shards/07``), from tree paths."""
    found: dict[str, str] = {}
    for path in paths:
        parts = path.split("/")
        if parts[0] == CLUSTERS_FOLDER and len(parts) >= 3:
            found.setdefault(parts[1], CLUSTERS_FOLDER)
        elif parts[0] == SHARDS_FOLDER and len(parts) >= 4:
            found.setdefault(parts[2], f"{parts[0]}/{parts[1]}")
    return found


def count_of(paths: Iterable[str]) -> int:
    """How many shards a tree with ``paths`` has: its shard kustomizations, or 1."""
    shards = {
        path.rpartition("/")[0]
        for path in paths
        if path.startswith(SHARDS_FOLDER + "/")
        and path.count("/") == 2
        and path.endswith("/kustomization.yaml")
    }
    return len(shards) or 1


@frozen
class Reshard:
    """A change of the number of shards between two trees, and the clusters it moves.

    ``moved``: cluster → (its folder before, its folder after), for every cluster in both
    trees whose folder differs: its objects leave the Application that applies them.
    """

    before: int
    after: int
    moved: dict[str, tuple[str, str]]

    def describe(self, limit: int = 3) -> str:
        """``1 → 2 shards: 31 clusters move (worker01: clusters → shards/01, …)``."""
        shown = ", ".join(
            f"{cluster}: {old} → {new}" for cluster, (old, new) in list(self.moved.items())[:limit]
        )
        more = ", …" if len(self.moved) > limit else ""
        many = "cluster moves" if len(self.moved) == 1 else "clusters move"
        what = f": {len(self.moved)} {many} ({shown}{more})" if self.moved else ""
        return f"{self.before} → {self.after} shard{'' if self.after == 1 else 's'}{what}"


def reshard(before: Iterable[str], after: Iterable[str]) -> Reshard | None:
    """The change of the shard count from the tree ``before`` to ``after``, or None."""
    before, after = list(before), list(after)
    old, new = count_of(before), count_of(after)
    if old == new:
        return None
    was, now = cluster_folders(before), cluster_folders(after)
    moved = {
        cluster: (folder, now[cluster])
        for cluster, folder in sorted(was.items())
        if cluster in now and now[cluster] != folder
    }
    return Reshard(old, new, moved)


def shard_of_path(path: str) -> str | None:
    """The shard a ``rendered/`` path lies in (``shards/07``), or None."""
    parts = path.split("/", 2)
    if len(parts) >= 3 and parts[0] == SHARDS_FOLDER:
        return f"{parts[0]}/{parts[1]}"
    return None


def files_by_shard(paths: Iterable[str]) -> dict[str, int]:
    """Shard → how many of ``paths`` lie in it, in shard order (for ``render --check``)."""
    counts: dict[str, int] = {}
    for path in paths:
        shard = shard_of_path(path)
        if shard is not None:
            counts[shard] = counts.get(shard, 0) + 1
    return dict(sorted(counts.items()))
