"""Every rendered object against the real schemas, and ``rendered/`` through real kustomize.

- OCM kinds: the ``openAPIV3Schema`` of their upstream CRD (``../shared/ocm-crds/``, or
  ``DSF_OCM_CRDS``: ``.ci/fetch-ocm-crds.sh``).
- Our DynamicScorer / DynamicScoringConfig: the CRDs the compiler itself renders.
- Built-in kinds: the Kubernetes schemas bundled with ``kubernetes-validate`` (loaded once
  per kind, validated with ``jsonschema`` directly; its per-call API re-reads the files).
- Objects nested in the AddOnTemplate's and the ManifestWorks' manifests, too.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from dsf_compile.inputs.placements import PlacementBinding, Policy
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.manifests import render_manifests
from dsf_compile.render.write import write_tree
from tests.crd_models import MODELS, model_errors
from tests.day2_fleet import DAY2_SETTINGS, day2_fleet
from tests.fleet_repo import EXAMPLE_FLEET, OCM_CRDS, copy_fleet
from tests.rendered_checks import crd_validators, identity, kustomize, ocm_validators

OVERRIDES = """\
agent:
  serviceMonitor: true
  overrides:
    - clusterName: edge01
      nodeSelector:
        node-role.kubernetes.io/edge: ""
      tolerations:
        - {key: edge, operator: Exists, effect: NoSchedule}
      resources:
        limits: {memory: 128Mi}
      proxy:
        httpProxy: http://proxy.edge.example:3128
        httpsProxy: http://proxy.edge.example:3128
        noProxy: .svc,.cluster.local,10.0.0.0/8
    - clusterSelector:
        matchLabels: {region: eu-west}
      image: registry.eu.example/dsf/dsf-agent:0.1.0
"""

# ------------------------------------------------------------------- fleets


def render_fleet(root: Path) -> dict[str, str]:
    return render_manifests(plan_fleet(root))


@cache
def example_files() -> dict[str, str]:
    return render_fleet(EXAMPLE_FLEET)


@pytest.fixture(scope="module")
def override_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_fleet(tmp_path_factory.mktemp("override"), with_rendered=False)
    (root / "dsf.yaml").write_text(OVERRIDES, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def day2_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    settings = DAY2_SETTINGS + "addon:\n  installStrategy: Placements\n"
    return day2_fleet(tmp_path_factory.mktemp("day2") / "fleet", settings)


def fleet_files(name: str, override_root: Path, day2_root: Path) -> dict[str, str]:
    if name == "example":
        return example_files()
    return render_fleet(override_root if name == "override" else day2_root)


@pytest.fixture(scope="module", params=["example", "override", "day2"])
def files(request: pytest.FixtureRequest, override_root: Path, day2_root: Path) -> dict[str, str]:
    return fleet_files(request.param, override_root, day2_root)


def objects_of(files: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    """(where, object) for every rendered object, nested manifests included."""
    out = []
    for path, text in files.items():
        if path.endswith("kustomization.yaml"):
            continue
        obj = yaml.safe_load(text)
        out.append((path, obj))
        if obj["kind"] == "AddOnTemplate":
            manifests = obj["spec"]["agentSpec"]["workload"]["manifests"]
        elif obj["kind"] == "ManifestWork":
            manifests = obj["spec"]["workload"]["manifests"]
        else:
            continue
        out += [(f"{path} manifests[{i}]", m) for i, m in enumerate(manifests)]
    return out


# ---------------------------------------------------------- OpenAPI schemas


def own_validators(files: dict[str, str]) -> dict[tuple[str, str], jsonschema.Validator]:
    return crd_validators(
        [
            yaml.safe_load(text)
            for path, text in files.items()
            if path.startswith("crds/") and not path.endswith("kustomization.yaml")
        ]
    )


# ------------------------------------------------------- Kubernetes schemas

_SCHEMAS = resources.files("kubernetes_validate") / "kubernetes-json-schema"


@cache
def _schema_folder() -> str:
    strict = [p.name for p in _SCHEMAS.iterdir() if p.name.endswith("-local-strict")]
    return max(strict, key=lambda name: tuple(int(n) for n in name[1:].split("-")[0].split(".")))


@cache
def _definitions() -> Registry:
    folder = _SCHEMAS / _schema_folder()
    definitions = json.loads((folder / "_definitions.json").read_text(encoding="utf-8"))
    return Resource.from_contents(definitions) @ Registry()


@cache
def builtin_validator(api_version: str, kind: str) -> jsonschema.Validator:
    """The strict schema of a built-in kind, from kubernetes-validate's files, compiled once."""
    group_version = api_version.split("/")
    name = (
        group_version[0]
        if len(group_version) == 1
        else f"{group_version[0].split('.')[0]}-{group_version[1]}"
    )
    schema = json.loads(
        (_SCHEMAS / _schema_folder() / f"{kind.lower()}-{name}.json").read_text(encoding="utf-8")
    )
    registry = Resource.from_contents(schema) @ _definitions()
    return jsonschema.Draft202012Validator(schema, registry=registry)


