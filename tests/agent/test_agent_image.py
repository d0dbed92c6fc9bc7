"""The agent's image, built by ``agent/build-image.sh`` and run as the rendered Deployment
says, the way a kubelet runs it after OCM's addon framework processed the AddOnTemplate
(:mod:`tests.agent.kubelet`), against emulated managed-cluster and hub APIs over TLS that
enforce the rendered RBAC (:mod:`tests.agent.fleet_apis`), real Prometheus and the
reference sample scorer.

The image is built on the Debian base of :mod:`tests.podman_images` (made once per
machine), with podman as that module runs it. The agent image is built per run and
removed after it.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from dsf_compile import __version__
from dsf_compile.inputs.quantity import quantity_value
from tests.agent.agent_fakes import FakeServer, Reply, prometheus_matrix
from tests.agent.conftest import free_port
from tests.agent.fleet_apis import (
    CLUSTER,
    HUB_TOKEN,
    SA_TOKEN,
    SCORE_NAME,
    FleetApis,
    fleet_apis,
    poll_until,
    sample_scorer,
    scorer_summary,
    serve_configuration,
)
from tests.agent.kube_rbac import addon_template, rendered_cluster_roles
from tests.agent.kubelet import PodFiles, podman_run_args, probe_path, processed_manifests
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT
from tests.podman_images import BASE_IMAGE, container_logs, debian_base, podman

pytestmark = pytest.mark.integration

AGENT_IMAGE = f"localhost/dsf-agent-test:{os.getpid()}"  # this run's, removed after it
BIG_SCORE = "big_answer_score"
BIG_SERIES, BIG_POINTS = 20, 48_000  # about 21 MB of query_range answer


@dataclass(frozen=True)
class Built:
    """The image ``agent/build-image.sh`` built, its SBOM, and what the build printed."""

    tag: str
    sbom: dict[str, Any]
    output: str


@pytest.fixture(scope="module")
def built(podman_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    """The agent image, built by agent/build-image.sh from the Debian base, with its SBOM."""
    base = debian_base(podman_env)
    sbom = tmp_path_factory.mktemp("sbom") / "agent.cdx.json"
    done = subprocess.run(
        [str(REPO_ROOT / "agent" / "build-image.sh"), "--base", base, "--tag", AGENT_IMAGE,
         "--sbom", str(sbom)],
        env={**podman_env, "PYTHON": sys.executable}, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"build-image.sh failed:\n{done.stdout}\n{done.stderr}"
    yield Built(AGENT_IMAGE, json.loads(sbom.read_text()), done.stdout)
    subprocess.run(
        ["podman", "rmi", "--force", AGENT_IMAGE], env=podman_env, capture_output=True, timeout=120
    )


@pytest.fixture(scope="module")
def image(built: Built) -> str:
    return built.tag


def image_files(env: dict[str, str], image: str) -> list[tarfile.TarInfo]:
    """Every entry of the image's root filesystem (``podman export`` of a container
    created from it, never started)."""
    name = f"dsf-agent-files-{os.getpid()}"
    podman(env, "create", "--name", name, image)
    try:
        exported = subprocess.run(
            ["podman", "export", name], env=env, capture_output=True, timeout=300, check=True
        ).stdout
    finally:
        subprocess.run(["podman", "rm", "--force", name], env=env, capture_output=True, timeout=120)
    with tarfile.open(fileobj=io.BytesIO(exported)) as archive:
        return archive.getmembers()


def test_the_image_is_small_and_holds_nothing_but_the_agent(
    image: str, podman_env: dict[str, str]
) -> None:
    (config,) = json.loads(podman(podman_env, "image", "inspect", image))
    assert config["Size"] <= 120_000_000, config["Size"]
    entries = image_files(podman_env, image)
    # no shell, package manager or compiler: the only programs are the interpreter and
    # the agent's script (which the kernel starts through its #! line)
    programs = sorted(
        "/" + e.name.lstrip("./")
        for e in entries
        if e.isfile() and e.mode & 0o111 and ".so" not in e.name
    )
    assert programs == ["/opt/dsf-agent/bin/dsf-agent", "/usr/bin/python3.11"], programs
    names = {Path(e.name).name for e in entries}
    for tool in ("sh", "bash", "dash", "busybox", "apt", "apt-get", "dpkg", "rpm", "pip",
                 "gcc", "cc", "ld", "as", "make"):  # fmt: skip
        assert tool not in names, tool
    # none of the standard library the agent does not run
    paths = {e.name.lstrip("./") for e in entries}
    for left_out in ("test", "idlelib", "tkinter", "ensurepip", "pydoc_data", "lib2to3"):
        assert not any(f"/python3.11/{left_out}/" in path for path in paths), left_out
    # nor the image's own build (agent_image/: run from the build context, never shipped)
    build = sorted(p for p in paths if "/agent_image/" in p or "/agent/image_" in p)
    assert not build, build
    assert any(p.endswith("/site-packages/agent/cycle.pyc") for p in paths)
    for shell in ("/bin/sh", "/bin/bash", "/usr/bin/apt-get", "/usr/bin/dpkg", "/usr/bin/gcc"):
        done = subprocess.run(
            ["podman", "run", "--rm", "--network", "none", "--entrypoint", shell, image, "-c", "true"],
            env=podman_env, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert done.returncode != 0 and "no such file" in done.stderr.lower(), done.stderr
    helped = podman(
        podman_env, "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all",
        "--user", "65532:65532", image, "--help",
    )  # fmt: skip
    assert "--cluster-name" in helped


def locked_versions() -> dict[str, tuple[str, set[str]]]:
    """Normalized name -> (version, SHA-256 digests) of agent/requirements.lock."""
    text = (REPO_ROOT / "agent" / "requirements.lock").read_text().replace("\\\n", " ")
    locked = {}
    for line in text.splitlines():
        if line and not line.startswith((" ", "#")):
            requirement, *hashes = line.split()
            name, version = requirement.split("==")
            digests = {h.removeprefix("--hash=sha256:") for h in hashes}
            locked[re.sub(r"[-_.]+", "-", name).lower()] = (version, digests)
    return locked


def test_the_sbom_names_every_distribution_and_debian_package(
    built: Built, podman_env: dict[str, str]
) -> None:
    sbom = built.sbom
    assert sbom["bomFormat"] == "CycloneDX" and sbom["specVersion"] == "1.6"
    by_purl = {c["purl"].split("@")[0]: c for c in sbom["components"]}
    # every locked distribution, at its version, with the digest of a wheel the lock allows
    for name, (version, digests) in locked_versions().items():
        component = by_purl[f"pkg:pypi/{name}"]
        assert component["version"] == version
        assert {h["content"] for h in component["hashes"]} <= digests
    assert by_purl["pkg:pypi/ocm-dynamic-scoring"]["version"] == __version__
    # the Debian packages the image's files come from, at the base's versions
    installed = dict(
        line.split("\t")
        for line in podman(
            podman_env, "run", "--rm", "--network", "none", "--entrypoint", "dpkg-query",
            BASE_IMAGE, "--show", "--showformat", "${Package}\t${Version}\n",
        ).splitlines()
    )  # fmt: skip
    for package in ("libc6", "libssl3", "python3.11-minimal", "libpython3.11-stdlib", "zlib1g"):
        component = by_purl[f"pkg:deb/debian/{package}"]
        assert component["version"] == installed[package], package
        assert "arch=" in component["purl"] and "distro=debian-12" in component["purl"]
    debian = [c["name"] for c in sbom["components"] if c["purl"].startswith("pkg:deb/")]
    assert "bash" not in debian and "dpkg" not in debian and "apt" not in debian, debian
    # the same document is in the image
    inside = podman(
        podman_env, "run", "--rm", "--network", "none", "--entrypoint", "/opt/dsf-agent/bin/python",
        built.tag, "-c", "print(open('/usr/share/doc/dsf-agent/sbom.cdx.json').read())",
    )  # fmt: skip
    assert json.loads(inside) == sbom
    # the build printed the digest of every wheel it installed
    for _name, (_version, digests) in locked_versions().items():
        assert any(f"sha256:{digest}" in built.output for digest in digests)


def test_the_image_runs_as_the_rendered_pod_requires(
    image: str, podman_env: dict[str, str]
) -> None:
    (config,) = json.loads(podman(podman_env, "image", "inspect", image))
    # runAsNonRoot without runAsUser: a kubelet runs the image's user, which must be numeric
    user = config["Config"]["User"]
    assert user.split(":")[0].isdigit() and int(user.split(":")[0]) == 65532
    assert config["Config"]["Entrypoint"][-1].endswith("dsf-agent")
    # what the image holds: the agent's runtime and none of the compiler's dependencies
    listing = podman(
        podman_env, "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all",
        "--entrypoint", "/opt/dsf-agent/bin/python", image, "-c",
        "import importlib.metadata as m; print(sorted(d.metadata['Name'].lower() for d in m.distributions()))",
    )  # fmt: skip
    # prometheus_client: the agent writes /metrics itself (agent/textformat.py)
    absent_ones = ("jinja2", "jsonschema", "scipy", "mcp", "pip", "setuptools", "prometheus_client")
    for absent in absent_ones:
        assert f"'{absent}'" not in listing
    for present in ("kubernetes", "httpx", "orjson", "pydantic"):
        assert f"'{present}'" in listing
    # the agent, the contract and the transport, without the compiler
    found = podman(
        podman_env, "run", "--rm", "--network", "none", "--read-only", "--cap-drop", "all",
        "--entrypoint", "/opt/dsf-agent/bin/python", image, "-c",
        "import importlib.util as u, shutil; "
        "print([bool(u.find_spec(m)) for m in ('agent', 'dsf_contract', 'dsf_transport', 'dsf_compile')], "
        "shutil.which('dsf-compile'))",
    )  # fmt: skip
    assert found.strip() == "[True, True, True, False] None"


def big_answer() -> bytes:
    """A query_range answer of about 21 MB: BIG_SERIES series of BIG_POINTS points."""
    values = [[1718600000 + i, f"{i % 100}.5"] for i in range(BIG_POINTS)]
    series = [
        {"metric": {"node": f"n{i}", "namespace": "big", "pod": f"p{i}"}, "values": values}
        for i in range(BIG_SERIES)
    ]
    return json.dumps(prometheus_matrix(series)).encode()


@pytest.fixture(scope="module")
def big_prometheus() -> Iterator[FakeServer]:
    body = big_answer()
    assert len(body) > 20_000_000
    server = FakeServer(lambda request: Reply(body=body)).start()
    yield server
    server.stop()


def answers_ok(url: str) -> bool:
    """An HTTP GET of ``url`` answers 200, as a kubelet's httpGet probe wants."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status) == 200
    except OSError:  # refused, or an HTTPError (not 2xx)
        return False


