"""schemas/: generated from the models, current, and agreeing with the models on real inputs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from dsf_compile.commands.cli import run
from dsf_compile.pipeline.schemas import SCHEMAS, encode_schema
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT


def test_schemas_folder_is_current() -> None:
    out = io.StringIO()
    assert run(["--root", str(REPO_ROOT), "schemas", "--check"], out, io.StringIO()) == 0, (
        out.getvalue()
    )
    assert sorted(p.name for p in (REPO_ROOT / "schemas").glob("*.schema.json")) == sorted(
        f"{name}.schema.json" for name in SCHEMAS
    )


def test_schemas_command_writes_then_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "scorers").mkdir()
    assert run(["--root", str(tmp_path), "schemas"], io.StringIO(), io.StringIO()) == 0
    assert (tmp_path / "schemas/dynamicscorer.schema.json").read_text() == encode_schema(
        SCHEMAS["dynamicscorer"]
    )
    out = io.StringIO()
    assert run(["--root", str(tmp_path), "schemas", "--check"], out, io.StringIO()) == 0
    assert out.getvalue() == ""


def schema(name: str) -> jsonschema.Draft202012Validator:
    data = json.loads((REPO_ROOT / "schemas" / f"{name}.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(data)
    return jsonschema.Draft202012Validator(data)


KIND_SCHEMAS = {
    "DynamicScorer": "dynamicscorer",
    "DynamicScoringConfig": "dynamicscoringconfig",
    "ManagedCluster": "managedcluster",
}


@pytest.mark.parametrize(
    "path",
    sorted(str(p.relative_to(EXAMPLE_FLEET)) for p in (EXAMPLE_FLEET / "scorers").glob("*.yaml"))
    + sorted(
        str(p.relative_to(EXAMPLE_FLEET)) for p in (EXAMPLE_FLEET / "clusters").glob("*.yaml")
    ),
)
def test_example_inputs_are_valid_against_their_schema(path: str) -> None:
    for document in yaml.safe_load_all((EXAMPLE_FLEET / path).read_text()):
        schema(KIND_SCHEMAS[document["kind"]]).validate(document)


def test_lockfile_settings_and_summaries_are_valid_against_their_schema() -> None:
    schema("dsf-lock").validate(json.loads((EXAMPLE_FLEET / "dsf.lock.json").read_text()))
    schema("dsf-settings").validate(yaml.safe_load((EXAMPLE_FLEET / "dsf.yaml").read_text()))
    work = yaml.safe_load(
        (EXAMPLE_FLEET / "rendered/clusters/worker01/manifestwork.yaml").read_text()
    )
    schema("summaries").validate(
        json.loads(work["spec"]["workload"]["manifests"][0]["data"]["summaries"])
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"configSyncMode": "sometimes"}, "does not match"),
        ({"configURL": "ftp://x/config"}, "does not match"),
        ({"unknown": 1}, "Additional properties"),
        ({"scoreDestination": 5}, "is not of type"),
    ],
)
def test_the_schema_refuses_what_the_models_refuse(change: dict[str, object], message: str) -> None:
    document = yaml.safe_load((EXAMPLE_FLEET / "scorers/sample-scorer.yaml").read_text())
    document["spec"].update(change)
    errors = list(schema("dynamicscorer").iter_errors(document))
    assert errors and message in errors[0].message
