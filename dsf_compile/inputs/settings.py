"""``dsf.yaml``: the settings; every key has a default."""

# No ``from __future__ import annotations`` here: pydantic would compile and evaluate every
# field's annotation from its text when the class is built, at the start of every command
# (a fifth of this module's import); evaluated by the interpreter, they cost nothing more.

import re
from typing import Annotated, Any, Literal, Self
from urllib.parse import urlsplit

from pydantic import (
    AfterValidator,
    Field,
    model_validator,
)

from dsf_compile.inputs.agent_image import (
    with_default_image,
)
from dsf_compile.inputs.agent_settings import (
    EXAMPLE_REPOSITORY_URL,
    AgentSettings,
)
from dsf_compile.inputs.inventory import LabelSelector
from dsf_compile.inputs.shard_limits import MAX_SHARDS
from dsf_compile.inputs.sync_settings import SyncSettings
from dsf_contract.fields import (
    DnsLabel,
    DnsSubdomain,
    Frozen,
    Items,
    PositiveInt,
)
from dsf_contract.summary import DEFAULT_AGENT_NAMESPACE


def _repository_url(value: str) -> str:
    # Argo CD takes more forms, Flux's GitRepository only these: both are rendered
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - raises on a port out of range
    except ValueError as err:
        raise ValueError(f"is not a valid URL ({err})") from None
    if parts.scheme not in ("https", "http", "ssh") or not parts.hostname:
        raise ValueError(
            "must be an https://, http:// or ssh:// URL of a Git repository "
            "(Flux takes no scp-style host:path address; write it with ssh:// and a '/')"
        )
    if any(c.isspace() for c in value):
        raise ValueError("must be a URL without white space")
    if parts.password is not None or (parts.username and parts.scheme != "ssh"):
        raise ValueError("must not carry credentials; the GitOps tool's own Secret holds them")
    if parts.fragment or parts.query:
        raise ValueError(
            "must not have a ?query or #fragment; the branch goes in repository.branch"
        )
    return value


#: The Git repository the rendered Argo CD and Flux objects point at.
RepositoryUrl = Annotated[
    str,
    AfterValidator(_repository_url),
    Field(json_schema_extra={"pattern": r"^([Hh][Tt][Tt][Pp][Ss]?|[Ss][Ss][Hh])://[^\s?#]+$"}),
]


#: A Go duration as External Secrets and Prometheus read it: ``30s``, ``1h``, ``1h30m``.
Duration = Annotated[str, Field(pattern=r"^([0-9]+(ms|s|m|h))+$")]


class SecretStoreRef(Frozen):
    """The External Secrets store every ExternalSecret reads from."""

    kind: Literal["ClusterSecretStore", "SecretStore"] = "ClusterSecretStore"
    name: DnsSubdomain


class RemoteSecret(Frozen):
    """Where one Secret's data lives in the store."""

    remoteKey: str = Field(
        min_length=1,
        description="The key in the store; ${cluster} is replaced by the cluster's name.",
    )
    property: str | None = Field(
        default=None,
        min_length=1,
        description="Read each key the scorers use from this property of the remote secret; "
        "without it every property of the remote secret becomes a key of the Secret.",
    )

    @model_validator(mode="after")
    def _placeholders(self) -> Self:
        unknown = sorted(set(re.findall(r"\$\{([^}]*)\}", self.remoteKey)) - {"cluster"})
        if unknown:
            raise ValueError(
                "remoteKey: unknown placeholder "
                + ", ".join("${" + u + "}" for u in unknown)
                + "; only ${cluster} is replaced"
            )
        return self


class ExternalSecretsSettings(Frozen):
    """Render an ExternalSecret (external-secrets.io) for each Secret the scorers name."""

    storeRef: SecretStoreRef
    refreshInterval: Duration = "1h"
    secrets: dict[DnsSubdomain, RemoteSecret] = Field(
        description="Secret name → its remote key; every Secret a scorer or agent.imagePullSecrets names needs one."
    )


