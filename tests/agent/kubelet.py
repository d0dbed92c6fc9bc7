"""The rendered agent Deployment, run with podman as a kubelet would run it.

First what OCM's addon framework does to the AddOnTemplate's manifests for one cluster
(open-cluster-management-io/ocm ``pkg/addon/templateagent/``): the template variables
are substituted (``{{CLUSTER_NAME}}``, and ``{{HUB_KUBECONFIG}}`` =
``/managed/hub-kubeconfig/kubeconfig``), the same values are appended to every
container's env (defaults, then built-ins, each sorted: ``HUB_KUBECONFIG``,
``CLUSTER_NAME``), and a ``KubeClient`` registration adds the volume ``hub-kubeconfig``
(the Secret ``<addon>-hub-kubeconfig``) mounted at ``/managed/hub-kubeconfig``.

Then what a kubelet does with the pod: the image's entrypoint with the container's
``args``; its ``env`` (``fieldRef`` resolved); the service account's token, CA and
namespace mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount``, with
``KUBERNETES_SERVICE_HOST``/``PORT``; Secret and ConfigMap volumes as read-only files,
an emptyDir as a writable directory; the securityContext (read-only root and nothing
else writable, all capabilities dropped, no privilege escalation, the runtime's default
seccomp profile, a non-root numeric user) and ``resources.limits`` (memory enforced by
the cgroup, no swap; CPU as a quota).

What differs from a cluster, and why: the pod shares the host's network (``--network
host``) so it reaches the test's servers on 127.0.0.1, so the metrics port of
``--metrics-bind`` is moved to a free one (in a pod network namespace 8080 is always free).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dsf_compile.inputs.quantity import quantity_value

HUB_KUBECONFIG_DIR = "/managed/hub-kubeconfig"
SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def processed_manifests(template: dict[str, Any], cluster: str) -> list[dict[str, Any]]:
    """The AddOnTemplate's manifests for ``cluster`` after the addon framework's
    templating and decorators."""
    values = {"HUB_KUBECONFIG": f"{HUB_KUBECONFIG_DIR}/kubeconfig", "CLUSTER_NAME": cluster}
    text = json.dumps(template["spec"]["agentSpec"]["workload"]["manifests"])
    for name, value in values.items():
        text = text.replace("{{" + name + "}}", value)
    leftover = re.findall(r"\{\{[^}]*\}\}", text)
    assert not leftover, f"variables OCM would replace with empty strings: {leftover}"
    manifests: list[dict[str, Any]] = json.loads(text)
    kube_client = any(
        r.get("type") == "KubeClient" for r in template["spec"].get("registration", [])
    )
    addon = template["spec"]["addonName"]
    for manifest in manifests:
        if manifest["kind"] not in ("Deployment", "DaemonSet"):
            continue
        pod = manifest["spec"]["template"]["spec"]
        for container in pod["containers"]:
            container.setdefault("env", []).extend(
                {"name": name, "value": value} for name, value in values.items()
            )
            if kube_client:
                container.setdefault("volumeMounts", []).append(
                    {"name": "hub-kubeconfig", "mountPath": HUB_KUBECONFIG_DIR}
                )
        if kube_client:
            pod.setdefault("volumes", []).append(
                {"name": "hub-kubeconfig", "secret": {"secretName": f"{addon}-hub-kubeconfig"}}
            )
    return manifests


@dataclass
class PodFiles:
    """What the cluster holds for the pod's volumes: Secrets and ConfigMaps by name (key ->
    content), the service account's token and CA, and the API server's address."""

    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)
    token: str = ""
    ca_pem: str = ""
    api_host: str = "127.0.0.1"
    api_port: int = 443


def _write_volume(folder: Path, files: dict[str, str]) -> Path:
    """A read-only volume's folder: world-readable files, as a kubelet writes them (mode
    0644 by default, owned by root)."""
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    for key, content in files.items():
        (folder / key).write_text(content)
        (folder / key).chmod(0o644)
    return folder


def _env_value(variable: dict[str, Any], namespace: str) -> str:
    if "value" in variable:
        return str(variable["value"])
    field_path = variable["valueFrom"]["fieldRef"]["fieldPath"]
    assert field_path == "metadata.namespace", f"fieldRef {field_path} not emulated"
    return namespace


def podman_run_args(
    deployment: dict[str, Any],
    files: PodFiles,
    folder: Path,
    *,
    image: str,
    name: str,
    metrics_port: int,
) -> list[str]:
    """``podman run`` arguments for the Deployment's only container, volumes written
    under ``folder``."""
    namespace = deployment["metadata"]["namespace"]
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    context = {**pod.get("securityContext", {}), **container.get("securityContext", {})}
    args = ["run", "--detach", "--name", name, "--network", "host"]
    # securityContext
    assert context.get("readOnlyRootFilesystem") is True
    args += ["--read-only", "--read-only-tmpfs=false"]  # no /tmp, /run... of podman's own
    assert context.get("capabilities", {}).get("drop") == ["ALL"]
    args += ["--cap-drop", "all"]
    assert context.get("allowPrivilegeEscalation") is False
    args += ["--security-opt", "no-new-privileges"]
    assert context.get("privileged", False) is False
    # RuntimeDefault: the runtime's default seccomp profile, which podman applies unasked
    assert context.get("seccompProfile") == {"type": "RuntimeDefault"}
    if "runAsUser" in context:
        group = context.get("runAsGroup", context["runAsUser"])
        args += ["--user", f"{context['runAsUser']}:{group}"]
    # resources.limits: memory by the cgroup with no swap (kubelets run without), CPU quota
    limits = container["resources"]["limits"]
    memory = int(quantity_value(limits["memory"]))
    args += ["--memory", str(memory), "--memory-swap", str(memory)]
    args += ["--cpus", str(float(Fraction(quantity_value(limits["cpu"]))))]
    # env, then what a kubelet adds for the API server
    env = {v["name"]: _env_value(v, namespace) for v in container.get("env", [])}
    env |= {
        "KUBERNETES_SERVICE_HOST": files.api_host,
        "KUBERNETES_SERVICE_PORT": str(files.api_port),
    }
    for key, value in env.items():
        args += ["--env", f"{key}={value}"]
    # the service account, then the pod's volumes
    account = _write_volume(
        folder / "serviceaccount",
        {"token": files.token, "ca.crt": files.ca_pem, "namespace": namespace},
    )
    args += ["--volume", f"{account}:{SERVICE_ACCOUNT_DIR}:ro"]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    for mount in container.get("volumeMounts", []):
        volume = volumes[mount["name"]]
        if "emptyDir" in volume:
            source = folder / "volumes" / mount["name"]
            source.mkdir(parents=True)
            source.chmod(0o777)  # an emptyDir is world-writable
            args += ["--volume", f"{source}:{mount['mountPath']}:rw"]
            continue
        if "secret" in volume:
            data = files.secrets[volume["secret"]["secretName"]]
        else:
            data = files.config_maps[volume["configMap"]["name"]]
        source = _write_volume(folder / "volumes" / mount["name"], data)
        args += ["--volume", f"{source}:{mount['mountPath']}:ro"]
    return [*args, image, *_moved_metrics_port(container["args"], metrics_port)]


def _moved_metrics_port(args: list[str], port: int) -> list[str]:
    moved = []
    for arg in args:
        if arg.startswith("--metrics-bind="):
            host = arg.removeprefix("--metrics-bind=").rpartition(":")[0]
            arg = f"--metrics-bind={host}:{port}"
        moved.append(arg)
    return moved


def probe_path(container: dict[str, Any], probe: str) -> str:
    """The path of a probe, which must use the container's metrics port."""
    get = container[probe]["httpGet"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert get["port"] in ports or get["port"] in ports.values()
    return str(get["path"])
