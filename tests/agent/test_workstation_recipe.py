"""agent/README.md's "rendered ConfigMap on a workstation" recipe, run as written.

Its shell block is taken from the README and run by bash from the repository root; only
the folder (``/tmp/dsf-try``) and the loopback ports change (the machine is shared, and
Prometheus is the tests' own). Step 2's sample scorer runs as the recipe assumes.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.agent.conftest import REPO_ROOT, agent_env, free_port
from tests.fleet_repo import EXAMPLE_FLEET

README = REPO_ROOT / "agent" / "README.md"
SECTION = "**A rendered ConfigMap on a workstation.**"
WAIT = 60.0


def recipe() -> str:
    text = README.read_text(encoding="utf-8")
    after = text[text.index(SECTION) :]
    found = re.search(r"```sh\n(.*?)```", after, re.DOTALL)
    assert found is not None, "no shell block after the recipe's heading"
    return "\n".join(line.removeprefix("   ") for line in found.group(1).splitlines())


def test_the_recipe_names_what_render_wrote() -> None:
    """The services, ports and file the recipe maps are those of worker01's ManifestWork."""
    script = recipe()
    work = (EXAMPLE_FLEET / "rendered/clusters/worker01/manifestwork.yaml").read_text()
    assert "rendered/clusters/worker01/manifestwork.yaml" in script
    for host_port in re.findall(r"--resolve ([a-z0-9.-]+:\d+):", script):
        assert f"http://{host_port}/" in work, host_port


@pytest.mark.integration
@pytest.mark.timeout(180)
def test_the_workstation_recipe_scores(prometheus: str, tmp_path: Path) -> None:
    ports = {"8000": free_port(), "8001": free_port(), "8081": free_port()}
    ports["9090"] = int(urlsplit(prometheus).port or 0)
    script = recipe().replace("/tmp/dsf-try", str(tmp_path))
    for old, new in ports.items():
        script = script.replace(f"127.0.0.1:{old}", f"127.0.0.1:{new}")
        script = script.replace(f"--port {old}", f"--port {new}")
    script = script.replace("sleep 5; curl", "curl")  # the test polls instead
    body, _, check = script.rstrip().rpartition("\n")
    assert check.startswith("curl -s 127.0.0.1:")
    env = agent_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    log = (tmp_path / "recipe.log").open("wb")
    # step 2, which the recipe relies on, then the recipe; both in a session of their own
    process = subprocess.Popen(
        [
            "bash",
            "-euc",
            f"python -m samples.sample_scorer --port {ports['8000']} &\n{body}\nwait",
        ],
        cwd=EXAMPLE_FLEET,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        scores = poll(check, env, process, tmp_path / "recipe.log")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
        log.close()
    names = set(re.findall(r'ds_score_name="([^"]+)"', scores))
    assert {"example_performance_score", "example_powerconsumption_score"} <= names
    assert 'ds_cluster="worker01"' in scores
    assert (tmp_path / "configmap.yaml").read_text().startswith("apiVersion: v1\n")


def poll(check: str, env: dict[str, str], process: subprocess.Popen[bytes], log: Path) -> str:
    """Run the recipe's last line until it prints the static scorer's scores."""
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the recipe ended ({process.returncode}):\n{log.read_text()}")
        done = subprocess.run(
            ["bash", "-c", check], env=env, capture_output=True, text=True, timeout=30, check=False
        )
        if "example_powerconsumption_score" in done.stdout:
            return done.stdout
        time.sleep(0.5)
    pytest.fail(f"no dynamic_score after {WAIT} s:\n{log.read_text()}")