BUILTIN_KINDS = {
    "Namespace",
    "ServiceAccount",
    "Role",
    "RoleBinding",
    "ClusterRole",
    "ClusterRoleBinding",
    "Deployment",
    "Service",
    "ConfigMap",
    "CustomResourceDefinition",
}
OCM_KINDS = {
    "ManifestWork",
    "ClusterManagementAddOn",
    "AddOnTemplate",
    "ManagedClusterAddOn",
    "AddOnDeploymentConfig",
    "Placement",
    "ManagedClusterSetBinding",
    "ManifestWorkReplicaSet",
}
#: Governance kinds: no CRD in the shared folder; checked by the model of their documented fields.
POLICY_KINDS: dict[str, type[Policy | PlacementBinding]] = {
    "Policy": Policy,
    "PlacementBinding": PlacementBinding,
}
#: Rendered only with some settings (overrides, addon.installStrategy: Placements).
OPTIONAL_OCM_KINDS = {"AddOnDeploymentConfig", "Placement", "ManagedClusterSetBinding"}
OWN_KINDS = {"DynamicScorer", "DynamicScoringConfig"}
#: No schema is available offline; their shape is checked by hand below.
BOOTSTRAP_KINDS = {"Application", "GitRepository", "Kustomization"}


def _errors(validator: jsonschema.Validator, obj: dict[str, Any]) -> list[str]:
    return sorted(
        f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(obj)
    )


# ---------------------------------------------------------------------- tests


def test_every_object_validates_against_its_schema(files: dict[str, str]) -> None:
    if not OCM_CRDS.is_dir():
        pytest.skip(
            f"the upstream OCM CRDs are not here ({OCM_CRDS}): .ci/fetch-ocm-crds.sh DIR, then DSF_OCM_CRDS=DIR"
        )
    own = own_validators(files)
    problems = {}
    seen: Counter[str] = Counter()
    for where, obj in objects_of(files):
        kind, api_version = obj["kind"], obj["apiVersion"]
        seen[kind] += 1
        if kind in OCM_KINDS:
            validator = ocm_validators()[(api_version, kind)]
        elif kind in OWN_KINDS:
            validator = own[(api_version, kind)]
        elif kind in BUILTIN_KINDS:
            validator = builtin_validator(api_version, kind)
        elif kind == "ServiceMonitor":
            check_service_monitor(obj)
            continue
        elif kind in POLICY_KINDS:
            POLICY_KINDS[kind].model_validate(obj)
            continue
        elif (api_version, kind) in MODELS:
            errors = model_errors(obj)
            if errors:
                problems[where] = errors
            continue
        elif kind in BOOTSTRAP_KINDS and where.startswith("bootstrap/"):
            continue  # test_bootstrap_objects
        else:
            raise AssertionError(f"{where}: no schema for {api_version} {kind}")
        errors = _errors(validator, obj)
        if errors:
            problems[where] = errors
    assert problems == {}
    # Every kind the issue lists was actually rendered and validated.
    assert OCM_KINDS - {"AddOnDeploymentConfig"} <= set(seen)
    assert set(seen) >= set(POLICY_KINDS)
    assert set(seen) >= BUILTIN_KINDS
    assert set(seen) >= OWN_KINDS


