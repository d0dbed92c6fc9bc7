"""The samples on a cluster: ``samples/deploy`` built by real kustomize, and the image of
``samples/build-image.sh`` run as each Deployment says, then checked by ``scorer-check``.

The image is built from the Debian base the agent's image test makes with ``mmdebstrap``
(:func:`tests.podman_images.debian_base`), with podman and runc; a container
runs with the Deployment's args (its port moved to a free one: the containers share the
host's network), env, user, read-only root and emptyDirs.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from dsf_compile.commands.cli import run
from tests.agent.conftest import free_port
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT
from tests.image_locks import lock_entries, normalize
from tests.podman_images import debian_base, podman

pytestmark = pytest.mark.integration

SAMPLES_IMAGE = f"localhost/dsf-samples-test:{os.getpid()}"
NAMESPACE = "dynamic-scoring"
#: The Secret every sample's bearer token comes from (key ``token``), and this test's value.
TOKEN_SECRET = "dsf-samples-token"
TOKEN = "samples-token-of-this-test-0123456789"
# Each sample's scorers: the config paths scorer-check must pass on.
CHECKED = {
    "sample-scorer": ["/config"],
    "simple-prediction-scorer": ["/config"],
    "static-scorer": ["/performance/config", "/powerconsumption/config"],
    "ai-workload-scorer": ["/power/config", "/performance/config"],
}


@pytest.fixture(scope="module")
def built() -> list[dict[str, Any]]:
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl not installed")
    done = subprocess.run(
        ["kubectl", "kustomize", str(REPO_ROOT / "samples" / "deploy")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def deployments(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == "Deployment"}


def fleet_hosts() -> set[str]:
    """``<service>`` of every ``configURL`` in ``<service>.dynamic-scoring.svc`` that the
    example fleet's scorers and the samples' own scorer file name."""
    files = [
        *(EXAMPLE_FLEET / "scorers").glob("*.yaml"),
        REPO_ROOT / "samples/ai-workload-scorers.yaml",
    ]
    hosts = set()
    for path in files:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            url = urlsplit(document["spec"]["configURL"])
            if url.hostname and url.hostname.endswith(f".{NAMESPACE}.svc"):
                assert url.port == 8000
                hosts.add(url.hostname.split(".")[0])
    return hosts


def test_kustomization_serves_what_the_fleet_points_at(built: list[dict[str, Any]]) -> None:
    services = {o["metadata"]["name"]: o for o in built if o["kind"] == "Service"}
    assert fleet_hosts() <= set(services)
    assert set(services) == set(deployments(built))
    assert {o["metadata"].get("namespace", NAMESPACE) for o in built} == {NAMESPACE}
    for name, service in services.items():
        (port,) = service["spec"]["ports"]
        assert (port["port"], port["targetPort"]) == (8000, "http")
        selected = deployments(built)[name]["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= selected.items()


def test_every_deployment_is_hardened_and_probed(built: list[dict[str, Any]]) -> None:
    for name, deployment in deployments(built).items():
        pod = deployment["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        context = {**pod["securityContext"], **container["securityContext"]}
        assert context["runAsNonRoot"] is True and context["runAsUser"] != 0, name
        assert context["readOnlyRootFilesystem"] is True
        assert context["allowPrivilegeEscalation"] is False and context["privileged"] is False
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert context["seccompProfile"] == {"type": "RuntimeDefault"}
        assert pod["automountServiceAccountToken"] is False  # the samples call no API


def test_every_deployment_wires_its_token_from_the_secret(built: list[dict[str, Any]]) -> None:
    for name, deployment in deployments(built).items():
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        (token,) = [v for v in container["env"] if v["name"] == "SCORER_TOKEN"]
        reference = token["valueFrom"]["secretKeyRef"]
        assert (reference["name"], reference["key"]) == (TOKEN_SECRET, "token"), name
        assert container["resources"]["limits"]["memory"]
        for probe in ("livenessProbe", "readinessProbe"):
            assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
        assert container["ports"] == [{"name": "http", "containerPort": 8000, "protocol": "TCP"}]
        assert container["args"][0].startswith("samples.")


@pytest.fixture(scope="module")
def image(podman_env: dict[str, str]) -> Iterator[str]:
    base = debian_base(podman_env)
    done = subprocess.run(
        [str(REPO_ROOT / "samples" / "build-image.sh"), "--base", base, "--tag", SAMPLES_IMAGE],
        env=podman_env, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, f"build-image.sh failed:\n{done.stdout}\n{done.stderr}"
    yield SAMPLES_IMAGE
    subprocess.run(
        ["podman", "rmi", "--force", SAMPLES_IMAGE],
        env=podman_env,
        capture_output=True,
        timeout=120,
    )


def run_args(
    deployment: dict[str, Any], folder: Path, image: str, name: str, port: int
) -> list[str]:
    """``podman run`` as a kubelet runs the Deployment's container."""
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    context = {**pod["securityContext"], **container["securityContext"]}
    args = ["run", "--detach", "--name", name, "--network", "host", "--read-only"]
    args += ["--read-only-tmpfs=false", "--cap-drop", "all", "--security-opt", "no-new-privileges"]
    args += ["--user", f"{context['runAsUser']}:{context['runAsGroup']}"]
    for variable in container.get("env", []):
        secret = variable.get("valueFrom", {}).get("secretKeyRef", {})
        assert not variable.get("valueFrom") or secret.get("name") == TOKEN_SECRET
        # the Secret's key as a kubelet passes it: this test's token
        value = TOKEN if secret else variable["value"]
        args += ["--env", f"{variable['name']}={value}"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        assert "emptyDir" in volumes[mount["name"]]
        source = folder / mount["name"]
        source.mkdir(parents=True)
        source.chmod(0o777)  # an emptyDir is world-writable
        args += ["--volume", f"{source}:{mount['mountPath']}:rw"]
    command = list(container["args"])
    command[command.index("--port") + 1] = str(port)
    return [*args, image, *command]


def wait_healthy(url: str, env: dict[str, str], name: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=5) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    logs = subprocess.run(["podman", "logs", name], env=env, capture_output=True, text=True)
    pytest.fail(f"{name} never answered /healthz:\n{logs.stdout}{logs.stderr}")


def test_image_runs_each_sample_as_its_deployment_says(
    image: str,
    podman_env: dict[str, str],
    built: list[dict[str, Any]],
    tmp_path: Path,
) -> None:
    (config,) = yaml.safe_load(podman(podman_env, "image", "inspect", image))
    assert config["Config"]["User"] == "65532:65532"
    for sample, deployment in sorted(deployments(built).items()):
        name = f"dsf-samples-test-{os.getpid()}-{sample}"
        port = free_port()
        podman(podman_env, *run_args(deployment, tmp_path / sample, image, name, port))
        try:
            url = f"http://127.0.0.1:{port}"
            wait_healthy(url, podman_env, name)
            for path in CHECKED.get(sample, []):
                out, err = io.StringIO(), io.StringIO()
                code = run(["scorer-check", url + path, "--token", TOKEN], out, err)
                assert code == 0, f"{sample}{path}:\n{out.getvalue()}{err.getvalue()}"
        finally:
            subprocess.run(["podman", "rm", "--force", name], env=podman_env, capture_output=True)


def test_the_image_holds_the_locked_distributions_only(
    image: str,
    podman_env: dict[str, str],
) -> None:
    listed = podman(
        podman_env, "run", "--rm", "--entrypoint", "/opt/dsf-samples/bin/python", image, "-c",
        "import importlib.metadata as m\n"
        "for d in m.distributions(): print(d.metadata['Name'], d.version)",
    )  # fmt: skip
    installed = dict(line.split() for line in listed.splitlines())
    locked = lock_entries(REPO_ROOT / "samples" / "requirements.lock")
    assert {normalize(name): v for name, v in installed.items()} == {
        name: v for name, (v, _) in locked.items()
    }
