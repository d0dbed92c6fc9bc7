"""Models of the OCM objects in ``placements/``, and of what the scheduler reads beside them.

Placements and ManagedClusterSetBindings follow their CRDs strictly (unknown fields,
bad enumerations and out-of-range weights are errors); Policies, PlacementBindings and
ManifestWorkReplicaSets are applied as written, so only the fields the optimizer reads
are checked and everything else is kept. The inventory additions (taints, cluster
claims, allocatable and capacity) and the AddOnPlacementScore and PlacementDecision
reading models accept what ``kubectl get … -o yaml`` prints, including ``List``s.
"""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

import re
from typing import Annotated, Literal, Self, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from dsf_compile.inputs.inventory import LabelSelector, LabelSelectorRequirement
from dsf_compile.inputs.metadata import ObjectMeta
from dsf_contract.compliance import POLICY_GROUP
from dsf_contract.fields import (
    DnsLabel,
    DnsSubdomain,
    Frozen,
    Int64,
    Items,
    Labels,
    Lenient,
    PlainText,
    QualifiedKey,
    Time,
    exactly,
    matches,
)
from dsf_contract.scores import OCM_CLUSTER_GROUP, SCORE_KIND, SCORE_VERSION

#: The versions at which OCM serves the Placement API and the policy framework's.
PLACEMENT_API_VERSION = f"{OCM_CLUSTER_GROUP}/v1beta1"
POLICY_API_VERSION = f"{POLICY_GROUP}/v1"
#: The label OCM puts on a PlacementDecision to name its Placement.
PLACEMENT_LABEL = f"{OCM_CLUSTER_GROUP}/placement"
#: The label that makes a ManagedCluster a member of a cluster set.
CLUSTERSET_LABEL = f"{OCM_CLUSTER_GROUP}/clusterset"
#: The annotation with which OCM leaves a Placement unscheduled.
SCHEDULING_DISABLED_ANNOTATION = f"{OCM_CLUSTER_GROUP}/experimental-scheduling-disable"

_GROUP_NAME_RE = re.compile(r"^[a-zA-Z0-9][-A-Za-z0-9_.]{0,61}[a-zA-Z0-9]$")
_PER_GROUP_RE = re.compile(r"^((100|[1-9][0-9]{0,1})%|[1-9][0-9]*)$")
_RATE_LIMIT_RE = re.compile(r"^[0-9]+[hms]$")


class NamespacedMeta(ObjectMeta):
    """Metadata of an object written for the hub: GitOps output names its namespace."""

    namespace: DnsLabel


# -------------------------------------------------------------------- Placement


class ClaimSelector(Frozen):
    """Selects clusters by ``status.clusterClaims`` as if they were labels."""

    matchExpressions: Items[LabelSelectorRequirement] | None = None


class CelSelector(Frozen):
    celExpressions: Items[str] | None = None


class ClusterSelector(Frozen):
    """One predicate: its label and claim selectors must both match (CEL is not simulated)."""

    labelSelector: LabelSelector | None = None
    claimSelector: ClaimSelector | None = None
    celSelector: CelSelector | None = None


class Predicate(Frozen):
    requiredClusterSelector: ClusterSelector | None = None


class AddOnScore(Frozen):
    """The ``scoreName`` item of the AddOnPlacementScore named ``resourceName``."""

    resourceName: PlainText
    scoreName: PlainText


class ScoreCoordinate(Frozen):
    type: Literal["BuiltIn", "AddOn"] = "BuiltIn"
    builtIn: str | None = None
    addOn: AddOnScore | None = None

    @model_validator(mode="after")
    def _has_its_source(self) -> Self:
        # OCM reports such a Placement as misconfigured and schedules nothing.
        if self.type == "AddOn" and self.addOn is None:
            raise ValueError("type AddOn needs addOn.resourceName and addOn.scoreName")
        if self.type == "BuiltIn" and not self.builtIn:
            raise ValueError("type BuiltIn needs builtIn (a built-in prioritizer's name)")
        return self

    @property
    def name(self) -> str:
        """The prioritizer's name as OCM reports it: ``AddOn/<resource>/<score>`` or the built-in."""
        if self.type == "AddOn" and self.addOn is not None:
            return f"AddOn/{self.addOn.resourceName}/{self.addOn.scoreName}"
        return self.builtIn or ""


class PrioritizerConfig(Frozen):
    scoreCoordinate: ScoreCoordinate
    weight: Annotated[int, Field(ge=-10, le=10)] = 1