def test_override_case_renders_deployment_configs_and_service_monitor(override_root: Path) -> None:
    files = render_fleet(override_root)
    assert {
        "clusters/edge01/addondeploymentconfig.yaml",
        "clusters/worker01/addondeploymentconfig.yaml",
    } <= set(files)
    assert "clusters/worker02/addondeploymentconfig.yaml" not in files
    assert "kind: ServiceMonitor" in files["hub/addon/addontemplate.yaml"]


def check_service_monitor(obj: dict[str, Any]) -> None:
    assert obj["apiVersion"] == "monitoring.coreos.com/v1"
    spec = obj["spec"]
    assert spec["selector"]["matchLabels"]
    assert [e["port"] for e in spec["endpoints"]] == ["metrics"]


def test_the_schema_check_catches_a_mistake() -> None:
    """The strict conversion is not vacuous: a misplaced field fails."""
    if not OCM_CRDS.is_dir():
        pytest.skip(f"the upstream OCM CRDs are not here ({OCM_CRDS})")
    mca = yaml.safe_load(example_files()["clusters/edge01/managedclusteraddon.yaml"])
    broken = copy.deepcopy(mca)
    broken["spec"]["installNamespaces"] = "typo"
    validator = ocm_validators()[(mca["apiVersion"], mca["kind"])]
    assert _errors(validator, mca) == []
    assert _errors(validator, broken)
    deployment = next(o for _, o in objects_of(example_files()) if o["kind"] == "Deployment")
    broken = copy.deepcopy(deployment)
    broken["spec"]["template"]["spec"]["containers"][0]["securityContext"]["runAsNonRot"] = True
    assert _errors(builtin_validator("apps/v1", "Deployment"), broken)


def test_the_day2_fleet_renders_every_optional_kind(day2_root: Path) -> None:
    kinds = {obj["kind"] for _, obj in objects_of(render_fleet(day2_root))}
    assert OPTIONAL_OCM_KINDS | {"ExternalSecret", "PrometheusRule", "ServiceMonitor"} <= kinds


def test_the_models_catch_a_mistake(day2_root: Path) -> None:
    """The third-party models are not vacuous: a misplaced field fails each of them."""
    found = {
        obj["kind"]: obj
        for _, obj in objects_of(render_fleet(day2_root))
        if (obj["apiVersion"], obj["kind"]) in MODELS
    }
    assert set(found) == {"ExternalSecret", "PrometheusRule"}
    for obj in found.values():
        assert model_errors(obj) == []
    secret = copy.deepcopy(found["ExternalSecret"])
    secret["spec"]["secretStoreRef"]["kind"] = "Vault"
    assert model_errors(secret)
    rule = copy.deepcopy(found["PrometheusRule"])
    rule["spec"]["groups"][0]["rules"][0]["for"] = "5m"  # a recording rule has no for
    assert model_errors(rule)


def test_objects_are_written_without_yaml_aliases(files: dict[str, str]) -> None:
    # Anchors are valid YAML but unreadable in review, and some tools reject them.
    assert [p for p, t in files.items() if "&id0" in t or "*id0" in t] == []


# -------------------------------------------------------------- ordering


def test_sync_waves_put_crds_first_then_hub_then_clusters(files: dict[str, str]) -> None:
    waves: dict[str, set[int]] = {
        "crds": set(),
        "hub": set(),
        "clusters": set(),
        "placements": set(),
    }
    for path, obj in objects_of(files):
        top = "placements" if path.startswith("hub/placements/") else path.split("/", 1)[0]
        if top not in waves or " manifests[" in path:
            continue
        annotations = obj["metadata"].get("annotations", {})
        waves[top].add(int(annotations["argocd.argoproj.io/sync-wave"]))
    assert max(waves["crds"]) < min(waves["hub"])
    assert max(waves["hub"]) < min(waves["clusters"])
    # Placements come after the scorers whose scores they rank by
    assert not waves["placements"] or max(waves["hub"]) < min(waves["placements"])


def test_skip_dry_run_exactly_on_our_own_custom_resources(files: dict[str, str]) -> None:
    skipping = {
        obj["kind"]
        for path, obj in objects_of(files)
        if " manifests[" not in path
        and obj["metadata"].get("annotations", {}).get("argocd.argoproj.io/sync-options")
        == "SkipDryRunOnMissingResource=true"
    }
    assert skipping == OWN_KINDS


