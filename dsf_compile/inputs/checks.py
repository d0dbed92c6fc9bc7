"""Every bad-input check of ``validate`` (and of ``render``), with the stage it runs in.

Read :data:`CHECKS` to know what the compiler refuses or warns about and when:

- ``load``: a file as bytes and YAML (:mod:`dsf_compile.inputs.load`, before any model);
- ``schema``: one document against its model, and what no document may hold;
- ``cross-file``: rules between documents, run by ``validate`` from this table, in order;
- ``resolve``: a scorer's summary, from its spec and the lockfile;
- ``render``: what only the rendered objects tell (sizes, the AddOnTemplate).

A ``cross-file`` check's ``run`` is the function ``validate`` calls with the
:class:`~dsf_compile.inputs.cross_file.CrossFile` view; the others run inside their stage,
and ``run`` names that function as ``module:function`` (a test imports each one), so
reading this table loads no stage it does not run.

The Placements' checks (score references, CEL, tolerations, coordinates, the
PlacementOptimizations) have their own registry, ``CHECKS`` of
:mod:`dsf_compile.placement.checks` (run by its ``check_placements`` and
``check_optimizations``), at the ``resolve`` stage, against the scores the scorers
publish, and only for a fleet with a ``placements/`` folder: named here, not imported,
so a fleet without Placements loads none of their models.

Where to add a check: write it where its stage reads what it needs, then add its row here;
its wording, when it is a pydantic error, goes to :mod:`dsf_contract.validation_errors`
(one wording for every reader of a document pydantic checks).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum

from dsf_compile.inputs import cross_file
from dsf_compile.inputs.cross_file import CrossFile
from dsf_contract.problem import Problem
from dsf_contract.records import frozen


class Stage(StrEnum):
    """When a check runs, in the order of the pipeline."""

    LOAD = "load"
    SCHEMA = "schema"
    CROSS_FILE = "cross-file"
    RESOLVE = "resolve"
    RENDER = "render"


#: What a cross-file check is: the view of every document read → its problems.
CrossFileRun = Callable[[CrossFile], list[Problem]]


@frozen
class InputCheck:
    """One bad-input check: its name, its stage, what it refuses (one line), and what runs it."""

    name: str
    stage: Stage
    what: str
    #: The function ``validate`` calls (``cross-file``), or ``module:function`` of the
    #: function its stage calls.
    run: CrossFileRun | str


_LOAD = "dsf_compile.inputs.load"
_SCHEMA = "dsf_compile.inputs.schema"
_SUMMARIES = "dsf_compile.resolve.summaries"

CHECKS: tuple[InputCheck, ...] = (
    # ------------------------------------------------------------------ load
    InputCheck(
        "folder",
        Stage.LOAD,
        "input folders are folders; names plain; no links, FIFOs or deep nesting",
        f"{_LOAD}:list_input_files",
    ),
    InputCheck(
        "file",
        Stage.LOAD,
        "each file readable, bounded in size, non-empty, well-formed bounded YAML",
        f"{_LOAD}:read_yaml_file",
    ),
    InputCheck(
        "debris",
        Stage.LOAD,
        "no journal or temporary file of dsf-compile's anywhere in the repository "
        "(validate, render --check)",
        "dsf_compile.edges.debris:debris_problems",
    ),
    # ---------------------------------------------------------------- schema
    InputCheck(
        "credentials",
        Stage.SCHEMA,
        "no token/password field, user:password@ URL or secret query parameter in Git",
        f"{_SCHEMA}:precheck",
    ),
    InputCheck(
        "model",
        Stage.SCHEMA,
        "each document valid against its kind's model (wording: dsf_contract/validation_errors.py)",
        f"{_SCHEMA}:validate_model",
    ),
    InputCheck(
        "kind-by-folder",
        Stage.SCHEMA,
        "scorers/, clusters/ and placements/ each hold only their kinds",
        "dsf_compile.inputs.collect:collect",
    ),
    InputCheck(
        "config-name",
        Stage.SCHEMA,
        "the DynamicScoringConfig is named as the framework reads it",
        "dsf_compile.inputs.collect:collect",
    ),
    InputCheck(
        "sync-resolve",
        Stage.SCHEMA,
        "dsf.yaml sync.resolve entries parse and map each address once",
        "dsf_compile.inputs.settings_checks:check_resolve_entries",
    ),
    # ------------------------------------------------------------ cross-file
    InputCheck(
        "unique-scorers",
        Stage.CROSS_FILE,
        "each scorer name once over scorers/",
        cross_file.check_unique_scorers,
    ),
    InputCheck(
        "scorer-namespace",
        Stage.CROSS_FILE,
        "a scorer's namespace, when written, is dsf.yaml hubNamespace",
        cross_file.check_scorer_namespaces,
    ),
    InputCheck(
        "external-secrets",
        Stage.CROSS_FILE,
        "every Secret a scorer names has a remote key, and every remote key a user",
        cross_file.check_secrets,
    ),
    InputCheck(
        "unique-clusters",
        Stage.CROSS_FILE,
        "each cluster name once over clusters/",
        cross_file.check_unique_clusters,
    ),
    InputCheck(
        "placement-objects",
        Stage.CROSS_FILE,
        "placements/ objects unique per kind and namespace; bindings named after their set",
        cross_file.check_placement_objects,
    ),
    InputCheck(
        "default-image",
        Stage.CROSS_FILE,
        "warn when agent.image would default to an image nothing publishes",
        cross_file.check_image,
    ),
    InputCheck(
        "derived-names",
        Stage.CROSS_FILE,
        "names derived from scorers/ and placements/ neither collide nor overflow",
        cross_file.check_object_names,
    ),
    InputCheck(
        "addon-names",
        Stage.CROSS_FILE,
        "every name addonName derives fits the label it ends up in",
        cross_file.check_addon_names,
    ),
    InputCheck(
        "one-config",
        Stage.CROSS_FILE,
        "one DynamicScoringConfig in clusters/",
        cross_file.check_one_config,
    ),
    InputCheck(
        "masks-select",
        Stage.CROSS_FILE,
        "each mask selects a cluster of a wholly read inventory",
        cross_file.check_masks_clusters,
    ),
    InputCheck(
        "overrides-select",
        Stage.CROSS_FILE,
        "each agent.overrides entry selects a cluster of a wholly read inventory",
        cross_file.check_overrides_clusters,
    ),
    InputCheck(
        "agent-resources",
        Stage.CROSS_FILE,
        "agent requests within limits: the fleet's, and each cluster's merged",
        cross_file.check_resources,
    ),
    # --------------------------------------------------------------- resolve
    InputCheck(
        "scorer-summary",
        Stage.RESOLVE,
        "each scorer resolves to a complete, valid summary (its /config, then its spec)",
        "dsf_compile.resolve.scorer:resolve_scorer",
    ),
    InputCheck(
        "spec-only-scorers",
        Stage.RESOLVE,
        "without the lockfile: configSyncMode None scorers resolve, masks name their scores",
        f"{_SUMMARIES}:check_spec_only_scorers",
    ),
    InputCheck(
        "unique-scores",
        Stage.RESOLVE,
        "no two scorers publish the same score name or AddOnPlacementScore name",
        f"{_SUMMARIES}:check_unique_scores",
    ),
    InputCheck(
        "synced-scorers",
        Stage.RESOLVE,
        "every Full scorer has a lockfile entry; masks name a score some scorer publishes",
        f"{_SUMMARIES}:check_synced_scorers",
    ),
    InputCheck(
        "lock-entries",
        Stage.RESOLVE,
        "render: entries match their spec (else sync again); warn on Inactive and orphan entries",
        f"{_SUMMARIES}:resolve_fleet",
    ),
    InputCheck(
        "prerequisites",
        Stage.RESOLVE,
        "info, once the inputs are valid: what the hub needs for the kinds of placements/",
        "dsf_compile.inputs.prerequisites:prerequisite_notes",
    ),
    # ---------------------------------------------------------------- render
    InputCheck(
        "template-variables",
        Stage.RENDER,
        "only the known {{VARIABLES}} in the AddOnTemplate, by dsf.yaml field",
        "dsf_compile.render.template_variables:check_template_variables",
    ),
    InputCheck(
        "shard-budget",
        Stage.RENDER,
        "render.shardBytes asks for at most the shards render makes; names fit with more digits",
        "dsf_compile.render.manifests:render_manifests",
    ),
    InputCheck(
        "manifestwork-size",
        Stage.RENDER,
        "each cluster's ManifestWork within OCM's size limit",
        "dsf_compile.render.manifests:render_cluster_works",
    ),
    InputCheck(
        "reshard",
        Stage.RENDER,
        "a change of the shard count prunes no cluster",
        "dsf_compile.render.reshard:check_reshard",
    ),
)


def cross_file_checks() -> tuple[InputCheck, ...]:
    """The checks ``validate`` runs over every document read, in the order of :data:`CHECKS`."""
    return tuple(check for check in CHECKS if check.stage is Stage.CROSS_FILE)


def run_cross_file(view: CrossFile) -> list[Problem]:
    """Every problem the cross-file checks find in ``view``, check after check."""
    problems: list[Problem] = []
    for check in cross_file_checks():
        if not isinstance(check.run, str):  # a cross-file row names no module (a test holds it)
            problems += check.run(view)
    return problems
