"""What a sample accepts fits the memory its Deployment gives it (``samples/deploy``).

Each sample runs as its Deployment's container does (its args: the module and
``--max-body-bytes``), here as a local process whose peak resident memory (``VmHWM``) is
read after bodies just under the cap, in the shapes that cost the most memory per byte:
empty objects (``{"data": [{}, {}, ...]}``), one long series of tiny points, and the
agent's own shape (series of 1,000 points with DCGM's labels). Each peak stays under the
Deployment's memory limit; a body one byte over the cap is refused (413) unread.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from dsf_compile.inputs.quantity import quantity_value
from samples.process import sample_process
from tests.fleet_repo import REPO_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

DEPLOY = REPO_ROOT / "samples" / "deploy"
#: The path each sample scores on (a POST that parses the body).
SCORING = {
    "samples.sample_scorer": "/scoring",
    "samples.static_scorer": "/performance/scoring",
    "samples.prediction_scorer": "/scoring",
    "samples.llm_forecast_scorer": "/scoring",
    "samples.ai_workload_scorer": "/power/scoring",
}
T0 = 1_767_754_800


def containers() -> list[tuple[str, dict[str, Any]]]:
    """(Deployment name, its container) of every sample."""
    found = []
    for path in sorted(DEPLOY.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if document and document["kind"] == "Deployment":
                (container,) = document["spec"]["template"]["spec"]["containers"]
                found.append((document["metadata"]["name"], container))
    return found


def empty_objects(size: int) -> bytes:
    unit = b"{},"
    return b'{"data":[' + unit * ((size - 16) // len(unit)) + b"{}]}"


def tiny_points(size: int) -> bytes:
    head = b'{"data":[{"metric":{"Hostname":"h","exported_pod":"app01-x"},"values":['
    points: list[bytes] = []
    length = len(head) + 6
    while length < size - 32:
        point = b'[%d,"1"]' % (T0 + len(points))
        points.append(point)
        length += len(point) + 1
    return head + b",".join(points) + b"]}]}"


def agent_shaped(size: int) -> bytes:
    def series(index: int) -> dict[str, Any]:
        metric = {
            "Hostname": f"gpu-node-{index % 50}",
            "exported_pod": f"app0{1 + index % 2}-{index}",
            "GPU_I_PROFILE": "3g.47gb",
            "GPU_I_ID": "0",
        }
        values = [[T0 + 60 * i, f"{300.125 + i % 7:.3f}"] for i in range(1000)]
        return {"metric": metric, "values": values}

    unit = len(json.dumps(series(0))) + 2
    data = [series(index) for index in range((size - 64) // unit)]
    return json.dumps({"status": "success", "data": data}).encode()


SHAPES: dict[str, Callable[[int], bytes]] = {
    "empty objects": empty_objects,
    "tiny points": tiny_points,
    "the agent's": agent_shaped,
}


def peak_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    (line,) = [line for line in status.splitlines() if line.startswith("VmHWM:")]
    return int(line.split()[1]) * 1024


@pytest.mark.parametrize(("name", "container"), containers(), ids=[n for n, _ in containers()])
def test_what_a_sample_accepts_fits_its_deployments_memory(
    name: str, container: dict[str, Any], tmp_path: Path
) -> None:
    args = list(container["args"])
    module, cap = args[0], int(args[args.index("--max-body-bytes") + 1])
    limit = quantity_value(container["resources"]["limits"]["memory"])
    assert limit is not None
    options = [a for a in args[1:] if a not in ("--host", "0.0.0.0", "--port", "8000")]
    env = {k: v for k, v in os.environ.items() if k != "SCORER_TOKEN"}
    env.update({v["name"]: v["value"] for v in container.get("env", []) if "value" in v})
    env["MODEL_DIR"] = str(tmp_path / "models")
    env["INFERENCE_ENDPOINT"] = "http://127.0.0.1:9"  # the LLM's: refused at once
    pids: list[int] = []
    with (
        sample_process(module, options, env=env, pids=pids) as address,
        httpx.Client(timeout=300) as client,
    ):
        url = f"http://{address}{SCORING[module]}"
        for shape, make in SHAPES.items():
            body = make(cap)
            assert cap - 65536 < len(body) <= cap, shape
            answer = client.post(url, content=body, headers={"Content-Type": "application/json"})
            assert answer.status_code < 500 or module == "samples.llm_forecast_scorer", shape
            assert peak_bytes(pids[0]) < limit, (shape, peak_bytes(pids[0]), limit)
        over = client.post(url, content=b" " * (cap + 1))
        assert over.status_code == 413, over.text
