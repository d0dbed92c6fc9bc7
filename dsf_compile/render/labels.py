"""The labels every object the compiler renders carries."""

from __future__ import annotations

from dsf_contract.scores import MANAGED_BY_LABEL

PART_OF = {"app.kubernetes.io/part-of": "dynamic-scoring-framework"}
MANAGED_BY = {MANAGED_BY_LABEL: "dsf-compile", **PART_OF}
