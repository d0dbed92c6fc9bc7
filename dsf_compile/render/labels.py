"""The labels every object the compiler renders carries."""

from __future__ import annotations

PART_OF = {"app.kubernetes.io/part-of": "dynamic-scoring-framework"}
MANAGED_BY = {"app.kubernetes.io/managed-by": "dsf-compile", **PART_OF}
