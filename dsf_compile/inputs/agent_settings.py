"""``dsf.yaml``'s ``agent``: what every cluster's agent runs with, and its per-cluster overrides.

Its strings are checked for ``{{…}}`` (OCM's template variables, :data:`TEMPLATE_VARIABLE_RE`),
its quantities as Kubernetes reads them, its CA bundle as PEM certificates.
"""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

import re
from typing import Annotated, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    Field,
    model_validator,
)

from dsf_compile.inputs.agent_image import (
    check_image_reference,
    default_image,
)
from dsf_compile.inputs.inventory import LabelSelector
from dsf_compile.inputs.quantity import QuantityError, parse_quantity
from dsf_contract.agent_cli import Aggregation
from dsf_contract.compliance import DEFAULT_CLAIM_NAME, reserved_claim
from dsf_contract.fields import (
    DnsSubdomain,
    Frozen,
    Int64,
    Items,
    PositiveInt,
    check_label_key,
    check_label_value,
)

#: What OCM's addon manager treats as a template variable (``{{NAME}}``, and anything else
#: between double braces that a user may have meant as one).
TEMPLATE_VARIABLE_RE = re.compile(r"\{\{(.*?)\}\}")


def _no_template_variable(value: str) -> str:
    # OCM substitutes {{…}} in the agent's AddOnTemplate and silently empties the ones it
    # does not know; the agent settings end up in that template (or beside it), so a
    # {{…}} here is refused instead of becoming an empty image or a broken proxy URL.
    found = TEMPLATE_VARIABLE_RE.search(value)
    if found:
        raise ValueError(
            f"{found.group(0)} looks like an OCM template variable; agent settings must not contain '{{{{…}}}}'"
        )
    return value


#: A string of the agent settings: no ``{{…}}`` (see :func:`_no_template_variable`).
AgentStr = Annotated[str, AfterValidator(_no_template_variable)]
#: An image the kubelet can pull by that name (``{{…}}`` named as such first).
AgentImage = Annotated[AgentStr, Field(min_length=1), AfterValidator(check_image_reference)]
#: Label keys and values of the agent settings: a ``{{…}}`` is named as such, then the
#: Kubernetes label rules apply.
AgentLabelKey = Annotated[AgentStr, AfterValidator(check_label_key)]
AgentLabelValue = Annotated[AgentStr, AfterValidator(check_label_value)]


def _resource_quantity(value: str) -> str:
    # the kubelet and the API server refuse what is not a Kubernetes quantity, and a
    # negative request or limit; the rendered Deployment would never start
    try:
        quantity = parse_quantity(value)
    except QuantityError as err:
        raise ValueError(str(err)) from None
    if quantity.negative:
        raise ValueError(f"{value!r} is negative; a resource quantity must be >= 0")
    return value


#: A CPU or memory amount as Kubernetes writes it (``100m``, ``1.5``, ``256Mi``), not negative.
ResourceQuantity = Annotated[
    AgentStr,  # a {{…}} is named as a template variable first
    AfterValidator(_resource_quantity),
    Field(
        json_schema_extra={
            "pattern": r"^\+?([0-9]+(\.[0-9]*)?|\.[0-9]+)([KMGTPE]i|[eE][+-]?[0-9]+|[numkMGTPE])?$"
        }
    ),
]

_SCORE_NAME_RE = re.compile(r"^[^\s,={}]+$")


def _score_names(value: dict[str, Aggregation]) -> dict[str, Aggregation]:
    # The agent reads DSF_AGGREGATE as SCORE=FUNCTION items split on commas and spaces.
    for name in value:
        if not _SCORE_NAME_RE.match(name):
            raise ValueError(
                f"score name {name!r} cannot be passed to the agent's --aggregate "
                "(no spaces, commas, '=' or braces)"
            )
    return dict(sorted(value.items()))


#: Score name → aggregation, sorted by score name.
Aggregations = Annotated[dict[str, Aggregation], AfterValidator(_score_names)]

_PEM_CERTIFICATE = re.compile(
    r"-----BEGIN CERTIFICATE-----\s+[A-Za-z0-9+/=\s]+-----END CERTIFICATE-----"
)


def _pem_bundle(value: str) -> str:
    if not _PEM_CERTIFICATE.search(value):
        raise ValueError(
            "expected PEM certificates (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)"
        )
    if "PRIVATE KEY" in value:
        raise ValueError("a CA bundle holds certificates only, never a private key")
    _load_certificates(value)
    return value.strip() + "\n"


def _load_certificates(value: str) -> None:
    # What the agent does with the bundle (OpenSSL's PEM reader, through SSL_CERT_FILE):
    # a certificate it cannot read (a lost base64 line, a truncated block) would stop
    # every agent at start, so each block is read here the same way first. (``ssl`` is
    # imported here: only a fleet with a CA bundle pays for it.)
    import ssl

    blocks = _PEM_BLOCK.findall(value)
    for index, block in enumerate(blocks, 1):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        try:
            context.load_verify_locations(cadata=block)
        except ssl.SSLError:
            which = (
                f"certificate {index} of {len(blocks)}" if len(blocks) > 1 else "the certificate"
            )
            raise ValueError(
                f"{which} is not an X.509 certificate OpenSSL can read (the agent would exit "
                "at start): a lost or changed base64 line? Paste it again from its source"
            ) from None
    if len(blocks) != value.count("-----BEGIN"):
        raise ValueError("holds a PEM block that is not a whole certificate")


_PEM_BLOCK = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.DOTALL)


#: One or more PEM certificates: the CAs the agent trusts for HTTPS (instead of its own).
CaBundle = Annotated[str, AfterValidator(_no_template_variable), AfterValidator(_pem_bundle)]


