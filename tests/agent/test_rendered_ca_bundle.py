"""A scorer behind a private CA: the agent, set up as the rendered Deployment says (the CA
bundle from the ManifestWork's ConfigMap at ``SSL_CERT_FILE``), scores over HTTPS; without
the bundle the same scorer fails certificate verification."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.manifests import render_manifests
from tests.agent.agent_fakes import FakeServer, average_scorer
from tests.agent.conftest import AgentProcess, agent_env, make_summary
from tests.agent.pki import make_pki
from tests.day2_fleet import day2_fleet

SCORE = "tls_score"


@pytest.fixture
def pki(tmp_path: Path) -> Path:
    """A private CA and a server certificate for 127.0.0.1 signed by it."""
    return make_pki(tmp_path / "pki", "IP:127.0.0.1")


def tls_server(pki: Path) -> FakeServer:
    server = FakeServer(average_scorer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki / "server.crt", pki / "server.key")
    server._server.socket = context.wrap_socket(server._server.socket, server_side=True)
    return server.start()


@pytest.fixture
def https_scorer(pki: Path) -> Iterator[FakeServer]:
    server = tls_server(pki)
    yield server
    server.stop()


def rendered_ca_and_env(root: Path, ca: str) -> tuple[str, dict[str, str]]:
    indented = "".join("    " + line + "\n" for line in ca.splitlines())
    (root / "dsf.yaml").write_text(f"agent:\n  caBundle: |\n{indented}", encoding="utf-8")
    files = render_manifests(plan_fleet(root))
    work = yaml.safe_load(files["clusters/worker01/manifestwork.yaml"])
    configmap = next(
        m
        for m in work["spec"]["workload"]["manifests"]
        if m["metadata"]["name"] == "dynamic-scoring-agent-ca"
    )
    template = yaml.safe_load(files["hub/addon/addontemplate.yaml"])
    deployment = next(
        m
        for m in template["spec"]["agentSpec"]["workload"]["manifests"]
        if m["kind"] == "Deployment"
    )
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"] if "value" in e}
    return configmap["data"]["ca.crt"], env


def outcomes(agent: AgentProcess) -> dict[str, float]:
    return {
        sample.labels["status"]: sample.value
        for family in text_string_to_metric_families(agent.metrics())
        if family.name == "dynamic_scoring_requests"
        for sample in family.samples
        if sample.name.endswith("_total") and sample.labels.get("score_name") == SCORE
    }


def wait_outcome(agent: AgentProcess, status: str) -> dict[str, float]:
    deadline = time.monotonic() + 30
    seen: dict[str, float] = {}
    while time.monotonic() < deadline:
        seen = outcomes(agent)
        if seen.get(status, 0) > 0:
            return seen
        time.sleep(0.1)
    pytest.fail(f"no {status} cycle: {seen}\n{agent.log()}")


@pytest.mark.parametrize("with_bundle", [True, False])
def test_a_scorer_behind_a_private_ca(
    tmp_path: Path,
    pki: Path,
    https_scorer: FakeServer,
    agent_process: Callable[..., AgentProcess],
    with_bundle: bool,
) -> None:
    root = day2_fleet(tmp_path / "fleet")
    ca, env = rendered_ca_and_env(root, (pki / "ca.crt").read_text())
    # The kubelet mounts the ConfigMap at the path SSL_CERT_FILE names.
    assert env["SSL_CERT_FILE"] == "/etc/dsf/ca/ca.crt"
    mounted = tmp_path / "mount" / "ca.crt"
    mounted.parent.mkdir()
    mounted.write_text(ca)
    summary = make_summary(
        scoreName=SCORE,
        sourceType="None",
        sourceEndpoint="",
        sourceQuery="",
        scoringEndpoint=f"https://127.0.0.1:{https_scorer.port}/scoring",
        scoreDestination="None",
    )
    (tmp_path / "summaries.json").write_text(json.dumps([summary]))
    (tmp_path / "secrets").mkdir()
    extra = {"SSL_CERT_FILE": str(mounted)} if with_bundle else {}
    agent = agent_process(
        "--cluster-name",
        "worker01",
        "--config-file",
        str(tmp_path / "summaries.json"),
        "--secrets-dir",
        str(tmp_path / "secrets"),
        env=agent_env(**extra),
    )
    if with_bundle:
        seen = wait_outcome(agent, "success")
        assert seen.get("failure", 0) == 0
        assert https_scorer.taken("/scoring")
    else:
        wait_outcome(agent, "failure")
        assert outcomes(agent).get("success", 0) == 0


SERVICE = "scorer.dynamic-scoring.svc"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("url_host", "with_bundle", "succeeds"),
    [
        (SERVICE, True, True),
        (SERVICE, False, False),  # the public CAs do not know the private one
        ("other.dynamic-scoring.svc", True, False),  # mapped too, but not the certificate's name
    ],
)
async def test_a_private_ca_through_resolve_checks_the_service_name(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    url_host: str,
    with_bundle: bool,
    succeeds: bool,
) -> None:
    """``--resolve`` to loopback keeps TLS verifying the name the URL has, against the CA
    bundle ``SSL_CERT_FILE`` names (httpx reads it when the client is built)."""
    from agent.errors import ScoreError
    from agent.score import request_scores
    from agent.transport import RequestSlots, make_client

    pki = make_pki(tmp_path / "pki", f"DNS:{SERVICE}")
    server = tls_server(pki)
    try:
        if with_bundle:
            monkeypatch.setenv("SSL_CERT_FILE", str(pki / "ca.crt"))
        else:
            monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        monkeypatch.delenv("SSL_CERT_DIR", raising=False)
        connect_to = {(name, 8443): ("127.0.0.1", server.port) for name in (SERVICE, url_host)}
        async with make_client(5.0, connect_to=connect_to) as client:
            call = request_scores(
                client,
                f"https://{url_host}:8443/scoring",
                [],
                token=None,
                max_bytes=1 << 20,
                slots=RequestSlots(5.0),
            )
            if succeeds:
                assert (await call).results == []
                assert server.taken("/scoring")[0].headers["host"] == f"{SERVICE}:8443"
            else:
                with pytest.raises(ScoreError):
                    await call
                assert not server.taken("/scoring")
    finally:
        server.stop()
