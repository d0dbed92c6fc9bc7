"""The agent's probes and SIGTERM under load: the figures the tests no longer time.

    PYTHONPATH=. python bench/health_bench.py [--scorers 2000] [--probes 20]

Starts ``dsf-agent`` (``python -m agent``) with ``--scorers`` scorers whose Scoring API
accepts every connection and never answers (as many requests as one host allows hang, the
rest wait for a slot) beside one healthy scorer, then times ``/healthz`` ``--probes``
times, and SIGTERM to exit. In-run baselines: the same agent with no scorer (``/healthz``),
and the rendered Deployment's ``terminationGracePeriodSeconds`` (SIGTERM: the kubelet kills
the pod after it). Targets: the issue's 1 s for a probe (the liveness probe allows 5 s), a
third of the grace period for SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.command_bench import RowCells  # noqa: E402
from tests.agent.agent_fakes import HangingServer  # noqa: E402

#: SIGTERM's target: a third of the grace period the rendered Deployment gives
GRACE_SHARE = 3


def _summary(index: int, scoring: str) -> dict[str, Any]:
    return {
        "name": f"load-{index}",
        "scoreName": f"load_{index}",
        "sourceType": "None",
        "sourceEndpoint": "",
        "sourceEndpointAuthName": "",
        "sourceEndpointAuthKey": "",
        "sourceQuery": "",
        "sourceRange": 0,
        "sourceStep": 0,
        "scoringEndpoint": scoring,
        "scoringInterval": 1,
        "scoringEndpointAuthName": "",
        "scoringEndpointAuthKey": "",
        "location": "Internal",
        "scoreDestination": "None",
        "scoreDimensionFormat": "${scoreName}",
    }


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get(port: int, path: str) -> int:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=60) as answer:
            return int(answer.status)
    except OSError:
        return 0


class _Agent:
    """``python -m agent`` on a config file of ``summaries``, stopped by :meth:`stop`."""

    def __init__(self, scratch: Path, summaries: list[dict[str, Any]]) -> None:
        (scratch / "secrets").mkdir(exist_ok=True)
        config = scratch / "summaries.json"
        config.write_text(json.dumps(summaries), encoding="utf-8")
        self.port = _free_port()
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agent", "--cluster-name", "bench", "--config-file",
             str(config), "--secrets-dir", str(scratch / "secrets"),
             "--metrics-bind", f"127.0.0.1:{self.port}"],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while _get(self.port, "/readyz") != 200:
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.process.kill()
                raise SystemExit("the agent never became ready")
            time.sleep(0.2)

    def probes(self, count: int) -> list[float]:
        """Seconds of ``count`` ``/healthz`` answers, 0.2 s apart."""
        seconds = []
        for _ in range(count):
            started = time.perf_counter()
            if _get(self.port, "/healthz") != 200:
                raise SystemExit("/healthz did not answer 200")
            seconds.append(time.perf_counter() - started)
            time.sleep(0.2)
        return seconds

    def stop(self, grace: float) -> float:
        """Seconds from SIGTERM to exit (killed after ``grace``: then the figure is ``grace``)."""
        started = time.perf_counter()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return time.perf_counter() - started


def grace_seconds() -> float:
    """The rendered agent Deployment's ``terminationGracePeriodSeconds`` (30 when unset)."""
    text = (REPO / "rendered" / "hub" / "addon" / "addontemplate.yaml").read_text()
    for line in text.splitlines():
        if "terminationGracePeriodSeconds:" in line:
            return float(line.split(":", 1)[1])
    return 30.0


def measure(scorers: int, probes: int) -> dict[str, float]:
    """The slowest ``/healthz`` loaded and idle, SIGTERM's seconds, and the grace period."""
    grace = grace_seconds()
    hanging = HangingServer().start()
    try:
        with tempfile.TemporaryDirectory(prefix="dsf-bench-health-") as tmp:
            idle = _Agent(Path(tmp), [])
            idle_probe = max(idle.probes(probes))
            idle.stop(grace)
            loaded = _Agent(
                Path(tmp), [_summary(i, f"{hanging.url}/scoring") for i in range(scorers)]
            )
            time.sleep(2.0)  # every scorer has started a cycle: the slots are held
            probe = max(loaded.probes(probes))
            stop = loaded.stop(grace)
            code = loaded.process.returncode
    finally:
        hanging.stop()
    return {"probe": probe, "idle_probe": idle_probe, "stop": stop, "grace": grace, "code": code}


def rows(scorers: int, probes: int) -> list[RowCells]:
    """``python -m bench`` rows of the agent group."""
    found = measure(scorers, probes)
    load = f"{scorers:,} scorers on a Scoring API that never answers"
    stop_met = found["code"] == 0 and found["stop"] <= found["grace"] / GRACE_SHARE
    return [
        ("agent", "slowest /healthz under load", load, f"{found['probe']:.3f} s",
         f"idle agent {found['idle_probe']:.3f} s",
         found["probe"] / max(found["idle_probe"], 1e-6), "≤ 1 s", found["probe"] <= 1.0),
        ("agent", "SIGTERM to exit under load", load, f"{found['stop']:.3f} s",
         f"grace period {found['grace']:g} s", found["stop"] / found["grace"],
         f"≤ 1/{GRACE_SHARE} of the grace period, exit 0", stop_met),
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scorers", type=int, default=2000)
    parser.add_argument("--probes", type=int, default=20)
    args = parser.parse_args()
    for row in rows(args.scorers, args.probes):
        print(" | ".join(str(cell) for cell in row))


if __name__ == "__main__":
    main()