class PrioritizerPolicy(Frozen):
    mode: Literal["Additive", "Exact"] = "Additive"
    configurations: Items[PrioritizerConfig] = ()


class PlacementToleration(Frozen):
    """Tolerates the cluster taints it matches (OCM's rules, not the kubelet's)."""

    key: QualifiedKey | None = None
    operator: Literal["Equal", "Exists"] = "Equal"
    value: Annotated[str, Field(max_length=1024)] | None = None
    effect: Literal["NoSelect", "PreferNoSelect", "NoSelectIfNew"] | None = None
    tolerationSeconds: Int64 | None = None

    # A key-less Equal or an Exists with a value passes the CRD; OCM then reports the
    # Placement misconfigured, and so do validate (an error) and explain (a replay).


class SpreadConstraint(Frozen):
    topologyKey: QualifiedKey
    topologyKeyType: Literal["Label", "Claim"]
    maxSkew: Annotated[int, Field(ge=1)] = 1
    whenUnsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = "ScheduleAnyway"


class SpreadPolicy(Frozen):
    spreadConstraints: Annotated[Items[SpreadConstraint], Field(max_length=8)] = ()


class GroupClusterSelector(Frozen):
    labelSelector: LabelSelector | None = None
    claimSelector: ClaimSelector | None = None


class DecisionGroup(Frozen):
    groupName: Annotated[
        str, matches(_GROUP_NAME_RE, "a name of 2 to 63 letters, digits, '-', '_' or '.'")
    ]
    groupClusterSelector: GroupClusterSelector


#: An int-or-string: OCM reads an int as a count and a string as a percentage; a string
#: without ``%`` ("3") passes the CRD but OCM reports the Placement misconfigured.
PerGroup: TypeAlias = (
    Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
    | Annotated[str, matches(_PER_GROUP_RE, "a positive count or a percentage from 1% to 100%")]
)


class GroupStrategy(Frozen):
    clustersPerDecisionGroup: PerGroup = "100%"
    decisionGroups: Items[DecisionGroup] = ()


class DecisionStrategy(Frozen):
    groupStrategy: GroupStrategy = GroupStrategy()


class PlacementSpec(Frozen):
    clusterSets: Items[str] = ()
    numberOfClusters: Annotated[int, Field(ge=0, le=2**31 - 1)] | None = None
    predicates: Items[Predicate] = ()
    prioritizerPolicy: PrioritizerPolicy = PrioritizerPolicy()
    tolerations: Items[PlacementToleration] = ()
    spreadPolicy: SpreadPolicy | None = None
    decisionStrategy: DecisionStrategy | None = None
    sortBy: Literal["ClusterName", "Score"] = "ClusterName"
    scoreRateLimit: Annotated[str, matches(_RATE_LIMIT_RE, "a duration like 30s, 1m or 2h")] = "1m"


class Placement(Frozen):
    """``cluster.open-cluster-management.io/v1beta1`` Placement, as written for the hub."""

    apiVersion: Annotated[str, *exactly(PLACEMENT_API_VERSION)]
    kind: Literal["Placement"]
    metadata: NamespacedMeta
    spec: PlacementSpec = PlacementSpec()


# ---------------------------------------------------------- ManagedClusterSetBinding


class ManagedClusterSetBindingSpec(Frozen):
    clusterSet: str = Field(min_length=1)


class ManagedClusterSetBinding(Frozen):
    """Binds the cluster set ``spec.clusterSet`` to the binding's namespace.

    OCM's admission requires ``metadata.name == spec.clusterSet``; that rule is checked
    by the semantic validation (so that the error points at ``spec.clusterSet``), not
    here. The scheduler, like OCM, takes the set's name from ``metadata.name``.
    """

    apiVersion: Annotated[str, *exactly(f"{OCM_CLUSTER_GROUP}/v1beta2")]
    kind: Literal["ManagedClusterSetBinding"]
    metadata: NamespacedMeta
    spec: ManagedClusterSetBindingSpec


# -------------------------------------------------------------- applied as written


class PassThrough(BaseModel):
    """An object applied as written: the fields we read are checked, the rest is kept."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow", strict=True)


class ObjectRef(PassThrough):
    name: DnsSubdomain  # names an object
    kind: str | None = None
    apiGroup: str | None = None


class PolicyFrameworkObject(PassThrough):
    """An object of the governance policy framework's API (``policy.open-cluster-management.io/v1``)."""

    apiVersion: Annotated[str, *exactly(POLICY_API_VERSION)]
    kind: str
    metadata: NamespacedMeta


