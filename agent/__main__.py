"""``dsf-agent``: wire the stages together, serve the endpoints, stop cleanly on SIGTERM,
re-read the configuration on SIGHUP."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, cast

from agent.compliance import ClaimApi, ComplianceClaim
from agent.config_sources import ConfigMapSource, FileSource
from agent.cycle import CycleContext
from agent.errors import AgentError, Reason
from agent.kube import (
    HubApi,
    ManagedClusterApi,
    core_api,
    custom_objects_api,
    hub_client,
    managed_cluster_client,
)
from agent.logs import configure_logging, fields
from agent.loop import Agent
from agent.memory import trimmed, tune_malloc
from agent.metrics import AgentMetrics
from agent.publish import HubPublisher
from agent.secrets import ApiSecretStore, DirSecretStore, SecretStore
from agent.server import EndpointServer
from agent.settings import RuntimeSettings, parse_settings
from agent.transport import make_client
from dsf_contract.summary import CONFIG_MAP_NAME

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("dsf.agent")


async def run_agent(
    settings: RuntimeSettings,
    stop: asyncio.Event,
    *,
    metrics: AgentMetrics | None = None,
    core: ManagedClusterApi | None = None,
    hub: HubApi | None = None,
    claims: ClaimApi | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    on_listening: Callable[[int], None] | None = None,
    reload: asyncio.Event | None = None,
) -> None:
    """Run until ``stop`` is set; each time ``reload`` is set, re-read the configuration.

    ``core``/``hub``/``claims`` (``CoreV1Api``/``CustomObjectsApi``) are built from the
    environment unless given; tests inject them, and ``metrics`` to read them. ``on_listening``
    receives the endpoints' port.
    """
    if core is None and (settings.config_file is None or settings.secrets_dir is None):
        core = core_api(managed_cluster_client())
    if hub is None and settings.hub_kubeconfig is not None:
        hub = custom_objects_api(hub_client(settings.hub_kubeconfig))
    if metrics is None:
        metrics = AgentMetrics(settings.cluster_name)
    secrets = _secret_store(settings, core)
    source = _config_source(settings, core, metrics)
    metrics.config_ok.set(0)
    compliance = _compliance_claim(settings, metrics, claims)
    publisher = _publisher(settings, hub)
    async with make_client(
        settings.request_timeout, transport=transport, connect_to=settings.connect_to
    ) as client:
        ctx = CycleContext(
            settings=settings, client=client, secrets=secrets, metrics=metrics, hub=publisher
        )
        agent = Agent(ctx)
        server = EndpointServer(
            settings.metrics_host,
            settings.metrics_port,
            trimmed(metrics.exposition),
            ready=agent.is_ready,
        ).start()
        if on_listening is not None:
            on_listening(server.port)
        config = str(settings.config_file or f"configmap {CONFIG_MAP_NAME}")
        log.info(
            "agent_started",
            extra=fields(cluster=settings.cluster_name, config=config, hub=publisher is not None),
        )
        closers: list[Callable[[], None]] = [server.close]
        if publisher is not None:
            closers.insert(0, publisher.close)
        if isinstance(source, ConfigMapSource):
            closers.append(source.stop)
        if compliance is not None:
            compliance.start()
            closers.append(compliance.stop)
        await _run_until_stopped(agent, source, stop, reload, closers)
    log.info("agent_stopped")


async def _run_until_stopped(
    agent: Agent,
    source: FileSource | ConfigMapSource,
    stop: asyncio.Event,
    reload: asyncio.Event | None,
    closers: Sequence[Callable[[], None]],
) -> None:
    """Follow ``source`` until ``stop`` is set (or the source fails), then stop every
    scorer and call ``closers`` in order."""
    follower = asyncio.create_task(agent.follow(source.events()), name="config")
    stopper = asyncio.create_task(stop.wait(), name="stop")
    reloader = asyncio.create_task(_reload_on(reload, source), name="reload")
    try:
        done, _ = await asyncio.wait({follower, stopper}, return_when=asyncio.FIRST_COMPLETED)
        if follower in done:
            follower.result()  # the config source never ends on its own: surface why it did
    finally:
        for task in (follower, stopper, reloader):
            task.cancel()
        await asyncio.gather(follower, stopper, reloader, return_exceptions=True)
        await agent.stop_all()
        for close in closers:
            close()


def _publisher(settings: RuntimeSettings, hub: HubApi | None) -> HubPublisher | None:
    """The writer of AddOnPlacementScores when there is a hub (``--hub-kubeconfig``)."""
    if hub is None:
        return None
    return HubPublisher(
        hub,
        settings.cluster_name,
        timeout=settings.request_timeout,
        retries=settings.hub_conflict_retries,
    )


def _secret_store(settings: RuntimeSettings, core: ManagedClusterApi | None) -> SecretStore:
    """Secrets from ``--secrets-dir``, else from the cluster API."""
    if settings.secrets_dir is not None:
        return DirSecretStore(settings.secrets_dir)
    assert core is not None  # built whenever a Secret or the ConfigMap needs it
    return ApiSecretStore(core, settings.namespace, timeout=settings.request_timeout)


def _config_source(
    settings: RuntimeSettings, core: ManagedClusterApi | None, metrics: AgentMetrics
) -> FileSource | ConfigMapSource:
    """The configuration from ``--config-file``, else the ConfigMap through the cluster API."""
    if settings.config_file is not None:
        return FileSource(settings.config_file, poll=settings.config_poll_seconds)
    assert core is not None

    def count_api_error(request: str, reason: str) -> None:
        metrics.config_api_errors.labels(request, reason).inc()

    return ConfigMapSource(
        core, settings.namespace, timeout=settings.request_timeout, on_error=count_api_error
    )


def _compliance_claim(
    settings: RuntimeSettings, metrics: AgentMetrics, api: ClaimApi | None
) -> ComplianceClaim | None:
    """The compliance claim's loop when ``--compliance-claim`` is set (not started yet)."""
    if settings.compliance_claim is None:
        return None
    if api is None:
        api = cast(ClaimApi, custom_objects_api(managed_cluster_client()))
    return ComplianceClaim(
        api,
        settings.cluster_name,  # OCM's policy framework puts the cluster's Policies there
        settings.compliance_claim,
        metrics,
        poll=settings.compliance_poll_seconds,
        stable=settings.compliance_stable_seconds,
        timeout=settings.request_timeout,
    )


