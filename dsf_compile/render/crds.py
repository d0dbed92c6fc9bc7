"""The CustomResourceDefinitions of DynamicScorer and DynamicScoringConfig.

Their OpenAPI schemas are generated from the same models as ``schemas/``:
:func:`openapi_schema` turns a model into the structural OpenAPI v3 schema a
CustomResourceDefinition needs (no ``$ref``, no ``anyOf`` with null, no ``const``).
"""

from __future__ import annotations

from functools import cache
from typing import Any

from pydantic import BaseModel

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.inputs.inventory import DynamicScoringConfigSpec
from dsf_compile.inputs.scorer import DynamicScorerSpec
from dsf_compile.render.gitops import WAVE_CRDS, gitops_annotations
from dsf_contract.fields import API_GROUP, API_GROUP_VERSION
from dsf_contract.scoring_api import ScorerConfig


def _health_column() -> dict[str, Any]:
    escaped = API_GROUP.replace(".", "\\.")
    return {
        "name": "Health",
        "type": "string",
        "jsonPath": f".metadata.annotations.{escaped}/health",
        "description": "Health recorded by the last sync (Active or Inactive).",
    }


class _ScorerStatus(BaseModel):
    """Upstream's status block; a GitOps apply cannot set it, the annotations carry it."""

    healthStatus: str | None = None
    lastSyncedConfig: ScorerConfig | None = None


def _crd(
    kind: str,
    plural: str,
    spec: type[BaseModel],
    columns: list[dict[str, Any]],
    status: type[BaseModel] | None,
) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": openapi_schema(spec),
    }
    if status is not None:
        properties["status"] = openapi_schema(status)
    version: dict[str, Any] = {
        "name": API_GROUP_VERSION,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "description": (spec.__doc__ or kind).strip().splitlines()[0],
                "type": "object",
                "required": ["spec"],
                "properties": properties,
            }
        },
        "subresources": {"status": {}},
        "additionalPrinterColumns": [
            *columns,
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ],
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{API_GROUP}", "annotations": gitops_annotations(WAVE_CRDS)},
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [version],
        },
    }


@cache
def render_crds() -> dict[str, str]:
    """Path → YAML text of both CRDs with their sync wave (the same for every fleet, so computed once)."""
    scorer = _crd(
        "DynamicScorer",
        "dynamicscorers",
        DynamicScorerSpec,
        [
            {"name": "Score", "type": "string", "jsonPath": ".spec.scoring.params.name"},
            {"name": "Mode", "type": "string", "jsonPath": ".spec.configSyncMode"},
            {
                "name": "Destination",
                "type": "string",
                "jsonPath": ".spec.scoreDestination",
                "priority": 1,
            },
            _health_column(),
        ],
        _ScorerStatus,
    )
    config = _crd(
        "DynamicScoringConfig", "dynamicscoringconfigs", DynamicScoringConfigSpec, [], None
    )
    return {
        f"crds/dynamicscorers.{API_GROUP}.yaml": dump_yaml(scorer),
        f"crds/dynamicscoringconfigs.{API_GROUP}.yaml": dump_yaml(config),
    }


# ------------------------------------------------------------- OpenAPI for CRDs

_DROP = {"title", "$defs", "additionalProperties", "format", "prefixItems", "$schema"}


def openapi_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A structural OpenAPI v3 schema of ``model`` in its canonical (written) form."""
    schema = model.model_json_schema(mode="serialization")
    structural: dict[str, Any] = _structural(schema, schema.get("$defs", {}))
    return structural


def _structural(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_structural(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    inlined = _inlined(node, defs)
    if inlined is not None:
        return _structural(inlined, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        out.update(_structural_key(key, value, defs))
    if "properties" in out or "additionalProperties" in out:
        out.setdefault("type", "object")
    if "maxItems" in out and out.get("type") == "array" and "items" not in out:
        out["items"] = {"x-kubernetes-preserve-unknown-fields": True}
    return out


def _inlined(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any] | None:
    """A ``$ref`` resolved, or an optional (``anyOf`` with null) made plain; None otherwise."""
    if "$ref" in node:
        target = defs[node["$ref"].rsplit("/", 1)[-1]]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        if len(options) == 1:
            return {**options[0], **{k: v for k, v in node.items() if k != "anyOf"}}
    return None


def _structural_key(key: str, value: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """One JSON Schema keyword as structural OpenAPI has it (none where it has no place)."""
    if key in _DROP and not (key == "additionalProperties" and isinstance(value, dict)):
        return {}
    if key == "default" and value is None:
        return {}
    if key == "const":
        return {"enum": [value]}
    if key == "exclusiveMinimum":
        return {"minimum": value, "exclusiveMinimum": True}
    if key == "properties":
        return {key: {name: _structural(prop, defs) for name, prop in value.items()}}
    return {key: _structural(value, defs)}
