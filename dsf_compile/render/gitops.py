"""How Argo CD and Flux apply ``rendered/``: sync waves, kustomizations, bootstrap objects.

Pure. Layout of ``rendered/`` (``docs/gitops.md``, "What is in rendered/"):

- ``kustomization.yaml``      ``crds`` + ``fleet``: every object exactly once (Argo CD's view)
- ``crds/``                   the CustomResourceDefinitions (Flux's first Kustomization)
- ``fleet/kustomization.yaml`` every other top-level folder (``../hub``, ``../clusters``):
  Flux's second Kustomization, which ``dependsOn`` the first and never re-applies a CRD
- ``hub/``, ``clusters/<c>/`` the objects, one per file, a ``kustomization.yaml`` per folder
- ``bootstrap/argocd/``, ``bootstrap/flux/``  applied once by hand, outside the root kustomization
- ``shards/<k>/``             past ``render.shardBytes``, the cluster folders instead of ``clusters/``
  (:mod:`dsf_compile.render.shards`): each shard is an Application of Argo CD's
  ApplicationSet and a Flux Kustomization of its own, outside the root and ``fleet/``

Argo CD orders one sync by the ``argocd.argoproj.io/sync-wave`` annotation: CRDs, then
hub objects, then per-cluster configuration, then the ManagedClusterAddOns that use it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.inputs.names import flux_crds_name, shard_application_name
from dsf_compile.inputs.settings import Settings
from dsf_compile.render.labels import MANAGED_BY
from dsf_compile.render.shards import SHARDS_FOLDER, UNSHARDED, Sharding
from dsf_contract.fields import API_GROUP

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
WAVE_CRDS = "0"
WAVE_HUB = "1"
#: ManifestWorks and AddOnDeploymentConfigs: what a cluster's addon reads.
WAVE_CLUSTER_CONFIG = "2"
#: Placements and what goes with them: after the scorers whose scores they rank by.
WAVE_PLACEMENTS = "2"
#: ManagedClusterAddOns, after the AddOnDeploymentConfig they reference exists.
WAVE_CLUSTER_INSTALL = "3"

CRDS_FOLDER = "crds"
FLEET_FOLDER = "fleet"
BOOTSTRAP_FOLDER = "bootstrap"
KUSTOMIZE_API_VERSION = "kustomize.config.k8s.io/v1beta1"
ARGOCD_NAMESPACE = "argocd"
#: The label the ApplicationSet's RollingSync steps select: ``hub``, then ``clusters``.
_STAGE_LABEL = f"{API_GROUP}/stage"
FLUX_NAMESPACE = "flux-system"


def gitops_annotations(wave: str, *, crd_in_same_sync: bool = False) -> dict[str, str]:
    """The Argo CD annotations of an object in ``wave``.

    ``crd_in_same_sync``: the object's CRD is created by the same sync, so Argo CD's dry
    run, which runs before any wave, cannot know the kind yet and must skip it.
    """
    annotations = {SYNC_WAVE: wave}
    if crd_in_same_sync:
        annotations[SYNC_OPTIONS] = "SkipDryRunOnMissingResource=true"
    return annotations


def gitops_metadata(name: str, wave: str, namespace: str | None = None) -> dict[str, Any]:
    """The metadata of an object the GitOps tool applies in ``wave``: its name (and
    namespace), the compiler's labels and the wave's annotations."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = dict(MANAGED_BY)
    metadata["annotations"] = gitops_annotations(wave)
    return metadata


def _kustomization(resources: Iterable[str]) -> str:
    return _kustomization_text(tuple(sorted(resources)))


@lru_cache(maxsize=256)
def _kustomization_text(resources: tuple[str, ...]) -> str:
    # Every cluster folder lists the same few files: encode each distinct list once.
    return dump_yaml(
        {
            "apiVersion": KUSTOMIZE_API_VERSION,
            "kind": "Kustomization",
            "resources": sorted(resources),
        }
    )


def render_kustomizations(files: Iterable[str], sharding: Sharding = UNSHARDED) -> dict[str, str]:
    """A ``kustomization.yaml`` for every folder of ``files``, plus the root and ``fleet/`` ones.

    Folders list their files and sub-folders; the root lists ``crds`` and ``fleet``;
    ``fleet`` lists every other top-level folder. ``bootstrap/`` is left out of the root,
    and so is ``shards/``: each shard is applied on its own, and has a kustomization even
    when the hash gave it no cluster.
    """
    paths = [p for p in files if p.split("/", 1)[0] != BOOTSTRAP_FOLDER]
    entries: dict[str, set[str]] = {}
    for path in paths:
        folder, name = posixpath.split(path)
        if name == "kustomization.yaml" or not folder:
            continue
        entries.setdefault(folder, set()).add(name)
        while True:
            parent, child = posixpath.split(folder)
            if not parent:
                break
            entries.setdefault(parent, set()).add(child)
            folder = parent
    top = {path.split("/", 1)[0] for path in paths if "/" in path}
    entries.pop(SHARDS_FOLDER, None)
    for folder in sharding.folders:
        entries.setdefault(folder, set())
    out = {
        posixpath.join(folder, "kustomization.yaml"): _kustomization(names)
        for folder, names in entries.items()
    }
    others = sorted(top - {CRDS_FOLDER, FLEET_FOLDER, BOOTSTRAP_FOLDER, SHARDS_FOLDER})
    out[f"{FLEET_FOLDER}/kustomization.yaml"] = _kustomization(f"../{name}" for name in others)
    out["kustomization.yaml"] = _kustomization([CRDS_FOLDER, FLEET_FOLDER])
    return out


