"""The guard on a change of the number of shards: no cluster leaves an applied shard unasked.

Every Argo CD Application and Flux Kustomization of ``rendered/`` prunes: an object that
leaves its path is deleted from the hub. When the number of shards changes, clusters
change folder, so the Application (or Kustomization) applying them now deletes their
ManifestWork and ManagedClusterAddOn — the agent is uninstalled, the cluster loses its
scores — and nothing applies them again until someone applies ``rendered/bootstrap/`` by
hand. So the count is a fact of ``dsf.yaml`` alone, never of the byte budget nor of what
``rendered/`` happens to hold (a fresh clone, a CI checkout, ``rm -rf rendered``):

- ``render.shards`` unset: one shard (``clusters/``); past ``render.shardBytes`` it is an
  error (``render``, ``render --check`` and ``diff`` exit 1, nothing is written) naming
  the count the budget asks for and, when ``rendered/`` holds clusters, the count they
  are in — pin one of them;
- ``render.shards`` set: the count it names is the explicit override, reviewed with
  ``dsf.yaml`` in the pull request; a render that moves clusters says so in a warning
  that points at the procedure (docs/gitops.md, "Changing the number of shards").

The tree as committed is also compared with (its ownership record says which folder holds
each cluster): removing ``render.shards`` from a sharded fleet is refused the same way.
"""

from __future__ import annotations

from pathlib import Path

from dsf_compile.edges.tree import Tree
from dsf_compile.errors import DsfError
from dsf_compile.inputs.validate import Inputs
from dsf_compile.render.record import read_owned
from dsf_compile.render.shards import (
    CLUSTERS_FOLDER,
    SHARDS_FOLDER,
    Reshard,
    cluster_folders,
    count_of,
    reshard,
    shard_count,
    shard_folder,
    shard_of,
)
from dsf_compile.render.shards import RESHARD_PROCEDURE as PROCEDURE
from dsf_contract.problem import Problem

_POINTER = ("render", "shards")


def applied_paths(folder: Path) -> set[str]:
    """The files the committed ``rendered/`` holds, as its ownership record lists them.

    Empty when there is no tree or record yet (nothing is applied); a record that cannot
    be read is left to the render's own reading of it, which reports it.
    """
    try:
        tree = Tree.open(folder, create=False)
    except (OSError, DsfError):
        return set()
    try:
        return read_owned(tree)[0] if tree.exists else set()
    except (OSError, DsfError):
        return set()
    finally:
        tree.close()


def check_reshard(
    applied: set[str], files: dict[str, str], inputs: Inputs
) -> tuple[list[Problem], list[Problem]]:
    """``(errors, warnings)`` of going from the ``applied`` tree to the rendered ``files``."""
    warnings = _over_budget(files, inputs)
    pinned = inputs.settings.render.shards
    unpinned = _unpinned_past_budget(applied, files, inputs) if pinned is None else []
    if unpinned:
        return unpinned, []
    change = reshard(applied, files)
    if change is None:
        return [], warnings
    if pinned is None and change.moved:
        return [inputs.settings_problem(_POINTER, _refusal(change))], []
    return [], [*warnings, inputs.settings_problem(_POINTER, _notice(change), "warning")]


def _over_budget(files: dict[str, str], inputs: Inputs) -> list[Problem]:
    """A pinned count whose average shard is past the budget: time to plan a move."""
    settings = inputs.settings.render
    if settings.shards is None:
        return []
    total = _object_bytes(files)
    if total <= settings.shards * settings.shardBytes:
        return []
    average = total / settings.shards / 2**20
    message = (
        f"the {settings.shards} shard{'s' if settings.shards > 1 else ''} pinned here average "
        f"{average:.1f} MiB of per-cluster objects, past render.shardBytes "
        f"({settings.shardBytes / 2**20:.1f} MiB); an Application past Argo CD's 200 MiB "
        f"stops syncing: plan a move to render.shards: {settings.shards * 2} ({PROCEDURE})"
    )
    return [inputs.settings_problem(_POINTER, message, "warning")]


def _object_bytes(files: dict[str, str]) -> int:
    """What the budget counts: the per-cluster objects, in ``clusters/`` or a shard."""
    return sum(
        len(text.encode("utf-8"))
        for path, text in files.items()
        if path.startswith((f"{CLUSTERS_FOLDER}/", f"{SHARDS_FOLDER}/"))
        and not path.endswith("/kustomization.yaml")
    )


def _unpinned_past_budget(
    applied: set[str], files: dict[str, str], inputs: Inputs
) -> list[Problem]:
    """With ``render.shards`` unset (one shard), per-cluster objects past the budget: the
    count to pin, never chosen here."""
    budget = inputs.settings.render.shardBytes
    size = _object_bytes(files)
    needed = shard_count(size, budget)
    if needed == 1:
        return []
    message = (
        f"the per-cluster objects ({size:,} bytes) are past render.shardBytes ({budget:,}), "
        f"which asks for {needed} shards; the budget never changes the number of shards on "
        "its own, since a cluster that changes shard leaves the Argo CD Application (Flux "
        "Kustomization) applying it, which prunes its ManifestWork and ManagedClusterAddOn: "
    )
    held = cluster_folders(applied)
    if held:
        now = count_of(applied)
        moved = {
            cluster: (folder, shard_folder(shard_of(cluster, needed), needed))
            for cluster, folder in sorted(held.items())
        }
        change = Reshard(now, needed, {c: m for c, m in moved.items() if m[0] != m[1]})
        moves = f" ({change.describe()})" if change.moved and now != needed else ""
        message += (
            f"keep the {now} shard{'s' if now > 1 else ''} rendered/ holds with "
            f"render.shards: {now}, or move on purpose with render.shards: {needed}{moves} "
            f"and follow {PROCEDURE}"
        )
    else:
        message += (
            f"pin it with render.shards: {needed} when no Application applies these "
            f"clusters yet, else with the count the applied tree has ({PROCEDURE})"
        )
    return [inputs.settings_problem(_POINTER, message)]


def _refusal(change: Reshard) -> str:
    return (
        "the per-cluster bytes against render.shardBytes change the number of shards, "
        f"{change.describe()}: the Argo CD "
        "Application or Flux Kustomization applying them now would prune (delete) their "
        "ManifestWorks and ManagedClusterAddOns, uninstalling the agent. Keep the layout "
        f"with render.shards: {change.before}, or move on purpose with render.shards: "
        f"{change.after} and follow {PROCEDURE}"
    )


_NOTICE = "the number of shards changes"


def _notice(change: Reshard) -> str:
    return (
        f"{_NOTICE}, {change.describe()}; apply rendered/bootstrap/ "
        f"again, with pruning off until every shard has synced ({PROCEDURE})"
    )


def is_reshard_notice(problem: Problem) -> bool:
    """Whether ``problem`` is the warning of a re-shard (true of one render only)."""
    return (
        problem.severity == "warning"
        and problem.field == "render.shards"
        and problem.message.startswith(_NOTICE)
    )
