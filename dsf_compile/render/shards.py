"""Sharding past one Application: the per-cluster folders split into ``shards/<k>/``.

Pure. Argo CD's repo server sends one Application's whole manifest set in one gRPC message
(200 MiB at most by default) and the project holds every Application's and Flux
Kustomization's ``kubectl kustomize`` output to 64 MiB. What fills them is bytes, and a
cluster's objects weigh anything from a few KB to OCM's 500 KiB ManifestWork cap, so the
threshold is a byte budget: ``render.shardBytes`` (default 32 MiB, about 450 clusters of
100 scorers), the size of all per-cluster files together.

At or under the budget nothing changes: ``clusters/<c>/`` as always. Over it, the number of
shards is the smallest power of two that brings the average shard under the budget, and a
cluster's shard is its name's SHA-256 modulo that number. So:

- adding or removing a cluster rewrites its own folder and its shard's kustomization,
  nothing else — until the fleet's bytes cross a power of two of the budget (twice the
  fleet), when the count doubles (or halves) and each shard splits in two (or two merge):
  a cluster then moves only between a shard and its own half;
- the average shard stays between half the budget and the budget, and a hash spreads
  whole clusters evenly enough that no shard is far above it (``bench/shard_bench.py``
  measures the largest ``kubectl kustomize`` output at 10,000 clusters × 100 scorers).

A shard is ``shards/<k>/`` (``k`` zero-padded to a fixed width) holding whole cluster
folders and a ``kustomization.yaml`` listing them; it is not in the root kustomization:
the root keeps the CRDs and the hub objects, and each shard is an Application (or Flux
Kustomization) of its own (:mod:`dsf_compile.render.gitops`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

CLUSTERS_FOLDER = "clusters"
SHARDS_FOLDER = "shards"


@dataclass(frozen=True)
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
    width = max(2, len(str(count - 1)))
    return f"{SHARDS_FOLDER}/{index:0{width}d}"


def split_clusters(files: Mapping[str, str], budget: int) -> tuple[dict[str, str], Sharding]:
    """``files`` with every ``clusters/<c>/…`` moved into its shard, when over ``budget``.

    ``files`` holds objects only (no kustomization yet). Unchanged, with no shards, when
    the per-cluster files fit the budget.
    """
    prefix = CLUSTERS_FOLDER + "/"
    total = sum(
        len(text.encode("utf-8")) for path, text in files.items() if path.startswith(prefix)
    )
    count = shard_count(total, budget)
    if count == 1:
        return dict(files), UNSHARDED
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