def metric_value(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if not line.startswith(name + "{"):
            continue
        if all(f'{key}="{value}"' in line for key, value in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def pod_args(
    deployment: dict[str, Any], apis: FleetApis, folder: Path, image: str, name: str, port: int
) -> list[str]:
    """``podman run`` arguments for the Deployment on :data:`CLUSTER`, with the hub
    kubeconfig Secret as OCM's token registration writes it (``kubeconfig`` naming the
    ``token`` file beside it)."""
    hub_secret = {"kubeconfig": apis.hub.kubeconfig(token_file="token"), "token": HUB_TOKEN}
    files = PodFiles(
        secrets={f"{apis.addon}-hub-kubeconfig": hub_secret},
        token=SA_TOKEN,
        ca_pem=apis.ca_pem,
        api_port=apis.managed.server.port,
    )
    return podman_run_args(deployment, files, folder, image=image, name=name, metrics_port=port)


def rendered_deployment() -> tuple[dict[str, Any], dict[str, Any]]:
    """The AddOnTemplate of ``rendered/`` and its Deployment as OCM processes it."""
    template = addon_template(EXAMPLE_FLEET / "rendered")
    (deployment,) = [m for m in processed_manifests(template, CLUSTER) if m["kind"] == "Deployment"]
    return template, deployment


def test_the_rendered_tmp_volume_is_needed(
    image: str, podman_env: dict[str, str], tmp_path: Path
) -> None:
    # The Kubernetes client writes the hub kubeconfig's CA to a temporary file: without the
    # rendered emptyDir at /tmp, the read-only root refuses it and the agent cannot start.
    template, deployment = rendered_deployment()
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    mounts = container["volumeMounts"]
    assert [m["mountPath"] for m in mounts].count("/tmp") == 1
    container["volumeMounts"] = [m for m in mounts if m["mountPath"] != "/tmp"]
    name = f"dsf-agent-test-notmp-{os.getpid()}"
    rendered = EXAMPLE_FLEET / "rendered"
    with fleet_apis(template, rendered_cluster_roles(rendered), tmp_path) as apis:
        args = pod_args(deployment, apis, tmp_path / "pod", image, name, free_port())
        try:
            podman(podman_env, *args)
            podman(podman_env, "wait", name, timeout=120)
            (state,) = json.loads(podman(podman_env, "container", "inspect", name))
            log = container_logs(podman_env, name)
            assert state["State"]["ExitCode"] == 2, log
            assert "hub kubeconfig" in log and "No usable temporary directory" in log, log
        finally:
            subprocess.run(
                ["podman", "rm", "--force", name], env=podman_env, capture_output=True, timeout=120
            )


def test_the_rendered_deployment_runs_as_a_kubelet_runs_it(
    image: str,
    podman_env: dict[str, str],
    prometheus: str,
    big_prometheus: FakeServer,
    tmp_path: Path,
) -> None:
    rendered = EXAMPLE_FLEET / "rendered"
    template = addon_template(rendered)
    (deployment,) = [m for m in processed_manifests(template, CLUSTER) if m["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    limits = container["resources"]["limits"]
    grace = int(deployment["spec"]["template"]["spec"].get("terminationGracePeriodSeconds", 30))
    port = free_port()
    name = f"dsf-agent-test-{os.getpid()}"
    with (
        fleet_apis(template, rendered_cluster_roles(rendered), tmp_path) as apis,
        sample_scorer() as scorer,
    ):
        serve_configuration(
            apis,
            template,
            [
                scorer_summary(template, prometheus, scorer, scoringInterval=5),
                scorer_summary(
                    template,
                    big_prometheus.url,
                    scorer,
                    name="big-answer",
                    scoreName=BIG_SCORE,
                    scoringInterval=30,
                ),
            ],
        )
        args = pod_args(deployment, apis, tmp_path / "pod", image, name, port)
        podman(podman_env, *args)
        try:

            def logs() -> str:
                return container_logs(podman_env, name)

            base = f"http://127.0.0.1:{port}"
            for probe in ("livenessProbe", "readinessProbe"):
                path = probe_path(container, probe)
                poll_until(partial(answers_ok, base + path), f"{probe} {path}", logs)

            def metrics() -> str:
                with urllib.request.urlopen(base + "/metrics", timeout=10) as response:
                    return str(response.read().decode())

            poll_until(
                lambda: "dynamic_score{" in metrics()
                and metric_value(metrics(), "dynamic_scoring_requests_total", score_name=BIG_SCORE, status="success") >= 1,
                "dynamic_score and a cycle of the 20 MB answer",
                logs,
            )  # fmt: skip
            for score_name in (SCORE_NAME, BIG_SCORE):
                object_name = score_name.replace("_", "-")
                stored = poll_until(
                    partial(apis.hub.get, "addonplacementscores", CLUSTER, object_name),
                    f"the AddOnPlacementScore of {score_name}",
                    logs,
                )
                assert stored["status"]["scores"], stored
            assert len(stored["status"]["scores"]) == BIG_SERIES
            text = metrics()
            assert metric_value(text, "dynamic_scoring_failures_total") == 0, text
            (state,) = json.loads(podman(podman_env, "container", "inspect", name))
            assert state["State"]["Running"] and not state["State"]["OOMKilled"]
            assert state["HostConfig"]["Memory"] == int(quantity_value(limits["memory"]))
            assert state["HostConfig"]["ReadonlyRootfs"] is True
            assert apis.denied() == []
            # podman sends SIGTERM, then SIGKILL after the grace period: exit code 0 (not
            # 137) is the agent's own clean exit before the kill
            podman(podman_env, "stop", "--time", str(grace), name, timeout=grace + 30)
            (state,) = json.loads(podman(podman_env, "container", "inspect", name))
            assert state["State"]["ExitCode"] == 0, logs()
            assert not state["State"]["OOMKilled"]
            assert "agent_stopped" in logs()
        finally:
            subprocess.run(
                ["podman", "rm", "--force", name], env=podman_env, capture_output=True, timeout=120
            )


def test_the_agent_benchmark_measures_the_image(image: str, podman_env: dict[str, str]) -> None:
    # python -m bench --agent-image: the load rows for the agent as it ships (quick sizes;
    # the figures mean nothing here, the rows do)
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "--only", "agent", "--agent-image", image],
        env=podman_env, capture_output=True, text=True, timeout=600, cwd=REPO_ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = {
        cells[1]: cells[2:]
        for line in done.stdout.splitlines()
        if line.startswith("| agent |")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert float(rows["image: cycles done (% of scheduled)"][1]) > 0
    assert 0 < float(rows["image: RSS under load (MiB)"][1]) < 200
    assert f"the image {image} under podman" in rows["image: CPU (% of one core)"][0]
