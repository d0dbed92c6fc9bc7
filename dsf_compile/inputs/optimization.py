"""``PlacementOptimization``: what ``optimize`` chooses configurations and clusters for.

dsf's own input (``docs/optimize.md``), read from ``placements/`` and never rendered: the
score to optimize, the clusters with the Policies (configurations) each may take, and
the workloads (ManifestWorkReplicaSets) to place.
"""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

import re
from typing import Annotated, Literal

from pydantic import Field

from dsf_compile.inputs.placements import NamespacedMeta
from dsf_contract.fields import (
    API_GROUP,
    API_VERSION,
    DnsLabel,
    DnsSubdomain,
    Frozen,
    Items,
    exactly,
)
from dsf_contract.summary import PLACEHOLDER_RE, DimensionFormat

#: The label every object ``optimize`` writes carries (``docs/optimize.md``).
GENERATED_BY_LABEL = f"{API_GROUP}/generated-by"
#: Supply and demand labels (upstream's sample conventions).
SUPPLY_KIND, SUPPLY_AMOUNT, SUPPLY_DEVICE = (
    "resource-supply-kind",
    "resource-supply-amount",
    "resource-supply-device",
)
DEMAND_APP, DEMAND_KIND, DEMAND_AMOUNT = ("app", "resource-request-kind", "resource-request-amount")


class Preference(Frozen):
    addOnPlacementScore: DnsSubdomain = Field(
        description="The AddOnPlacementScore (sanitized score name) to optimize."
    )
    scoreDimensionFormat: DimensionFormat = Field(
        description="How its items are named; must hold ${app} and ${device}."
    )


class OptimizedCluster(Frozen):
    name: DnsLabel
    availablePolicies: Annotated[Items[DnsSubdomain], Field(min_length=1)]


class PlacementOptimizationSpec(Frozen):
    objective: Literal["Maximize", "Minimize"] = "Maximize"
    preference: Preference
    clusters: Annotated[Items[OptimizedCluster], Field(min_length=1)]
    targetWorkloads: Annotated[Items[DnsSubdomain], Field(min_length=1)]
    requireCompliance: bool = False


class PlacementOptimization(Frozen):
    """``placements/``: one optimization of configurations (Policies) and placements."""

    apiVersion: Annotated[str, *exactly(API_VERSION)]
    kind: Literal["PlacementOptimization"]
    metadata: NamespacedMeta
    spec: PlacementOptimizationSpec


def item_pattern(dimension_format: str) -> re.Pattern[str]:
    """Read an item name back through the dimension format: named groups ``app`` and ``device``."""
    parts = PLACEHOLDER_RE.split(dimension_format)
    out, seen = [], set()
    for index, part in enumerate(parts):
        if index % 2 == 0:
            out.append(re.escape(part))
        elif part in ("app", "device") and part not in seen:
            seen.add(part)
            out.append(f"(?P<{part}>.*?)")
        else:
            out.append(".*?")
    return re.compile("".join(out), re.DOTALL)
