"""``dsf.yaml``: the settings; every key has a default."""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    Field,
    model_validator,
)

from dsf_compile.fields import DnsLabel, Frozen, Items
from dsf_compile.inputs.inventory import LabelSelector

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


class Toleration(Frozen):
    key: AgentStr | None = None
    operator: Literal["Exists", "Equal"] | None = None
    value: AgentStr | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    tolerationSeconds: int | None = None


class ResourceList(Frozen):
    cpu: AgentStr | None = None
    memory: AgentStr | None = None


class Resources(Frozen):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class ProxySettings(Frozen):
    httpProxy: AgentStr | None = None
    httpsProxy: AgentStr | None = None
    noProxy: AgentStr | None = None


class AgentOverride(Frozen):
    """Agent settings for the clusters this override selects (by name glob and/or labels)."""

    clusterName: str | None = Field(default=None, min_length=1)
    clusterSelector: LabelSelector | None = None
    image: AgentStr | None = Field(default=None, min_length=1)
    nodeSelector: dict[str, AgentStr] | None = None
    tolerations: Items[Toleration] | None = None
    resources: Resources | None = None
    proxy: ProxySettings | None = None

    @model_validator(mode="after")
    def _needs_cluster_part(self) -> AgentOverride:
        if self.clusterName is None and self.clusterSelector is None:
            raise ValueError("an override needs clusterName and/or clusterSelector")
        return self


class AgentSettings(Frozen):
    image: AgentStr = Field(default="quay.io/dynamic-scoring/dsf-agent:0.1.0", min_length=1)
    imagePullPolicy: Literal["Always", "IfNotPresent", "Never"] = "IfNotPresent"
    logLevel: Literal["debug", "info", "warning", "error"] = "info"
    serviceMonitor: bool = False
    resources: Resources = Resources(
        requests=ResourceList(cpu="50m", memory="64Mi"),
        limits=ResourceList(cpu="500m", memory="256Mi"),
    )
    overrides: Items[AgentOverride] = ()


class RepositorySettings(Frozen):
    url: str = "https://github.com/example/dsf-fleet.git"
    branch: str = Field(default="main", min_length=1)
    path: str = Field(default="rendered", min_length=1)


class SyncSettings(Frozen):
    timeoutSeconds: Annotated[float, Field(gt=0, le=600)] = 10.0
    concurrency: Annotated[int, Field(ge=1, le=1024)] = 128
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    maxResponseBytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = 1024 * 1024
    allowedHosts: Items[str] = Field(
        default=(), description="Host names or globs sync may contact; empty allows every host."
    )
    resolve: dict[str, str] = Field(
        default_factory=dict,
        description="Connect to another address for a host:port, like curl --connect-to: {'svc.ns:8000': '127.0.0.1:18000'}.",
    )


class RenderSettings(Frozen):
    keepInactive: bool = False


class Settings(Frozen):
    """``dsf.yaml``: every key has a default."""

    hubNamespace: DnsLabel = "open-cluster-management"
    agentNamespace: DnsLabel = "dynamic-scoring"
    addonName: DnsLabel = "dynamic-scoring-framework"
    agent: AgentSettings = AgentSettings()
    repository: RepositorySettings = RepositorySettings()
    sync: SyncSettings = SyncSettings()
    render: RenderSettings = RenderSettings()