# A toleration of the agent's pods, by the kubelet's rules (a Placement's is PlacementToleration);
# a comment, not a docstring: the JSON Schema would carry it as a description.
class PodToleration(Frozen):
    key: AgentLabelKey | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: AgentLabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: Int64 | None = None

    @model_validator(mode="after")
    def _as_the_api_server_checks(self) -> Self:
        # the API server's rules for a pod's tolerations: it refuses the agent's
        # Deployment on every cluster this override reaches otherwise
        exists = self.operator == "Exists"
        if not self.key and not exists:
            raise ValueError("a toleration without a key needs operator: Exists")
        if exists and self.value:
            raise ValueError("a toleration with operator: Exists has no value")
        if self.tolerationSeconds is not None and self.effect != "NoExecute":
            raise ValueError("tolerationSeconds needs effect: NoExecute")
        return self


class ResourceList(Frozen):
    cpu: ResourceQuantity | None = None
    memory: ResourceQuantity | None = None


class Resources(Frozen):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


def _proxy_url(value: str) -> str:
    # the agent's HTTP client reads HTTP(S)_PROXY when it starts: another scheme (or
    # socks5, whose support the image does not carry) stops it there; a bare host:port
    # is read as http://host:port, as it does
    try:
        parts = urlsplit(value if "://" in value else f"http://{value}")
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError as err:
        raise ValueError(f"is not a proxy URL ({err})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an http:// or https:// proxy URL (or host:port)")
    if any(c.isspace() or not c.isprintable() for c in value):
        raise ValueError("must be a proxy URL without white space")
    return value


#: ``HTTP_PROXY``/``HTTPS_PROXY`` of the agent.
ProxyUrl = Annotated[AgentStr, AfterValidator(_proxy_url)]


class ProxySettings(Frozen):
    httpProxy: ProxyUrl | None = None
    httpsProxy: ProxyUrl | None = None
    noProxy: AgentStr | None = None


class AgentOverride(Frozen):
    """Agent settings for the clusters this override selects (by name glob and/or labels)."""

    clusterName: str | None = Field(default=None, min_length=1)
    clusterSelector: LabelSelector | None = None
    image: AgentImage | None = None
    nodeSelector: dict[AgentLabelKey, AgentLabelValue] | None = None
    tolerations: Items[PodToleration] | None = None
    resources: Resources | None = None
    proxy: ProxySettings | None = None
    aggregate: Aggregations | None = Field(
        default=None,
        description="Score name → last|max|min|avg|sum, merged key by key over agent.aggregate.",
    )
    caBundle: CaBundle | None = Field(
        default=None, description="PEM CA certificates for these clusters; replaces agent.caBundle."
    )

    @model_validator(mode="after")
    def _needs_cluster_part(self) -> Self:
        if self.clusterName is None and self.clusterSelector is None:
            raise ValueError("an override needs clusterName and/or clusterSelector")
        return self


#: ``repository.url``'s default: an example, which ``validate`` warns about.
EXAMPLE_REPOSITORY_URL = "https://github.com/example/dsf-fleet.git"


def _own_claim(name: str) -> str:
    # the agent gets update on this name by RBAC: a claim OCM keeps (the cluster's ID) or
    # a domain's would be overwritten on every cluster
    why = reserved_claim(name)
    if why is not None:
        raise ValueError(why)
    return name


#: A ClusterClaim name the agent may own: a DNS subdomain no one else reserves.
ClaimName = Annotated[DnsSubdomain, AfterValidator(_own_claim)]


class ComplianceClaimSettings(Frozen):
    """The agent's compliance claim (upstream's policy watcher), agent.md "Compliance claim"."""

    enabled: bool = Field(
        default=False,
        description="Keep the ClusterClaim on every cluster; also on when a PlacementOptimization sets requireCompliance.",
    )
    claimName: ClaimName = Field(
        default=DEFAULT_CLAIM_NAME,
        description="The ClusterClaim the agent writes (empty, noncompliant or compliant).",
    )
    pollSeconds: PositiveInt = Field(
        default=30, le=3600, description="Seconds between two looks at the Policies at most."
    )
    stableSeconds: int = Field(
        default=120,
        ge=0,
        le=86400,
        description="Seconds the Policies must stay compliant before the claim says compliant.",
    )


class AgentSettings(Frozen):
    image: AgentImage = Field(
        default=default_image(EXAMPLE_REPOSITORY_URL),
        min_length=1,
        description="Default: what the release workflow of repository.url's GitHub repository OWNER/NAME publishes, ghcr.io/owner/name-agent:VERSION (docs/install.md).",
    )
    imagePullPolicy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    logLevel: Literal["debug", "info", "warning", "error"] = "info"
    serviceMonitor: bool = False
    resources: Resources = Resources(
        requests=ResourceList(cpu="50m", memory="64Mi"),
        limits=ResourceList(cpu="500m", memory="320Mi"),
    )
    aggregate: Aggregations = Field(
        default_factory=dict,
        description="Score name → last|max|min|avg|sum: how the agent folds results that render the same dimension.",
    )
    imagePullSecrets: Items[DnsSubdomain] = Field(
        default=(),
        description="Secrets in the agent namespace of every cluster used to pull the image (same name everywhere; the content may differ per cluster).",
    )
    caBundle: CaBundle | None = Field(
        default=None,
        description="PEM CA certificates the agent trusts for HTTPS to Prometheus and the scorers (the whole trust store: include public CAs you need).",
    )
    overrides: Items[AgentOverride] = ()
    complianceClaim: ComplianceClaimSettings = ComplianceClaimSettings()
