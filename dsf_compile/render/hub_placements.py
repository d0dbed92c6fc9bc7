"""``placements/`` → ``rendered/hub/placements/<namespace>/<kind>-<name>.yaml``.

Pure. The objects are rendered as their authors wrote them (fields left out stay left
out, enumerations in their canonical case), with the Argo CD sync wave that applies
them after the scorers' objects.
"""

from __future__ import annotations

from typing import Any

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.inputs.names import placement_path
from dsf_compile.inputs.validate import Inputs
from dsf_compile.render.gitops import WAVE_PLACEMENTS, gitops_annotations


def render_placements(inputs: Inputs) -> dict[str, str]:
    """Path → YAML text of every object of ``placements/``."""
    files = {}
    for located in inputs.placement_objects:
        model = located.model
        obj: dict[str, Any] = model.model_dump(mode="json", exclude_unset=True, exclude_none=True)
        metadata = obj["metadata"]
        metadata["annotations"] = dict(
            sorted(
                {**metadata.get("annotations", {}), **gitops_annotations(WAVE_PLACEMENTS)}.items()
            )
        )
        files[placement_path(model.kind, model.metadata.namespace, model.metadata.name)] = (
            dump_yaml(obj)
        )
    return files
