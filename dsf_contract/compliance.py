"""The compliance claim's objects (agent.md, "Compliance claim"): what the agent reads and
writes on the managed cluster, and what the compiler grants it there."""

from __future__ import annotations

from dsf_contract.scores import OCM_CLUSTER_GROUP, SCORE_VERSION

#: The claim a compliant cluster reports when ``requireCompliance`` is set (upstream's
#: policy watcher's name; ``agent.complianceClaim.claimName`` may rename it).
DEFAULT_CLAIM_NAME = "policy-watcher-claim"
#: OCM's governance policy framework: the Policies the claim is made from.
POLICY_GROUP = "policy.open-cluster-management.io"
POLICY_VERSION = "v1"
POLICY_PLURAL = "policies"
#: The ClusterClaim (cluster-scoped), in the same API group version as AddOnPlacementScore.
CLAIM_GROUP = OCM_CLUSTER_GROUP
CLAIM_VERSION = SCORE_VERSION
CLAIM_PLURAL = "clusterclaims"
CLAIM_KIND = "ClusterClaim"
