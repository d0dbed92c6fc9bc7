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

#: ClusterClaim names that are not the agent's to write: the ones OCM's registration agent
#: reserves (``ReservedClusterClaimNames`` of open-cluster-management.io/api: the cluster's
#: ID, its Kubernetes version, platform and product) and the ClusterClaim CRD names as well
#: known (``clusterset.k8s.io``).
RESERVED_CLAIM_NAMES = frozenset(
    {
        "id.k8s.io",
        "clusterset.k8s.io",
        "kubeversion.open-cluster-management.io",
        "platform.open-cluster-management.io",
        "product.open-cluster-management.io",
    }
)
#: Domains whose claims belong to their owners: Kubernetes' own (``k8s.io``,
#: ``kubernetes.io``, as for labels), OCM's, and OpenShift's (the claims OCM's distributions
#: set on every cluster, a suffix klusterlets commonly reserve).
RESERVED_CLAIM_DOMAINS = ("k8s.io", "kubernetes.io", "open-cluster-management.io", "openshift.io")


def reserved_claim(name: str) -> str | None:
    """Why ``name`` may not be the agent's claim (its owner), or None when it may."""
    if name in RESERVED_CLAIM_NAMES:
        return f"{name!r} is a claim OCM reserves (the cluster's own); choose a name of your own"
    for domain in RESERVED_CLAIM_DOMAINS:
        if name == domain or name.endswith(f".{domain}"):
            return (
                f"{name!r} is in the domain {domain}, whose claims belong to it; "
                "choose a name of your own"
            )
    return None
