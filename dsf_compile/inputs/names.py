"""Names the compiler derives from the names users write, and the limits they meet.

A name in Git becomes part of a file name (``rendered/hub/dynamicscorers/<name>.yaml``,
``rendered/hub/placements/<namespace>/<kind>-<name>.yaml``,
``placements/optimized/<namespace>-<name>.yaml``) or of an object the compiler generates
(``optimize``'s ``<optimization>-<cluster>`` Placements and PlacementBindings, the
Placement a workload's ``placementRefs[0]`` names). Each derived name is defined here
once, and :func:`check_derived_names` checks, before anything is written, that

- no two objects derive the same file (one would silently overwrite the other), and no
  object derives the ``kustomization.yaml`` of its folder;
- a file name fits the 255 bytes a file system allows for one path component, with the
  bytes a writer adds for its temporary copy (``WRITER_AFFIX_BYTES``);
- a Placement's name fits a label value (63 characters): OCM labels the Placement's
  PlacementDecisions ``cluster.open-cluster-management.io/placement=<name>``, so a longer
  one never gets a decision; a Policy's namespace and name fit the governance
  framework's 62 characters.

Every problem is located at the field the name comes from, and a collision names both
objects. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from dsf_compile.edges.files import TEMP_NAME_EXTRA
from dsf_compile.inputs.shard_limits import shard_digits as digits_of
from dsf_contract.bounded_yaml import Pointer
from dsf_contract.problem import Problem
from dsf_contract.scores import OCM_CLUSTER_GROUP

if TYPE_CHECKING:
    from dsf_compile.inputs.located import Located
    from dsf_compile.inputs.settings import Settings
    from dsf_contract.bounded_yaml import Document

#: One path component (a file name) on Linux, macOS and Windows file systems, in bytes.
MAX_FILE_NAME_BYTES = 255
#: The most bytes a writer adds to a file's name for the temporary names it writes beside
#: it (``.NAME.<hex>.dsf-tmp`` and ``….dsf-old``, owned by :mod:`dsf_compile.edges.files`): every
#: derived file name is checked against ``MAX_FILE_NAME_BYTES - WRITER_AFFIX_BYTES``, and a
#: test renders the longest name allowed through the real writer.
WRITER_AFFIX_BYTES = TEMP_NAME_EXTRA
#: The longest file name the compiler derives from a name in Git.
MAX_DERIVED_FILE_NAME_BYTES = MAX_FILE_NAME_BYTES - WRITER_AFFIX_BYTES
#: A Policy's namespace and name together (the governance framework's webhook refuses
#: more: it names each replicated Policy ``<namespace>.<name>``, a label value of 63).
MAX_POLICY_NAME = 62
#: A label value; OCM puts a Placement's name in one on each of its PlacementDecisions.
MAX_PLACEMENT_NAME = 63
#: Where ``render`` writes the objects of ``placements/``, and ``optimize`` its plans.
PLACEMENTS_FOLDER = "hub/placements"
OPTIMIZED_FOLDER = "placements/optimized"
#: The file every rendered folder holds for kustomize: no object may be rendered to it.
KUSTOMIZATION = "kustomization.yaml"
_RENDERED = "rendered/"


def scorer_path(name: str) -> str:
    """Where ``render`` writes the DynamicScorer ``name`` (relative to ``rendered/``)."""
    return f"hub/dynamicscorers/{name}.yaml"


def placement_path(kind: str, namespace: str, name: str) -> str:
    """Where an object of ``placements/`` is rendered (relative to ``rendered/``)."""
    return f"{PLACEMENTS_FOLDER}/{namespace}/{kind.lower()}-{name}.yaml"


def optimized_path(namespace: str, name: str) -> str:
    """Where ``optimize`` writes the plan of PlacementOptimization ``namespace/name``."""
    return f"{OPTIMIZED_FOLDER}/{namespace}-{name}.yaml"


def plan_object_name(optimization: str, cluster: str) -> str:
    """The Placement and PlacementBinding that give ``cluster`` its configuration.

    Named after the cluster, not the Policy: a Policy shared by several clusters still
    gets one pair per cluster, and a change of configuration changes the binding's
    subject, not the objects' names.
    """
    return f"{optimization}-{cluster}"


def install_placement_name(addon_name: str) -> str:
    """The Placement with which OCM installs the agent (``addon.installStrategy: Placements``)."""
    return f"{addon_name}-install"


# --------------------------------------------------------------------- checks

_NAME: Pointer = ("metadata", "name")


class _Files:
    """Derived files seen so far: a second object deriving one is a collision."""

    def __init__(self, prefix: str, *, duplicates_reported: bool) -> None:
        self.prefix = prefix
        #: two objects of one kind, namespace and name are reported by validate already
        self.duplicates_reported = duplicates_reported
        self.owners: dict[str, tuple[str, Located[Any]]] = {}
        self.problems: list[Problem] = []

    def claim(self, path: str, located: Located[Any], what: str, pointer: Pointer = _NAME) -> None:
        shown = self.prefix + path
        file_name = path.rpartition("/")[2]
        size = len(file_name.encode())
        if file_name == KUSTOMIZATION:
            self.problems.append(
                located.problem(
                    pointer,
                    f"{what} would be rendered to {shown}, the kustomization of its folder "
                    "(render writes that file itself): choose another name",
                )
            )
        elif size > MAX_DERIVED_FILE_NAME_BYTES:
            value = _value_at(located, pointer)
            room = MAX_DERIVED_FILE_NAME_BYTES - (size - len(value.encode()))
            self.problems.append(
                located.problem(
                    pointer,
                    f"is {len(value)} characters: {what} would be written to {shown}, a file "
                    f"name of {size} bytes, and its temporary copy adds up to "
                    f"{WRITER_AFFIX_BYTES} where file systems allow {MAX_FILE_NAME_BYTES}; "
                    f"at most {room} characters here",
                )
            )
        elif path in self.owners:
            other_what, other = self.owners[path]
            if other_what == what and self.duplicates_reported:
                return
            line, _ = other.document.locate((*other.base, *_NAME))
            self.problems.append(
                located.problem(
                    pointer,
                    f"{what} would be written to {shown}, like {other_what} "
                    f"({other.document.path}:{line}): one would overwrite the other; rename one",
                )
            )
        else:
            self.owners[path] = (what, located)


def _value_at(located: Located[Any], pointer: Pointer) -> str:
    value: Any = located.model
    for part in pointer:
        value = value[part] if isinstance(part, int) else getattr(value, part)
    return str(value)


def _label(located: Located[Any]) -> str:
    meta = located.model.metadata
    namespace = getattr(meta, "namespace", None)
    return f"{located.model.kind} {namespace + '/' if namespace else ''}{meta.name}"


def check_derived_names(
    scorers: Sequence[Located[Any]],
    placement_objects: Sequence[Located[Any]],
    optimizations: Sequence[Located[Any]],
) -> list[Problem]:
    """Collisions and limits of every name derived from ``scorers/`` and ``placements/``."""
    rendered = _Files(_RENDERED, duplicates_reported=True)
    for located in scorers:
        rendered.claim(scorer_path(located.model.metadata.name), located, _label(located))
    for located in placement_objects:
        meta = located.model.metadata
        path = placement_path(located.model.kind, meta.namespace, meta.name)
        rendered.claim(path, located, _label(located))
    plans = _Files("", duplicates_reported=False)
    for located in optimizations:
        meta = located.model.metadata
        plans.claim(
            optimized_path(meta.namespace, meta.name), located, f"the plan of {_label(located)}"
        )
    problems = rendered.problems + plans.problems
    problems += _placement_names(placement_objects)
    problems += _generated_names(optimizations, placement_objects)
    return list(dict.fromkeys(problems))  # a workload two plans target is reported once


def _too_long_for_decisions(name: str) -> str:
    return (
        f"Placement name {name!r} is {len(name)} characters: OCM labels the Placement's "
        f"PlacementDecisions {OCM_CLUSTER_GROUP}/placement=<name>, and a label "
        f"value holds at most {MAX_PLACEMENT_NAME}, so it would never get a decision"
    )


def flux_crds_name(addon_name: str) -> str:
    """The Flux Kustomization that applies the CRDs before the rest."""
    return f"{addon_name}-crds"


def shard_application_name(addon_name: str, shard: str) -> str:
    """The Argo CD Application and Flux Kustomization of shard ``shard`` (``07``)."""
    return f"{addon_name}-shard-{shard}"


def addon_feature_label(addon_name: str) -> str:
    """The label OCM's registration agent sets on every ManagedCluster running the addon."""
    return f"feature.open-cluster-management.io/addon-{addon_name}"