#: A Kubernetes label: an optional DNS-subdomain prefix and a name of up to 63 characters.
LabelKey = Annotated[
    str,
    Field(
        pattern=r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
    ),
]
LabelValue = Annotated[
    str, Field(pattern=r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$", max_length=63)
]


class AlertSettings(Frozen):
    failingCycles: Annotated[int, Field(ge=1, le=1000)] = Field(
        default=3, description="Alert when a scorer failed this many cycles and none succeeded."
    )
    window: Duration = Field(default="15m", description="The window failingCycles is counted over.")
    staleSeconds: Annotated[int, Field(ge=60)] = Field(
        default=900, description="Alert when a scorer's last successful cycle is older than this."
    )
    severity: Literal["info", "warning", "critical"] = "warning"


class ObservabilitySettings(Frozen):
    """Alerts, recording rules and a dashboard, installed beside the agent on every cluster."""

    prometheusRule: bool = False
    dashboard: bool = False
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict,
        description="Added to the ServiceMonitor and PrometheusRule, for the Prometheus Operator's selectors (for example release: kube-prometheus-stack).",
    )
    dashboardLabels: dict[LabelKey, LabelValue] = Field(
        default_factory=lambda: {"grafana_dashboard": "1"},
        description="Labels of the dashboard ConfigMap that Grafana's sidecar looks for.",
    )
    alerts: AlertSettings = AlertSettings()


class PlacementInstall(Frozen):
    """Install the agent on every cluster a Placement selects, as soon as it joins."""

    clusterSets: Items[DnsLabel] = Field(
        default=("global",),
        min_length=1,
        description="ManagedClusterSets the Placement spans (global: every cluster that joins the hub).",
    )
    labelSelector: LabelSelector | None = None


class AddonSettings(Frozen):
    installStrategy: Literal["Manual", "Placements"] = Field(
        default="Manual",
        description="Manual: a ManagedClusterAddOn per inventory cluster; Placements: OCM's addon manager installs the agent wherever the Placement selects, before the inventory knows the cluster.",
    )
    placement: PlacementInstall = PlacementInstall()


_BAD_REF = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//|^[-/.]|[/.]$|\.lock(?:/|$)|/\.")


def _branch(value: str) -> str:
    # git's rules for a branch name (git check-ref-format --branch): Flux and Argo CD
    # fetch refs/heads/<branch>, and no such ref exists for a name git refuses
    if value == "@" or _BAD_REF.search(value):
        raise ValueError(
            f"{value!r} is not a name git allows for a branch (no spaces, '..', '~^:?*[\\', "
            "'@{', leading '-' or '.', trailing '/', '.' or '.lock')"
        )
    return value


def _repository_folder(value: str) -> str:
    # Argo CD refuses a path outside the repository; Flux's ./<path> would leave it too
    parts = value.strip("/").removeprefix("./").split("/")
    if ".." in parts or "\\" in value or any(not c.isprintable() for c in value):
        raise ValueError(
            "must be a folder inside the repository (no '..', '\\' or control characters)"
        )
    return value


class RepositorySettings(Frozen):
    url: RepositoryUrl = EXAMPLE_REPOSITORY_URL
    branch: Annotated[str, Field(min_length=1, max_length=255), AfterValidator(_branch)] = "main"
    path: Annotated[
        str, Field(min_length=1, max_length=4096), AfterValidator(_repository_folder)
    ] = "rendered"


def _limit(default: int, *, most: int, least: int = 1, description: str) -> Any:
    """A bound of an untrusted read (a count or a size), between ``least`` and ``most``."""
    return Field(default=default, ge=least, le=most, description=description)


#: A wall-clock limit of one command's reads, in seconds (at most an hour).
WallClockSeconds = Annotated[float, Field(gt=0, le=3600, allow_inf_nan=False)]


