"""Upstream's sample Scoring API as its quickstart documents it, for the end-to-end test.

A FastAPI app run unmodified by uvicorn (``python -m uvicorn tests.upstream_sample_scorer:app``),
written from the documented behaviour of upstream's ``samples/sample-scorer``:

- ``GET /healthz`` answers ``{"status": "ok"}``;
- ``GET /config`` answers the quickstart's configuration document (Prometheus source, the
  CPU-usage query, range 3600 s, step 60 s; score ``sample_my_score`` every 30 s);
- ``POST /scoring`` takes ``{"data": [{"metric": {...}, "values": [[t, "v"], ...]}]}`` and
  answers one result per series: its labels plus ``meta: my_something_meta_by_sample_scorer``,
  and the average of its values as the score (0 for a series without values).

It is here so that the loop is proven with a scorer nobody on this project wrote for dsf.
"""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import BaseModel

META = "my_something_meta_by_sample_scorer"
CPU_QUERY = 'sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", pod!=""}[1m]))'


class Series(BaseModel):
    """One Prometheus series as the agent forwards it; values parse as numbers."""

    metric: dict[str, str]
    values: list[tuple[float, float]]


class ScoringRequest(BaseModel):
    data: list[Series]


class Result(BaseModel):
    metric: dict[str, str]
    score: float


class ScoringResponse(BaseModel):
    results: list[Result]


app = FastAPI(title="sample-scorer")


@app.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness."""
    return {"status": "ok"}


@app.get("/config")
async def config() -> dict[str, object]:
    """The configuration document ``dsf-compile sync`` records."""
    return {
        "name": "sample-scorer",
        "description": "A sample score for time series data",
        "source": {
            "type": "Prometheus",
            "host": "http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090",
            "path": "/api/v1/query_range",
            "params": {"query": CPU_QUERY, "range": 3600, "step": 60},
        },
        "scoring": {"path": "/scoring", "params": {"name": "sample_my_score", "interval": 30}},
    }


@app.post("/scoring")
async def scoring(request: ScoringRequest) -> ScoringResponse:
    """The average of each series' values, with the series' labels plus ``meta``."""
    results = []
    for series in request.data:
        values = [value for _, value in series.values]
        average = sum(values) / len(values) if values else 0.0
        results.append(Result(metric={**series.metric, "meta": META}, score=average))
    return ScoringResponse(results=results)