#: A label value, and the name part of a label key (after the ``prefix/``).
MAX_LABEL = 63


def _derived_from_addon(settings: Settings, shard_digits: int) -> list[tuple[str, str, str]]:
    """``(name, what it is, why it must fit a label)`` of every name ``addonName`` derives."""
    addon = settings.addonName
    shard = shard_application_name(addon, "0" * shard_digits)
    found = [
        (
            flux_crds_name(addon),
            "the Flux Kustomization that applies the CRDs",
            "Flux labels every object it applies kustomize.toolkit.fluxcd.io/name=<name>",
        ),
        (
            shard,
            "a shard's Argo CD Application and Flux Kustomization",
            "Argo CD labels every object it applies app.kubernetes.io/instance=<name> "
            "(Flux kustomize.toolkit.fluxcd.io/name=<name>)",
        ),
        (
            addon_feature_label(addon).partition("/")[2],
            "the name part of the label key OCM sets on each cluster running the addon "
            f"({addon_feature_label(addon)})",
            "the name part of a label key holds at most 63 characters",
        ),
    ]
    if settings.addon.installStrategy == "Placements":
        found.append(
            (
                install_placement_name(addon),
                "the agent's install Placement",
                f"OCM labels its PlacementDecisions {OCM_CLUSTER_GROUP}/placement=<name>",
            )
        )
    return found


