"""``clusters/``: the inventory (ManagedClusters) and the DynamicScoringConfig with its masks."""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

from typing import Annotated, Any, Literal, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    model_validator,
)

from dsf_compile.inputs.metadata import ObjectMeta
from dsf_compile.inputs.quantity import QuantityText
from dsf_contract.fields import (
    API_VERSION,
    Annotations,
    DnsLabel,
    Frozen,
    Items,
    LabelKey,
    Labels,
    LabelValue,
    Lenient,
    PlainText,
    QualifiedKey,
    Time,
    exactly,
)
from dsf_contract.scores import OCM_CLUSTER_GROUP
from dsf_contract.summary import CONFIG_NAME


class LabelSelectorRequirement(Frozen):
    key: Annotated[LabelKey, Field(min_length=1)]
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: Items[LabelValue] | None = None

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Self:
        if self.operator in ("In", "NotIn") and not self.values:
            raise ValueError(f"operator {self.operator} needs a non-empty values list")
        if self.operator in ("Exists", "DoesNotExist") and self.values:
            raise ValueError(f"operator {self.operator} takes no values")
        return self


class LabelSelector(Frozen):
    """A Kubernetes label selector; an empty one selects every cluster."""

    matchLabels: Labels | None = None
    matchExpressions: Items[LabelSelectorRequirement] | None = None


# -------------------------------------------------------------------- inventory


class ClusterTaint(Lenient):
    """A taint of ``ManagedCluster.spec.taints``."""

    key: QualifiedKey
    value: Annotated[str, Field(max_length=1024)] = ""
    effect: Literal["NoSelect", "PreferNoSelect", "NoSelectIfNew"]
    timeAdded: Time | None = None


class ClusterClaim(Lenient):
    """A claim of ``ManagedCluster.status.clusterClaims``."""

    name: Annotated[str, Field(max_length=253)] = ""
    value: Annotated[str, Field(max_length=1024)] = ""


class ManagedClusterSpec(Lenient):
    """The part of ``ManagedCluster.spec`` the scheduler reads."""

    taints: Items[ClusterTaint] = ()


class ManagedClusterStatus(Lenient):
    """The part of ``ManagedCluster.status`` the scheduler reads."""

    clusterClaims: Items[ClusterClaim] = ()
    allocatable: dict[str, QuantityText] = Field(default_factory=dict)
    capacity: dict[str, QuantityText] = Field(default_factory=dict)
    #: ``{kubernetes: v1.30.2}``: read by CEL (``managedCluster.status.version``).
    version: dict[str, Annotated[str, Field(max_length=1024)]] = Field(default_factory=dict)


def _documented_default(schema: dict[str, Any]) -> None:
    """The schema of ``ManagedCluster.status``, with the default its factory makes."""
    schema["default"] = ManagedClusterStatus().model_dump(mode="json")


class ClusterMeta(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore", strict=True)

    name: DnsLabel
    labels: Labels = Field(default_factory=dict)
    #: Read by a Placement's CEL (``managedCluster.metadata.annotations``); checked as
    #: Kubernetes checks them, since ``sync --clusters`` writes them to Git.
    annotations: Annotations = Field(default_factory=dict)
    #: Set on a cluster being deleted: OCM's scheduler never picks it.
    deletionTimestamp: Time | None = None


class ManagedCluster(BaseModel):
    """An inventory entry, as ``kubectl get managedclusters -o yaml`` prints it.

    The compiler uses ``metadata.name`` and ``metadata.labels`` (the cluster-set label
    among them); the scheduler also reads ``spec.taints``, ``status.clusterClaims``,
    ``status.allocatable`` and ``status.capacity``. Server-set fields are ignored.
    """

    model_config = ConfigDict(defer_build=True, frozen=True, extra="ignore", strict=True)

    apiVersion: Annotated[str, *exactly(f"{OCM_CLUSTER_GROUP}/v1")]
    kind: Literal["ManagedCluster"]
    metadata: ClusterMeta
    spec: ManagedClusterSpec = ManagedClusterSpec()
    #: A factory, not a default instance: pydantic deep-copies a default it cannot hash
    #: (this one holds dicts) for every cluster read, ten times what building one costs.
    #: The schema still documents the default.
    status: ManagedClusterStatus = Field(
        default_factory=ManagedClusterStatus, json_schema_extra=_documented_default
    )


# ------------------------------------------------------- masks: DynamicScoringConfig


class Mask(Frozen):
    """Keeps the scores whose name matches ``scoreName`` off the matching clusters."""

    clusterName: PlainText | None = Field(
        default=None, min_length=1, description="A cluster name or shell-style glob."
    )
    clusterSelector: LabelSelector | None = None
    scoreName: PlainText = Field(min_length=1, description="A score name or shell-style glob.")

    @model_validator(mode="after")
    def _needs_cluster_part(self) -> Self:
        if self.clusterName is None and self.clusterSelector is None:
            raise ValueError("a mask needs clusterName and/or clusterSelector")
        return self


class DynamicScoringConfigSpec(Frozen):
    masks: Items[Mask] = ()


# No docstring (the JSON Schema would carry it): the config's name is fixed.
class ConfigMeta(ObjectMeta):
    name: Annotated[str, *exactly(CONFIG_NAME)]


class DynamicScoringConfig(Frozen):
    """The one ``DynamicScoringConfig`` (named ``dynamic-scoring-config``): the masks."""

    apiVersion: Annotated[str, *exactly(API_VERSION)]
    kind: Literal["DynamicScoringConfig"]
    metadata: ConfigMeta
    spec: DynamicScoringConfigSpec = DynamicScoringConfigSpec()