class HubSettings(Frozen):
    """Bounds of every read from a hub (``--hub-kubeconfig``): a hub's answers are untrusted."""

    timeoutSeconds: WallClockSeconds = Field(
        default=60.0,
        description="Wall-clock limit of one command's whole hub read, every list and page included.",
    )
    pageSize: int = _limit(
        500, most=10_000, description="Objects asked for per list call (the limit of each page)."
    )
    maxPages: int = _limit(
        1000, most=100_000, description="Pages one list may take before the read is refused."
    )
    maxItems: int = _limit(
        100_000,
        most=10_000_000,
        description="Objects one list may hold before the read is refused.",
    )
    maxBytes: int = _limit(
        64 * 1024 * 1024,
        most=4 * 1024 * 1024 * 1024,
        least=1024,
        description="Bytes the hub's answers to one command may hold together (headers included).",
    )


def _power_of_two(value: int) -> int:
    # doubling the count splits each shard in two: a cluster moves only to its own half
    if value & (value - 1):
        raise ValueError(f"must be a power of two (1, 2, 4, … {MAX_SHARDS}), not {value}")
    return value


#: A pinned number of shards (``render.shards``).
ShardCount = Annotated[int, Field(ge=1, le=MAX_SHARDS), AfterValidator(_power_of_two)]


class HistorySettings(Frozen):
    """``backtest``'s reads of the score history (a Prometheus-compatible API or a file)."""

    timeoutSeconds: WallClockSeconds = Field(
        default=300.0,
        description="Wall-clock limit of one command's whole history read, every request included.",
    )
    maxBytes: int = _limit(
        4 * 1024 * 1024 * 1024,
        most=64 * 1024 * 1024 * 1024,
        least=1024,
        description="Bytes the history's answers (or file, uncompressed) may hold together.",
    )
    maxSeries: int = _limit(
        1_000_000, most=100_000_000, description="Series one read may hold before it is refused."
    )
    maxPoints: int = _limit(
        200_000_000,
        most=10_000_000_000,
        description="Samples one read may hold before it is refused.",
    )
    maxSteps: int = _limit(
        100_000, most=10_000_000, description="Steps one replay may take (--from, --to and --step)."
    )


class RenderSettings(Frozen):
    keepInactive: bool = False
    # 32 MiB: about 450 clusters of 100 scorers; why, in docs/gitops.md ("Sharding")
    shardBytes: PositiveInt = Field(
        default=32 * 1024 * 1024,
        description="The byte budget of one shard's per-cluster objects: past it, render asks "
        "for more shards (shards/, each applied by an Application or Flux Kustomization of its "
        "own): an error naming the count to pin while render.shards is unset, a warning once "
        "it is set.",
    )
    shards: ShardCount | None = Field(
        default=None,
        description="The number of shards, pinned (a power of two; 1: no shards/). Unset: one "
        "shard, and render refuses a fleet past render.shardBytes until it is set; the budget "
        "never changes the count on its own (docs/gitops.md, 'Changing the number of shards').",
    )


class Settings(Frozen):
    """``dsf.yaml``: every key has a default."""

    hubNamespace: DnsLabel = "open-cluster-management"
    agentNamespace: DnsLabel = DEFAULT_AGENT_NAMESPACE
    addonName: DnsLabel = "dynamic-scoring-framework"
    agent: AgentSettings = AgentSettings()
    repository: RepositorySettings = RepositorySettings()
    sync: SyncSettings = SyncSettings()
    hub: HubSettings = HubSettings()
    history: HistorySettings = HistorySettings()
    render: RenderSettings = RenderSettings()
    addon: AddonSettings = AddonSettings()
    externalSecrets: ExternalSecretsSettings | None = None
    observability: ObservabilitySettings = ObservabilitySettings()

    @model_validator(mode="before")
    @classmethod
    def _derive_agent_image(cls, data: Any) -> Any:
        # agent.image's default depends on repository.url (dsf_compile.inputs.agent_image)
        return with_default_image(data)