def test_bootstrap_objects_point_at_this_repository(override_root: Path) -> None:
    files = render_fleet(override_root)
    application = yaml.safe_load(files["bootstrap/argocd/application.yaml"])
    assert application["kind"] == "Application"
    assert application["spec"]["source"] == {
        "repoURL": "https://github.com/example/dsf-fleet.git",
        "targetRevision": "main",
        "path": "rendered",
    }
    flux = {
        p: yaml.safe_load(t)
        for p, t in files.items()
        if p.startswith("bootstrap/flux/") and not p.endswith("/kustomization.yaml")
    }
    source = flux["bootstrap/flux/gitrepository.yaml"]
    crds = flux["bootstrap/flux/kustomization-crds.yaml"]
    fleet = flux["bootstrap/flux/kustomization-fleet.yaml"]
    assert source["spec"]["ref"] == {"branch": "main"}
    assert crds["spec"]["path"] == "./rendered/crds" and crds["spec"]["wait"] is True
    assert fleet["spec"]["path"] == "./rendered/fleet"
    assert fleet["spec"]["dependsOn"] == [{"name": crds["metadata"]["name"]}]
    for layer in (crds, fleet):
        assert layer["spec"]["sourceRef"] == {
            "kind": "GitRepository",
            "name": source["metadata"]["name"],
        }


def test_bootstrap_follows_the_repository_settings(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    (root / "dsf.yaml").write_text(
        "repository:\n  url: https://git.example.org/ops/fleet.git\n  branch: prod\n  path: deploy/dsf\n",
        encoding="utf-8",
    )
    files = render_fleet(root)
    application = yaml.safe_load(files["bootstrap/argocd/application.yaml"])
    assert application["spec"]["source"]["path"] == "deploy/dsf"
    assert application["spec"]["source"]["targetRevision"] == "prod"
    source = yaml.safe_load(files["bootstrap/flux/gitrepository.yaml"])
    assert source["spec"]["url"] == "https://git.example.org/ops/fleet.git"
    assert (
        yaml.safe_load(files["bootstrap/flux/kustomization-fleet.yaml"])["spec"]["path"]
        == "./deploy/dsf/fleet"
    )


# ------------------------------------------------------------- kustomize


@pytest.fixture(scope="module", params=["example", "override", "day2"])
def rendered(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    override_root: Path,
    day2_root: Path,
) -> tuple[Path, dict[str, str]]:
    files = fleet_files(request.param, override_root, day2_root)
    folder = tmp_path_factory.mktemp(request.param) / "rendered"
    folder.mkdir()
    write_tree(folder, files)
    return folder, files


def test_kustomize_yields_every_object_exactly_once(rendered: tuple[Path, dict[str, str]]) -> None:
    folder, files = rendered
    expected = Counter(
        identity(o)
        for p, o in objects_of(files)
        if " manifests[" not in p and not p.startswith("bootstrap/")
    )
    assert Counter(identity(o) for o in kustomize(folder)) == expected
    assert max(expected.values()) == 1


def test_flux_layers_split_the_crds_from_everything_else(
    rendered: tuple[Path, dict[str, str]],
) -> None:
    folder, _ = rendered
    crds = kustomize(folder / "crds")
    fleet = kustomize(folder / "fleet")
    assert {o["kind"] for o in crds} == {"CustomResourceDefinition"}
    assert "CustomResourceDefinition" not in {o["kind"] for o in fleet}
    whole = Counter(identity(o) for o in kustomize(folder))
    assert Counter(identity(o) for o in crds + fleet) == whole


@pytest.mark.parametrize("tool", ["argocd", "flux"])
def test_kustomize_builds_each_bootstrap_folder(
    rendered: tuple[Path, dict[str, str]], tool: str
) -> None:
    folder, _ = rendered
    kinds = sorted(o["kind"] for o in kustomize(folder / "bootstrap" / tool))
    assert kinds == (
        ["Application"] if tool == "argocd" else ["GitRepository", "Kustomization", "Kustomization"]
    )


def test_bootstrap_is_not_part_of_the_root_kustomization(
    rendered: tuple[Path, dict[str, str]],
) -> None:
    folder, _ = rendered
    assert not {"Application", "GitRepository"} & {o["kind"] for o in kustomize(folder)}