async def _reload_on(requests: asyncio.Event | None, source: FileSource | ConfigMapSource) -> None:
    """Ask ``source`` to re-read the configuration each time ``requests`` is set."""
    if requests is None:
        return
    while True:
        await requests.wait()
        requests.clear()
        log.info("config_reload_requested")
        source.reload()


async def _main(settings: RuntimeSettings) -> None:
    stop = asyncio.Event()
    reload = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    # SIGHUP re-reads the configuration, as daemons conventionally do (its default action
    # would end the process).
    loop.add_signal_handler(signal.SIGHUP, reload.set)
    await run_agent(settings, stop, reload=reload)


def main(argv: Sequence[str] | None = None) -> None:
    """Console entry point; exits 0 after SIGTERM/SIGINT, 2 on a usage or startup error."""
    settings = parse_settings(sys.argv[1:] if argv is None else argv)
    configure_logging(settings.log_level, settings.log_format)
    tune_malloc()
    try:
        # asyncio's own loop: with requests sent straight to the transport, uvloop saved no
        # measurable CPU and cost 2 MB of memory and 14 MB of image (docs/benchmarks.md)
        with asyncio.Runner() as runner:
            runner.run(_main(settings))
    except AgentError as err:
        log.error("agent_failed", extra=fields(reason=err.reason, error=str(err)))
        sys.exit(2)
    except OSError as err:  # e.g. the metrics port is taken
        log.error("agent_failed", extra=fields(reason=Reason.OS_ERROR, error=str(err)))
        sys.exit(2)
    with contextlib.suppress(Exception):
        logging.shutdown()
    sys.exit(0)


if __name__ == "__main__":
    main()
