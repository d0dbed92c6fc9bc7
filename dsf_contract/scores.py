"""The AddOnPlacementScore: the object the agent writes on the hub and the compiler reads.

OCM's cluster API group (ManagedClusters, Placements and their decisions, and the score
objects) is named here once; so are the score object's version, plural and kind, the
label the agent puts on what it writes, and its ``ScoresAvailable`` condition with every
reason that condition can carry.
"""

from __future__ import annotations

from enum import StrEnum

from dsf_contract.agent_cli import PROGRAM

#: OCM's cluster API group.
OCM_CLUSTER_GROUP = "cluster.open-cluster-management.io"
SCORE_VERSION = "v1alpha1"
SCORE_PLURAL = "addonplacementscores"
SCORE_KIND = "AddOnPlacementScore"
#: The labels on every AddOnPlacementScore the agent writes.
#: Kubernetes' label for the tool that manages an object.
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
AGENT_MANAGED_BY = {MANAGED_BY_LABEL: PROGRAM}
#: The condition the agent keeps on each AddOnPlacementScore it owns.
CONDITION_TYPE = "ScoresAvailable"


class ScoresReason(StrEnum):
    """The reason of the ``ScoresAvailable`` condition: what the last scoring cycle did."""

    PUBLISHED = "ScoresPublished"
    SECRET_MISSING = "SecretMissing"
    PROMETHEUS_UNREACHABLE = "PrometheusUnreachable"
    QUERY_FAILED = "QueryFailed"
    SCORING_FAILED = "ScoringFailed"
    INVALID_RESPONSE = "InvalidResponse"
    CYCLE_FAILED = "CycleFailed"
