"""``dsf.yaml``'s ``sync`` section, apart from the other settings: what sync needs before its
first request, without the models of the agent and the rest (:mod:`dsf_compile.inputs.settings`
holds it as ``Settings.sync``)."""

# No ``from __future__ import annotations``, as in dsf_compile.inputs.settings: pydantic
# would evaluate every field's annotation from its text when the class is built.

from typing import Annotated

from pydantic import Field

from dsf_contract.fields import Frozen, Items


class SyncSettings(Frozen):
    timeoutSeconds: Annotated[float, Field(gt=0, le=600, allow_inf_nan=False)] = 10.0
    concurrency: Annotated[int, Field(ge=1, le=1024)] = 256
    retries: Annotated[int, Field(ge=0, le=10)] = 2
    maxResponseBytes: Annotated[int, Field(ge=1024, le=64 * 1024 * 1024)] = 1024 * 1024
    allowedHosts: Items[str] = Field(
        default=(), description="Host names or globs sync may contact; empty allows every host."
    )
    resolve: dict[str, str] = Field(
        default_factory=dict,
        description="Connect to another address for a host:port, like curl --connect-to: {'svc.ns:8000': '127.0.0.1:18000'}.",
    )
    maxUnreachableFraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=0.5,
        description="When more than this fraction of the scorers Active in the lockfile cannot be reached in one sync, sync writes nothing and exits 1 (1 turns the guard off).",
    )
    maxClusterRemovalFraction: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = Field(
        default=0.5,
        description="When sync --clusters would remove more than this fraction of the clusters in clusters/discovered.yaml, it writes nothing and exits 1; --allow-mass-removal overrides it once (1 turns the guard off).",
    )
