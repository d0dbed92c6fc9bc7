"""JSON Schemas of every format, generated from the models.

``dsf-compile schemas`` writes ``schemas/*.schema.json``; a test fails when they are
stale. The CRDs' structural form of the same schemas is
:func:`dsf_compile.render.crds.openapi_schema`'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dsf_compile.edges.files import FileTooLargeError, NotRegularFileError, read_regular_file
from dsf_compile.edges.journal_scope import Ownership
from dsf_compile.edges.replacement import replace_files
from dsf_compile.errors import InputError, WriteError
from dsf_compile.inputs.inventory import DynamicScoringConfig, ManagedCluster
from dsf_compile.inputs.optimization import PlacementOptimization
from dsf_compile.inputs.placements import ManagedClusterSetBinding, Placement
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.settings import Settings
from dsf_compile.sync.lock import Lockfile
from dsf_contract.problem import Problem
from dsf_contract.scoring_api import ScorerConfig, ScoringRequest, ScoringResponse
from dsf_contract.summary import SummaryList

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"

#: file name (without ``.schema.json``) → model; inputs are validated in "validation" mode.
SCHEMAS: dict[str, type[BaseModel]] = {
    "dynamicscorer": DynamicScorer,
    "dynamicscoringconfig": DynamicScoringConfig,
    "managedcluster": ManagedCluster,
    "placement": Placement,
    "managedclustersetbinding": ManagedClusterSetBinding,
    "placementoptimization": PlacementOptimization,
    "dsf-settings": Settings,
    "dsf-lock": Lockfile,
    "scorer-config": ScorerConfig,
    "scoring-request": ScoringRequest,
    "scoring-response": ScoringResponse,
    "summaries": SummaryList,
}
#: What ``schemas`` writes in ``schemas/``: a journal there may name nothing else.
SCHEMAS_SCOPE = Ownership.files("schemas", [f"{name}.schema.json" for name in SCHEMAS])


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema (2020-12) as inputs are checked against it."""
    schema = model.model_json_schema(mode="validation")
    return {"$schema": SCHEMA_DIALECT, **schema}


def encode_schema(model: type[BaseModel]) -> str:
    return json.dumps(json_schema(model), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_schemas(
    folder: Path, *, check: bool, notice: Callable[[str], None] | None = None
) -> list[str]:
    """Write (or with ``check``, compare) every schema; return the file names that were stale.

    The stale ones are written in one update (:func:`dsf_compile.edges.replacement.replace_files`):
    all or none, also when the command is killed; ``notice`` is told, in one line, what a
    killed ``schemas`` left and this one recovered. Raises :class:`InputError` when
    ``folder`` or one of its schema files is something else than a folder or a regular
    file (a link, a FIFO...), or cannot be read.
    """
    _check_folder(folder)
    encoded = {
        f"{name}.schema.json": encode_schema(model).encode() for name, model in SCHEMAS.items()
    }
    # Bytes, not text: a file that is not UTF-8 is simply stale.
    stale = [n for n, data in encoded.items() if _read_current(folder / n, len(data)) != data]
    if not check:
        replaced = replace_files(
            folder, encoded, label=folder.name, error=WriteError, scope=SCHEMAS_SCOPE
        )
        if replaced.recovered and notice is not None:
            notice(replaced.recovered)
    return stale


def _check_folder(folder: Path) -> None:
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        raise InputError([Problem(folder.name, 0, 0, "", "must be a folder")])


def _read_current(file: Path, size: int) -> bytes | None:
    try:
        # One byte more than expected is enough to tell a file is stale.
        return read_regular_file(file, max_bytes=size + 1)
    except (FileNotFoundError, FileTooLargeError):
        return None
    except OSError as err:
        where = f"{file.parent.name}/{file.name}"
        reason = err.strerror or str(err)
        message = reason if isinstance(err, NotRegularFileError) else f"cannot read: {reason}"
        raise InputError([Problem(where, 0, 0, "", message)]) from None
