"""Checks of rendered objects shared by the tests: OCM's CRDs as JSON Schema validators
(as strict as the API server: unknown fields fail), real kustomize over a folder, and
the rendered tree's files and per-cluster bytes (what a shard budget counts)."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.fleet_repo import OCM_CRDS


def structural_to_json_schema(schema: Any) -> Any:
    """A CRD's OpenAPI v3 (structural) schema as JSON Schema, as strict as the API server.

    ``nullable`` adds ``null``; ``x-kubernetes-int-or-string`` accepts both; an object with
    ``properties`` and neither ``additionalProperties`` nor ``x-kubernetes-preserve-unknown-fields``
    gets ``additionalProperties: false``, because the API server silently prunes unknown
    fields and a typo in a rendered object would vanish instead of failing.
    """
    if isinstance(schema, list):
        return [structural_to_json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: structural_to_json_schema(sub) for name, sub in value.items()}
        elif key.startswith("x-kubernetes-") or key in (
            "nullable",
            "description",
            "example",
            "format",
        ):
            continue
        else:
            out[key] = structural_to_json_schema(value)
    if schema.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if schema.get("nullable") and "type" in out:
        out["type"] = [out["type"], "null"]
    if (
        "properties" in out
        and "additionalProperties" not in out
        and not schema.get("x-kubernetes-preserve-unknown-fields")
    ):
        out["additionalProperties"] = False
    return out


def crd_validators(crds: list[dict[str, Any]]) -> dict[tuple[str, str], jsonschema.Validator]:
    """(apiVersion, kind) → validator, for every served version of the CRDs."""
    out = {}
    for crd in crds:
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served"):
                continue
            schema = structural_to_json_schema(version["schema"]["openAPIV3Schema"])
            out[(f"{group}/{version['name']}", kind)] = jsonschema.Draft202012Validator(schema)
    return out


@cache
def ocm_validators() -> dict[tuple[str, str], jsonschema.Validator]:
    crds = [
        yaml.safe_load(path.read_text(encoding="utf-8"))
        for path in sorted(OCM_CRDS.glob("*.crd.yaml"))
    ]
    return crd_validators(crds)


def _kubectl() -> str:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with kustomize built in) is not installed")
    return kubectl


def kustomize(folder: Path) -> list[dict[str, Any]]:
    result = subprocess.run(
        [_kubectl(), "kustomize", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def identity(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"])


def rendered_files(root: Path) -> dict[str, bytes]:
    """Every file of ``root/rendered`` by its path there, the journal's list apart."""
    folder = root / "rendered"
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.name != ".dsf-files"
    }


def cluster_bytes(root: Path) -> int:
    """The bytes of every per-cluster object of an unsharded render (what the budget counts)."""
    return sum(
        len(data)
        for path, data in rendered_files(root).items()
        if path.startswith("clusters/") and not path.endswith("/kustomization.yaml")
    )
