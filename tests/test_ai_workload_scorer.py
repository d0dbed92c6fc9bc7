"""The AI-workload scorer, run as ``python -m samples.ai_workload_scorer`` and called over HTTP.

Expected scores are computed here from the formulas (by hand, or with an independent
least-squares fit), never taken from the sample's own output.
"""

from __future__ import annotations

import io
import json
import math
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from dsf_compile.commands.cli import run
from dsf_contract.scoring_api import ScorerConfig, ScoringResponse
from samples.process import SampleStartError, sample_process

pytestmark = pytest.mark.integration

T0 = 1_767_754_800
# Upstream's deployment settings (its manifest sets THRESHOLD and ALPHA).
ENV = {"THRESHOLD": "650", "ALPHA": "0.01"}
CANDIDATES = [
    (app, device) for app in ("app01", "app02") for device in ("all", "2g.24gb", "3g.48gb")
]


def _environ(tmp: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SCORER_TOKEN", *ENV)}
    return {**env, **ENV, "MODEL_DIR": str(tmp / "models"), **(extra or {})}


def power(
    node: str | None,
    pod: str | None,
    values: list[float],
    *,
    profile: str | None = None,
    gpu: str = "0",
    start: int = T0,
    step: int = 60,
) -> dict[str, Any]:
    metric = {"GPU_I_ID": gpu}
    for label, value in (("Hostname", node), ("exported_pod", pod), ("GPU_I_PROFILE", profile)):
        if value is not None:
            metric[label] = value
    points = [[start + i * step, str(v)] for i, v in enumerate(values)]
    return {"metric": metric, "values": points}


def expected(
    estimate: float, threshold: float = 650, alpha: float = 0.01, offset: float = 10
) -> float:
    return (1 - 1 / (1 + math.exp(-alpha * (estimate - threshold)))) * (100 - offset) + offset


@pytest.fixture
def scorer(tmp_path: Path) -> Iterator[str]:
    with sample_process("samples.ai_workload_scorer", env=_environ(tmp_path)) as address:
        yield f"http://{address}"


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as http:
        yield http


def score(
    client: httpx.Client, url: str, data: list[dict[str, Any]]
) -> dict[tuple[str, str], float]:
    answer = client.post(url + "/power/scoring", json={"status": "success", "data": data})
    assert answer.status_code == 200, answer.text
    results = ScoringResponse.model_validate(answer.json()).results
    return {(r.metric["app"], r.metric["device"]): r.score for r in results}


def test_configs_are_upstreams(client: httpx.Client, scorer: str) -> None:
    power_config = client.get(scorer + "/power/config").json()
    performance_config = client.get(scorer + "/performance/config").json()
    for document in (power_config, performance_config):
        ScorerConfig.model_validate(document)
        assert document["source"]["host"] == (
            "https://thanos-querier.openshift-monitoring.svc.cluster.local:9091"
        )
        assert (document["source"]["params"]["range"], document["source"]["params"]["step"]) == (
            3600,
            60,
        )
    assert power_config["name"] == "ai-workload-power-scorer"
    assert power_config["scoring"] == {
        "path": "/power/scoring",
        "params": {"name": "ai_workload_power_score", "interval": 30},
    }
    assert power_config["source"]["params"]["query"] == (
        "sum(DCGM_FI_DEV_POWER_USAGE) by (GPU_I_ID, GPU_I_PROFILE, exported_pod, Hostname)"
    )
    assert performance_config["name"] == "ai-workload-perf-scorer"
    assert performance_config["scoring"]["params"]["name"] == "ai_workload_perf_score"
    assert performance_config["source"]["params"]["query"] == (
        "sum(irate(vllm:generation_tokens_total[1m])) by (pod)"
    )


def test_performance_scores_are_upstreams_static_ones(client: httpx.Client, scorer: str) -> None:
    # As upstream's README does it: a POST with no body at all.
    answer = client.post(scorer + "/performance/scoring")
    assert answer.status_code == 200
    got = {
        (r["metric"]["app"], r["metric"]["device"]): r["score"] for r in answer.json()["results"]
    }
    assert got == {
        ("app01", "all"): 80,
        ("app02", "all"): 80,
        ("app01", "3g.48gb"): 60,
        ("app02", "3g.48gb"): 55,
        ("app01", "2g.24gb"): 10,
        ("app02", "2g.24gb"): 15,
    }


def test_short_series_scores_by_hand(client: httpx.Client, scorer: str) -> None:
    data = [
        power("node-a", "app01-7f9c", [300, 320, 340], profile="3g.47gb.2", gpu="1"),
        power("node-a", "app02-0", [200, 200, 200]),  # no profile label: the whole GPU
        power("node-a", "vllm-server-0", [10, 10, 10]),  # no app: in the total only
        power("node-a", None, [999, 999, 999]),  # no pod label: dropped
    ]
    got = score(client, scorer, data)
    base = (510 + 530 + 550) / 3  # fewer than MIN_LENGTH points: the mean total
    assert got[("app01", "3g.48gb")] == pytest.approx(expected(base + 340))
    assert got[("app02", "all")] == pytest.approx(expected(base + 200))
    for candidate in set(CANDIDATES) - {("app01", "3g.48gb"), ("app02", "all")}:
        assert got[candidate] == 10  # OFFSET: no series of that candidate


def test_two_nodes_with_gaps(client: httpx.Client, scorer: str) -> None:
    # node-a sampled at 0, 60, 180 s (120 s missing), node-b at 120..360 s.
    gap = power("node-a", "app01-a", [100, 110, 130], profile="2g.20gb")
    gap["values"][2][0] = T0 + 180
    data = [
        gap,
        power("node-b", "app01-b", [40, 50, 60, 70, 80], profile="2g.10gb", start=T0 + 120),
        # not a candidate (1g.12gb is not in the application file): in the total only
        power("node-b", "app02-b", [5, 5, 5, 5, 5], profile="1g.12gb", start=T0 + 120),
    ]
    got = score(client, scorer, data)
    base_a = (100 + 110 + 110 + 130) / 4  # 120 s forward-filled from 60 s
    base_b = (45 + 55 + 65 + 75 + 85) / 5
    # By time, over the nodes whose grid has it; node-a's unsampled 120 s counts 0.
    rows = [100, 110, (0 + 40) / 2, (130 + 50) / 2, 60, 70, 80]
    assert got[("app01", "2g.24gb")] == pytest.approx(expected(base_a + base_b + max(rows)))
    assert got[("app02", "2g.24gb")] == 10


def _series(length: int, seed: int, level: float) -> list[float]:
    rng = random.Random(seed)
    return [round(level + 30 * math.sin(i / 5) + rng.uniform(-3, 3), 3) for i in range(length)]


def _fit(totals: list[float], lags: int = 10) -> np.ndarray:
    """Ordinary least squares of each value on the 10 before it, with an intercept column."""
    rows = [[1.0, *totals[i : i + lags]] for i in range(len(totals) - lags)]
    return np.linalg.lstsq(np.array(rows), np.array(totals[lags:]), rcond=None)[0]


def _forecast(solution: np.ndarray, totals: list[float], horizon: int = 10) -> list[float]:
    history = list(totals)
    for _ in range(horizon):
        history.append(float(solution[0] + np.dot(solution[1:], history[-10:])))
    return history[-horizon:]


def test_forecast_and_stored_models(client: httpx.Client, scorer: str, tmp_path: Path) -> None:
    values = _series(61, seed=1, level=300)
    data = [power("gpu-node-1", "app02-x", values, profile="3g.47gb")]
    first = _fit(values)
    want = expected(float(np.mean(_forecast(first, values))) + max(values))
    assert score(client, scorer, data)[("app02", "3g.48gb")] == pytest.approx(want, abs=1e-6)
    models = sorted((tmp_path / "models").iterdir())
    assert len(models) == 1 and "gpu-node-1" not in models[0].name
    stored = models[0].read_bytes()
    # New points, a small error: the stored model is reused, not refitted.
    later = [*values[1:], values[-1] + 2]
    held_out = np.array(_forecast(first, later[:-10])) - np.array(later[-10:])
    assert math.sqrt(float(np.mean(held_out**2))) <= 20  # the precondition of reuse
    assert not np.allclose(_fit(later), first)  # so that reuse and refit differ
    want = expected(float(np.mean(_forecast(first, later))) + max(later))
    data = [power("gpu-node-1", "app02-x", later, profile="3g.47gb")]
    assert score(client, scorer, data)[("app02", "3g.48gb")] == pytest.approx(want, abs=1e-6)
    assert models[0].read_bytes() == stored
    # A changed regime: the stored model's error on the last 10 points passes 20 W.
    shifted = values[:51] + [v + 200 for v in values[51:]]
    data = [power("gpu-node-1", "app02-x", shifted, profile="3g.47gb")]
    want = expected(float(np.mean(_forecast(_fit(shifted), shifted))) + max(shifted))
    assert score(client, scorer, data)[("app02", "3g.48gb")] == pytest.approx(want, abs=1e-6)
    assert models[0].read_bytes() != stored
    assert client.post(scorer + "/power/reset").json()["status"] == "ok"
    assert list((tmp_path / "models").iterdir()) == []


def test_recurrence_is_continued(client: httpx.Client, scorer: str) -> None:
    # y = 500 - 200 * 0.9^t follows an exact linear recurrence: any least-squares AR fit
    # reproduces it, so the forecast is the sequence's own continuation.
    values = [500 - 200 * 0.9**t for t in range(30)]
    data = [power("n", "app01-0", values)]
    base = float(np.mean([500 - 200 * 0.9**t for t in range(30, 40)]))
    got = score(client, scorer, data)[("app01", "all")]
    assert got == pytest.approx(expected(base + max(values)), abs=1e-6)


def test_no_data_scores_offset(client: httpx.Client, scorer: str) -> None:
    assert score(client, scorer, []) == {candidate: 10 for candidate in CANDIDATES}


def test_settings_from_environment_and_options(client: httpx.Client, tmp_path: Path) -> None:
    env = _environ(tmp_path, {"OFFSET": "20", "THRESHOLD": "100", "ALPHA": "1"})
    data = [power("n", "app01-0", [90, 110])]
    with sample_process("samples.ai_workload_scorer", ["--alpha", "0.05"], env=env) as address:
        got = score(client, f"http://{address}", data)
    assert got[("app01", "all")] == pytest.approx(expected(100 + 110, 100, 0.05, 20))
    assert got[("app02", "all")] == 20


def test_application_file_and_huge_exponents(client: httpx.Client, tmp_path: Path) -> None:
    applications = {
        "applications": [
            {"name": "llm", "device_candidates": ["1g.12gb"], "pod_alias": ["vllm-?-*"]}
        ],
        "static_score": {
            "performance": [{"metric": {"app": "llm", "device": "1g.12gb"}, "score": 42}]
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(applications), encoding="utf-8")
    data = [
        power("n", "vllm-a-1", [1.0], profile="1g.10gb"),
        power("n", "vllm-ab-1", [1.0], profile="1g.5gb"),
    ]
    args = ["--applications", str(path), "--alpha", "2"]
    with sample_process("samples.ai_workload_scorer", args, env=_environ(tmp_path)) as address:
        got = score(client, f"http://{address}", data)
        performance = client.post(f"http://{address}/performance/scoring", json={"data": []}).json()
    # "vllm-ab-1" is no "vllm-?-*"; e^(-2 * (2 + 1 - 650)) overflows a naive formula: 100.
    assert got == {("llm", "1g.12gb"): pytest.approx(100.0)}
    assert performance == {
        "results": [{"metric": {"app": "llm", "device": "1g.12gb"}, "score": 42.0}]
    }


def test_bounds_and_bad_values(client: httpx.Client, tmp_path: Path) -> None:
    with sample_process(
        "samples.ai_workload_scorer",
        ["--max-series", "2", "--max-points", "100"],
        env=_environ(tmp_path),
    ) as address:
        url = f"http://{address}/power/scoring"
        many = [power("n", f"app01-{i}", [1]) for i in range(3)]
        wide = [power("n", "app01-0", [1, 2], step=60 * 200)]
        nan_time = {"data": [{"metric": {"exported_pod": "p"}, "values": [[float("nan"), "1"]]}]}
        # 60 + 60 points: within the bound per node, past it over the request
        nodes = [power(node, "app01-0", [1] * 60) for node in ("a", "b")]
        for body in ({"data": many}, {"data": wide}, {"data": nodes}):
            answer = client.post(url, json=body)
            assert answer.status_code == 400, answer.text
        answer = client.post(
            url, content=json.dumps(nan_time), headers={"Content-Type": "application/json"}
        )
        assert answer.status_code == 400
        # A node name that is a path stays a hashed file name inside the model directory.
        fine = client.post(
            url, json={"data": [power("../../etc/x", "app01-0", _series(30, 2, 100))]}
        )
        assert fine.status_code == 200
    assert [p.suffix for p in (tmp_path / "models").iterdir()] == [".json"]


@pytest.mark.parametrize("path", ["/power/config", "/performance/config"])
def test_scorer_check_passes(scorer: str, path: str) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = run(["scorer-check", scorer + path], out, err)
    assert (code, err.getvalue()) == (0, ""), out.getvalue()
    assert "conforms: 8 passed, 0 failed, 1 skipped" in out.getvalue()


def test_bad_settings_exit_with_a_message(tmp_path: Path) -> None:
    output: list[str] = []
    env = _environ(tmp_path, {"MIN_LENGTH": "many"})
    with (
        pytest.raises(SampleStartError, match="printed no address"),
        sample_process("samples.ai_workload_scorer", env=env, output=output),
    ):
        pass
    assert "$MIN_LENGTH: not a valid int" in output[1]
    assert "Traceback" not in output[1]


UPSTREAM_ENV = "DSF_UPSTREAM_AI_WORKLOAD_SCORER"


def _comparison_payloads() -> dict[str, list[dict[str, Any]]]:
    """Two nodes with gaps and odd profiles, the same again (stored models), a changed
    regime, short series and no data: in this order, the models carry over."""
    gappy = [T0 + 60 * i for i in range(50) if i not in (7, 8, 30)]
    later = [T0 + 120 + 60 * i for i in range(40)]
    two = [
        power("node-a", "app01-abc", _series(47, 3, 300), profile="3g.47gb+me", gpu="1"),
        power("node-a", "app02-x", _series(47, 4, 150), profile="2g.23gb", gpu="2"),
        power("node-b", "app01-zz", _series(40, 5, 250), profile="1g.11gb"),
        power("node-b", "app02-y", _series(40, 6, 90), gpu="3"),
        power("node-b", "other-pod", _series(40, 7, 30), profile="MIG 7g", gpu="4"),
    ]
    for series, times in zip(two, [gappy, gappy, later, later, later], strict=True):
        series["values"] = [[t, v] for t, (_, v) in zip(times, series["values"], strict=False)]
    regime = [
        {
            **s,
            "values": [
                [t, str(float(v) + (300 if i >= len(s["values"]) - 11 else 0))]
                for i, (t, v) in enumerate(s["values"])
            ],
        }
        for s in two
    ]
    short = [
        power("node-a", "app01-1", [100, 120, 130], profile="3g.47gb"),
        power("node-c", "app02-1", [400, 410], profile="2g.24gb"),
    ]
    return {"two nodes": two, "again": two, "regime": regime, "short": short, "none": []}


@pytest.mark.skipif(
    not os.environ.get(UPSTREAM_ENV),
    reason=f"${UPSTREAM_ENV}: the URL of upstream's own service (it needs darts), run with "
    "THRESHOLD=650 ALPHA=0.01 and an empty MODEL_DIR",
)
def test_same_answers_as_upstreams_service(client: httpx.Client, scorer: str) -> None:
    upstream = os.environ[UPSTREAM_ENV].rstrip("/")
    for url in (upstream, scorer):
        assert client.post(url + "/power/reset").status_code == 200
    for path in ("/power/config", "/performance/config"):
        assert client.get(scorer + path).json() == client.get(upstream + path).json()
    performance = [
        client.post(url + "/performance/scoring", json={"data": []}) for url in (upstream, scorer)
    ]
    assert performance[0].json() == performance[1].json()
    for name, data in _comparison_payloads().items():
        theirs, ours = score(client, upstream, data), score(client, scorer, data)
        assert theirs.keys() == ours.keys()
        assert all(abs(theirs[k] - ours[k]) < 0.01 for k in theirs), (name, theirs, ours)


def test_a_stored_model_stays_small_whatever_the_node_name(
    client: httpx.Client, tmp_path: Path
) -> None:
    # upstream's file format held the node name: a 40 MiB Hostname wrote a 42 MB model
    hostname = "n" * (40 * 1024 * 1024)
    with sample_process(
        "samples.ai_workload_scorer",
        ["--max-body-bytes", str(64 * 1024 * 1024)],
        env=_environ(tmp_path),
    ) as address:
        data = [
            power(hostname, "app01-x", _series(30, 2, 100)),
            power("\ud800", "app02-y", [1] * 30),
        ]
        body = json.dumps({"data": data}).encode()  # the lone surrogate escaped, as JSON may
        answer = client.post(
            f"http://{address}/power/scoring",
            content=body,
            headers={"Content-Type": "application/json"},
        )
        assert answer.status_code == 200, answer.text
    models = list((tmp_path / "models").iterdir())
    assert len(models) == 2
    assert all(model.stat().st_size < 1024 for model in models)
    assert all("nnnn" not in model.read_text() for model in models)


def test_the_model_store_keeps_the_keys_digest_not_the_key(tmp_path: Path) -> None:
    from samples.autoregression import LinearAR, ModelStore

    store = ModelStore(tmp_path, max_models=2)
    model = LinearAR(1.5, tuple(float(i) for i in range(10)))
    long_key = "x" * (40 * 1024 * 1024)
    assert store.save(long_key, model)
    (path,) = tmp_path.iterdir()
    assert path.stat().st_size < 1024
    assert store.load(long_key) == model
    assert store.load("x") is None  # another key, another digest