# ------------------------------------------------------------------ bootstrap


def _repository_path(settings: Settings, *parts: str) -> str:
    path = settings.repository.path.strip("/")
    path = path.removeprefix("./") or "."
    return posixpath.join(path, *parts)


def argocd_application(settings: Settings) -> dict[str, Any]:
    """The Argo CD Application that syncs ``rendered/`` (its waves order the objects)."""
    repository = settings.repository
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {"name": settings.addonName, "namespace": ARGOCD_NAMESPACE},
        "spec": {
            "project": "default",
            "source": {
                "repoURL": repository.url,
                "targetRevision": repository.branch,
                "path": _repository_path(settings),
            },
            "destination": {"server": "https://kubernetes.default.svc"},
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "retry": {
                    "limit": 5,
                    "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"},
                },
            },
        },
    }


def argocd_application_set(settings: Settings, sharding: Sharding) -> dict[str, Any]:
    """The ApplicationSet of a sharded fleet: the hub's Application, then one per shard.

    A list generator names every Application: ``<addon>`` syncs the root (CRDs and hub
    objects, ordered by their waves, as the single Application does below the
    threshold), ``<addon>-shard-<k>`` one shard each. With Argo CD's progressive syncs
    enabled, the RollingSync strategy syncs the shards only once the hub's Application
    is healthy (after the CRDs); without it, every Application syncs at once, and a
    shard, which holds only OCM's kinds (no CRD of ours), retries until the hub's addon
    objects exist.
    """
    repository = settings.repository
    name = settings.addonName
    stage = _STAGE_LABEL
    elements = [{"name": name, "path": _repository_path(settings), "stage": "hub"}]
    elements += [
        {
            "name": shard_application_name(name, posixpath.basename(folder)),
            "path": _repository_path(settings, folder),
            "stage": "clusters",
        }
        for folder in sharding.folders
    ]
    application = argocd_application(settings)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": ARGOCD_NAMESPACE},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            "strategy": {
                "type": "RollingSync",
                "rollingSync": {
                    "steps": [
                        {"matchExpressions": [{"key": stage, "operator": "In", "values": [s]}]}
                        for s in ("hub", "clusters")
                    ]
                },
            },
            "template": {
                "metadata": {"name": "{{.name}}", "labels": {stage: "{{.stage}}"}},
                "spec": {
                    **application["spec"],
                    "source": {
                        "repoURL": repository.url,
                        "targetRevision": repository.branch,
                        "path": "{{.path}}",
                    },
                },
            },
        },
    }


def flux_objects(settings: Settings, sharding: Sharding = UNSHARDED) -> dict[str, dict[str, Any]]:
    """File name → the GitRepository and the Flux Kustomizations (CRDs, then the rest).

    Sharded, one more Kustomization per shard, after both the CRDs' and the hub's.
    """
    repository = settings.repository
    name = settings.addonName
    source_ref = {"kind": "GitRepository", "name": name}

    def kustomization(object_name: str, folder: str, extra: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
            "kind": "Kustomization",
            "metadata": {"name": object_name, "namespace": FLUX_NAMESPACE},
            "spec": {
                "interval": "10m",
                "retryInterval": "1m",
                "sourceRef": source_ref,
                "path": "./" + _repository_path(settings, folder),
                "prune": True,
                **extra,
            },
        }

    objects = {
        "gitrepository.yaml": {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": name, "namespace": FLUX_NAMESPACE},
            "spec": {"interval": "1m", "url": repository.url, "ref": {"branch": repository.branch}},
        },
        # wait: the second Kustomization starts only once the CRDs are Established.
        "kustomization-crds.yaml": kustomization(flux_crds_name(name), CRDS_FOLDER, {"wait": True}),
        "kustomization-fleet.yaml": kustomization(
            name, FLEET_FOLDER, {"dependsOn": [{"name": flux_crds_name(name)}]}
        ),
    }
    after = {"dependsOn": [{"name": flux_crds_name(name)}, {"name": name}]}
    for folder in sharding.folders:
        shard = posixpath.basename(folder)
        objects[f"kustomization-shard-{shard}.yaml"] = kustomization(
            shard_application_name(name, shard), folder, after
        )
    return objects


def render_bootstrap(settings: Settings, sharding: Sharding = UNSHARDED) -> dict[str, str]:
    """``bootstrap/argocd/`` and ``bootstrap/flux/``, each with its own ``kustomization.yaml``.

    Sharded, Argo CD's folder holds the ApplicationSet instead of the Application (the
    set makes an Application of the same name for the hub).
    """
    argocd = (
        {"applicationset.yaml": argocd_application_set(settings, sharding)}
        if sharding.sharded
        else {"application.yaml": argocd_application(settings)}
    )
    folders: dict[str, dict[str, dict[str, Any]]] = {
        f"{BOOTSTRAP_FOLDER}/argocd": argocd,
        f"{BOOTSTRAP_FOLDER}/flux": flux_objects(settings, sharding),
    }
    files = {}
    for folder, objects in folders.items():
        for name, obj in objects.items():
            files[f"{folder}/{name}"] = dump_yaml(obj)
        files[f"{folder}/kustomization.yaml"] = _kustomization(objects)
    return files