class Policy(PolicyFrameworkObject):
    """``policy.open-cluster-management.io/v1`` Policy (supply labels are read)."""

    kind: Literal["Policy"]


class PlacementBinding(PolicyFrameworkObject):
    """``policy.open-cluster-management.io/v1`` PlacementBinding: binds Policies to a Placement."""

    kind: Literal["PlacementBinding"]
    placementRef: ObjectRef
    subjects: Annotated[Items[ObjectRef], Field(min_length=1)]


class LocalPlacementReference(PassThrough):
    name: DnsSubdomain  # names a Placement: optimize may write one by that name


class ManifestWorkReplicaSetSpec(PassThrough):
    placementRefs: Annotated[Items[LocalPlacementReference], Field(min_length=1)]


class ManifestWorkReplicaSet(PassThrough):
    """``work.open-cluster-management.io/v1alpha1`` ManifestWorkReplicaSet (demand labels, Placement)."""

    apiVersion: Literal["work.open-cluster-management.io/v1alpha1"]
    kind: Literal["ManifestWorkReplicaSet"]
    metadata: NamespacedMeta
    spec: ManifestWorkReplicaSetSpec


# ----------------------------------------------- scores and decisions, as read back


class ReadMeta(Lenient):
    """Metadata read back from a hub or a snapshot: names as the API server allows them."""

    name: DnsSubdomain
    namespace: DnsLabel
    labels: Labels = Field(default_factory=dict)


class ScoreItem(Lenient):
    name: str
    value: Annotated[int, Field(ge=-100, le=100)]


class ScoreCondition(Lenient):
    """A ``status.conditions`` entry; the agent keeps ``ScoresAvailable`` on the scores it owns."""

    type: str
    status: str
    reason: str = ""
    message: str = ""
    lastTransitionTime: Time | None = None


class AddOnPlacementScoreStatus(Lenient):
    scores: Items[ScoreItem] = ()
    validUntil: Time | None = None
    conditions: Items[ScoreCondition] = ()


class AddOnPlacementScore(Lenient):
    """``cluster.open-cluster-management.io/v1alpha1`` AddOnPlacementScore, as the hub prints it."""

    apiVersion: Annotated[str, *exactly(f"{OCM_CLUSTER_GROUP}/{SCORE_VERSION}")]
    kind: Annotated[str, *exactly(SCORE_KIND)]
    metadata: ReadMeta
    status: AddOnPlacementScoreStatus = AddOnPlacementScoreStatus()


class ClusterDecision(Lenient):
    clusterName: DnsSubdomain
    reason: str = ""
    score: int | None = None


class PlacementDecisionStatus(Lenient):
    decisions: Items[ClusterDecision] = ()


class PlacementDecision(Lenient):
    """``cluster.open-cluster-management.io/v1beta1`` PlacementDecision, as the hub prints it."""

    apiVersion: Annotated[str, *exactly(PLACEMENT_API_VERSION)]
    kind: Literal["PlacementDecision"]
    metadata: ReadMeta
    status: PlacementDecisionStatus = PlacementDecisionStatus()

    @property
    def placement_name(self) -> str | None:
        """The Placement this decision belongs to (OCM finds it by label, not by owner)."""
        return self.metadata.labels.get(PLACEMENT_LABEL)


class AddOnPlacementScoreList(Lenient):
    """``kubectl get addonplacementscores -A -o yaml``: a ``List`` (or the typed list kind)."""

    apiVersion: str
    kind: Literal["List", "AddOnPlacementScoreList"]
    items: Items[AddOnPlacementScore] = ()


class PlacementDecisionList(Lenient):
    """``kubectl get placementdecisions -A -o yaml``: a ``List`` (or the typed list kind)."""

    apiVersion: str
    kind: Literal["List", "PlacementDecisionList"]
    items: Items[PlacementDecision] = ()


# ------------------------------------------------------------------ the folder

#: The objects of ``placements/`` that are rendered for the hub.
PlacementObject: TypeAlias = (
    Placement | ManagedClusterSetBinding | Policy | PlacementBinding | ManifestWorkReplicaSet
)
#: The kinds ``placements/`` holds and renders, by kind.
PLACEMENT_KINDS: dict[str, type[PlacementObject]] = {
    "Placement": Placement,
    "ManagedClusterSetBinding": ManagedClusterSetBinding,
    "Policy": Policy,
    "PlacementBinding": PlacementBinding,
    "ManifestWorkReplicaSet": ManifestWorkReplicaSet,
}
#: dsf's own input of ``optimize``: read from ``placements/``, never rendered.
OPTIMIZATION_KIND = "PlacementOptimization"