def check_settings_names(
    settings: Settings, document: Document | None, *, shard_digits: int | None = None
) -> list[Problem]:
    """The names ``addonName`` derives, each within the label it ends up in (63 characters).

    ``shard_digits``: the width of the shard numbers; by default that of a pinned
    ``render.shards``, or 2 (any fleet may grow into shards; ``render`` checks a wider
    number when the byte budget asks for more than 100 shards).
    """
    if document is None:
        return []  # the default addon name is short
    if shard_digits is None:
        pinned = settings.render.shards
        shard_digits = digits_of(pinned) if pinned else 2
    too_long = [
        (len(name), name, what, why)
        for name, what, why in _derived_from_addon(settings, shard_digits)
        if len(name) > MAX_LABEL
    ]
    if not too_long:
        return []
    size, name, what, why = max(too_long)  # the strictest: fixing it fixes every other
    room = MAX_LABEL - (size - len(settings.addonName))
    message = (
        f"{what} would be named {name!r}, {size} characters: {why}, and a label holds at "
        f"most {MAX_LABEL}; at most {room} characters here"
    )
    return [document.problem(("addonName",), message)]


def _placement_names(placement_objects: Iterable[Located[Any]]) -> list[Problem]:
    problems = []
    for located in placement_objects:
        meta, kind = located.model.metadata, located.model.kind
        if kind == "Placement" and len(meta.name) > MAX_PLACEMENT_NAME:
            problems.append(located.problem(_NAME, _too_long_for_decisions(meta.name)))
        elif kind == "Policy" and len(meta.name) + len(meta.namespace) > MAX_POLICY_NAME:
            room = MAX_POLICY_NAME - len(meta.namespace)
            problems.append(
                located.problem(
                    _NAME,
                    f"Policy name is {len(meta.name)} characters: the governance framework "
                    f"refuses a Policy whose namespace and name exceed {MAX_POLICY_NAME} "
                    f"together (it copies it as {meta.namespace}.<name> into each cluster's "
                    f"namespace, a label value); at most {room} characters here",
                )
            )
    return problems


def _generated_names(
    optimizations: Iterable[Located[Any]], placement_objects: Iterable[Located[Any]]
) -> list[Problem]:
    """The Placements each plan would write: per cluster, and per target workload."""
    workloads = {
        (o.model.metadata.namespace, o.model.metadata.name): o
        for o in placement_objects
        if o.model.kind == "ManifestWorkReplicaSet"
    }
    problems = []
    for located in optimizations:
        meta, spec = located.model.metadata, located.model.spec
        for index, cluster in enumerate(spec.clusters):
            name = plan_object_name(meta.name, cluster.name)
            if len(name) > MAX_PLACEMENT_NAME:
                problems.append(
                    located.problem(
                        ("spec", "clusters", index, "name"),
                        f"the plan would write a Placement and PlacementBinding {name!r} for "
                        f"this cluster: {_too_long_for_decisions(name)}; shorten the "
                        "PlacementOptimization's name",
                    )
                )
        for workload_name in spec.targetWorkloads:
            workload = workloads.get((meta.namespace, workload_name))
            if workload is None:
                continue  # check_optimizations reports it
            reference = workload.model.spec.placementRefs[0].name
            if len(reference) > MAX_PLACEMENT_NAME:
                problems.append(
                    workload.problem(
                        ("spec", "placementRefs", 0, "name"),
                        f"PlacementOptimization {meta.namespace}/{meta.name} would write this "
                        f"Placement: {_too_long_for_decisions(reference)}",
                    )
                )
    return problems
