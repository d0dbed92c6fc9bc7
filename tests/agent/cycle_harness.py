"""One agent cycle with injected fakes, shared by the cycle tests: an ``httpx.MockTransport``
for Prometheus and the Scoring API (:class:`Fakes`), and the cycle's context around it
(:class:`Harness`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from agent.cycle import CycleContext, CycleState, run_cycle
from agent.metrics import AgentMetrics, ScorerMetrics
from agent.publish import HubPublisher
from agent.secrets import DirSecretStore
from agent.settings import RuntimeSettings
from agent.transport import make_client
from dsf_contract.summary import Summary
from tests.agent.conftest import CLUSTER, make_summary
from tests.agent.exposed import sample_value

PROM = "http://prom.test:9090/api/v1/query_range"
SCORER = "http://scorer.test:8000/scoring"
NOW = 1718600000.0


def prom_answer(series: list[dict[str, Any]]) -> httpx.Response:
    return httpx.Response(
        200, json={"status": "success", "data": {"resultType": "matrix", "result": series}}
    )


def series(node: str, value: str = "1") -> dict[str, Any]:
    return {
        "metric": {"node": node, "namespace": "ns", "pod": f"{node}-pod"},
        "values": [[NOW, value]],
    }


def echo_scores(request: httpx.Request) -> httpx.Response:
    """Score = the first value of each series."""
    data = json.loads(request.content)["data"]
    return httpx.Response(
        200,
        json={
            "results": [{"metric": s["metric"], "score": float(s["values"][0][1])} for s in data]
        },
    )


class Fakes:
    def __init__(self) -> None:
        self.prometheus: Callable[[httpx.Request], httpx.Response] = lambda r: prom_answer(
            [series("n1", "42.9")]
        )
        self.scorer: Callable[[httpx.Request], httpx.Response] = echo_scores
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        if request.url.host == "prom.test":
            return self.prometheus(request)
        return self.scorer(request)


class Harness:
    def __init__(self, fakes: Fakes, tmp_path: Path, hub: HubPublisher | None) -> None:
        self.fakes = fakes
        self.metrics = AgentMetrics(CLUSTER)
        self.secrets_dir = tmp_path / "secrets"
        self.settings = RuntimeSettings(
            cluster_name=CLUSTER, secrets_dir=self.secrets_dir, max_scoring_response_bytes=4096
        )
        self.client = make_client(5.0, transport=httpx.MockTransport(fakes))
        self.ctx = CycleContext(
            settings=self.settings,
            client=self.client,
            secrets=DirSecretStore(self.secrets_dir),
            metrics=self.metrics,
            hub=hub,
            wall_clock=lambda: NOW,
        )
        self.states: dict[str, tuple[ScorerMetrics, CycleState]] = {}

    async def cycle(self, **summary: Any) -> bool:
        parsed = Summary.model_validate(
            make_summary(**{"sourceEndpoint": PROM, "scoringEndpoint": SCORER, **summary})
        )
        counters, state = self.states.setdefault(
            parsed.scoreName, (ScorerMetrics(self.metrics, parsed.scoreName), CycleState())
        )
        return await run_cycle(self.ctx, parsed, counters, state)

    def value(self, name: str, **labels: str) -> float | None:
        return sample_value(self.metrics, name, labels)

    def score(self, node: str, score_name: str = "sample_my_score") -> float | None:
        labels = {
            "ds_cluster": CLUSTER,
            "ds_node": node,
            "ds_namespace": "ns",
            "ds_pod": f"{node}-pod",
        }
        labels |= {
            "ds_device": "",
            "ds_app": "",
            "ds_container": "",
            "ds_meta": "",
            "ds_score_name": score_name,
        }
        return self.value("dynamic_score", **labels)

    def secret(self, name: str, key: str, value: str) -> None:
        (self.secrets_dir / name).mkdir(parents=True, exist_ok=True)
        (self.secrets_dir / name / key).write_text(value + "\n")
