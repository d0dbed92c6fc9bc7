"""The reference Scoring APIs in ``samples/``, started for real on 127.0.0.1 and called over HTTP."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsf_contract.scoring_api import ScorerConfig, ScoringResponse
from samples import fleet, prediction_scorer, sample_scorer, static_scorer
from samples.process import sample_process
from samples.service import RunningServer, ScoringApp
from tests.fleet_repo import EXAMPLE_FLEET

pytestmark = pytest.mark.integration

TOKEN = "test-token-\u00e9-not-secret"


def start(module: str, args: list[str] | None = None, **kwargs: Any) -> Any:
    """A sample on 127.0.0.1 that ignores any ``$SCORER_TOKEN`` of the test runner."""
    kwargs.setdefault("env", _environ())
    return sample_process(module, args or [], **kwargs)


def series(metric: dict[str, str], values: list[float | str], step: int = 60) -> dict[str, Any]:
    return {
        "metric": metric,
        "values": [[1_718_600_000 + i * step, str(v)] for i, v in enumerate(values)],
    }


@pytest.fixture(scope="module")
def sample_url() -> Iterator[str]:
    with start("samples.sample_scorer") as address:
        yield f"http://{address}"


@pytest.fixture(scope="module")
def static_url() -> Iterator[str]:
    with start("samples.static_scorer") as address:
        yield f"http://{address}"


@pytest.fixture(scope="module")
def prediction_url() -> Iterator[str]:
    with start("samples.prediction_scorer") as address:
        yield f"http://{address}"


@pytest.fixture(scope="module")
def protected_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text(TOKEN + "\n", encoding="utf-8")
    with sample_process(
        "samples.prediction_scorer",
        ["--token-file", str(token_file), "--max-body-bytes", "2048"],
    ) as address:
        yield f"http://{address}"


@pytest.fixture(scope="module")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as http:
        yield http


# ------------------------------------------------------------------ every sample


@pytest.mark.parametrize(
    ("fixture", "path"),
    [
        ("sample_url", "/config"),
        ("static_url", "/performance/config"),
        ("static_url", "/powerconsumption/config"),
        ("prediction_url", "/config"),
        ("protected_url", "/config"),
    ],
)
def test_healthz_and_config_are_public(
    request: pytest.FixtureRequest, client: httpx.Client, fixture: str, path: str
) -> None:
    base = request.getfixturevalue(fixture)
    health = client.get(f"{base}/healthz")
    assert (health.status_code, health.json()) == (200, {"status": "ok"})
    answer = client.get(base + path)
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    config = ScorerConfig.model_validate_json(answer.content)
    assert config.scoring is not None and config.scoring.params is not None
    assert config.scoring.params.interval == 30


def test_sample_scorer_config_is_the_quickstarts(sample_url: str, client: httpx.Client) -> None:
    config = client.get(f"{sample_url}/config").json()
    assert config == {
        "name": "sample-scorer",
        "description": "A sample score for time series data",
        "source": {
            "type": "Prometheus",
            "host": "http://kube-prometheus-kube-prome-prometheus.monitoring.svc:9090",
            "path": "/api/v1/query_range",
            "params": {
                "query": 'sum by (node, namespace, pod) (rate(container_cpu_usage_seconds_total{container!="", pod!=""}[1m]))',
                "range": 3600,
                "step": 60,
            },
        },
        "scoring": {"path": "/scoring", "params": {"name": "sample_my_score", "interval": 30}},
    }


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("POST", "/healthz", 405),
        ("POST", "/config", 405),
        ("GET", "/scoring", 405),
        ("GET", "/nowhere", 404),
        ("POST", "/nowhere", 404),
    ],
)
def test_unknown_paths_and_methods(
    sample_url: str, client: httpx.Client, method: str, path: str, status: int
) -> None:
    answer = client.request(
        method, sample_url + path, json={"data": []} if method == "POST" else None
    )
    assert answer.status_code == status
    assert "error" in answer.json()


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"\xff\xfe",
        b"[]",
        b'{"results": []}',
        b'{"data": {}}',
        b'{"data": [1]}',
        b'{"data": [{"metric": {"node": 1}, "values": []}]}',
        b'{"data": [{"metric": {}, "values": {}}]}',
        b'{"data": [{"metric": {}, "values": [[1, 2]]}]}',
        b'{"data": [{"metric": {}, "values": [["1", "2"]]}]}',
        b'{"data": [{"metric": {}, "values": [[1, "2", 3]]}]}',
    ],
    ids=lambda body: body.decode("latin-1")[:40],
)
def test_scoring_rejects_bodies_that_are_not_scoring_requests(
    sample_url: str, client: httpx.Client, body: bytes
) -> None:
    answer = client.post(f"{sample_url}/scoring", content=body)
    assert answer.status_code == 400
    assert "error" in answer.json()


# ------------------------------------------------------------------ sample scorer


def test_sample_scorer_averages_each_series(sample_url: str, client: httpx.Client) -> None:
    labels = {"node": "n1", "namespace": "ns", "pod": "p"}
    body = {
        "data": [
            series(labels, [1.1, 1.3, 1.5]),
            series({"node": "n2"}, [2, "NaN", 4, "+Inf"]),
            series({"node": "n3"}, []),
            series({"node": "n4"}, ["NaN"]),
        ]
    }
    answer = client.post(f"{sample_url}/scoring", json=body)
    assert answer.status_code == 200
    results = ScoringResponse.model_validate_json(answer.content).results
    assert [r.metric for r in results] == [
        {**labels, "meta": sample_scorer.META},
        {"node": "n2", "meta": sample_scorer.META},
    ]
    assert results[0].score == pytest.approx(1.3)
    assert results[1].score == 3.0  # NaN and Inf are skipped, not averaged


def test_sample_scorer_empty_data_gives_no_results(sample_url: str, client: httpx.Client) -> None:
    answer = client.post(f"{sample_url}/scoring", json={"data": []})
    assert (answer.status_code, answer.json()) == (200, {"results": []})


# ------------------------------------------------------------------ static scorer


@pytest.mark.parametrize(
    ("kind", "table"),
    [
        ("performance", static_scorer.PERFORMANCE),
        ("powerconsumption", static_scorer.POWER_CONSUMPTION),
    ],
)
def test_static_scorer_serves_two_scorers(
    static_url: str, client: httpx.Client, kind: str, table: dict[tuple[str, str], int]
) -> None:
    config = client.get(f"{static_url}/{kind}/config").json()
    assert config["name"] == f"example-{kind}-scorer"
    assert config["source"] == {"type": "None"}
    assert config["scoring"] == {
        "path": f"/{kind}/scoring",
        "params": {"name": f"example_{kind}_score", "interval": 30},
    }
    first = client.post(f"{static_url}/{kind}/scoring", json={"data": []})
    again = client.post(f"{static_url}/{kind}/scoring", json={"data": [series({}, [1])]})
    assert first.status_code == again.status_code == 200
    assert first.content == again.content  # fixed and deterministic, whatever the input
    results = ScoringResponse.model_validate_json(first.content).results
    assert {(r.metric["app"], r.metric["device"]): r.score for r in results} == table
    assert all(set(r.metric) == {"app", "device"} for r in results)
    assert all(-100 <= r.score <= 100 for r in results)


# -------------------------------------------------------------- prediction scorer


@pytest.mark.parametrize(
    ("current", "predicted", "score"),
    [
        (1.0, 1.0, 0.0),
        (0.0, 0.0, 0.0),
        (1.0, 3.0, -50.0),
        (3.0, 1.0, 50.0),
        (1.0, 0.0, 100.0),
        (0.0, 1.0, -100.0),
        (1.0, -1.0, 100.0),
        (2.0, 4.0, -100 / 3),
    ],
)
def test_prediction_normalization(current: float, predicted: float, score: float) -> None:
    assert prediction_scorer.normalized_score(current, predicted) == pytest.approx(score)


def test_linear_fit_recovers_a_line() -> None:
    points = [(t, 2.0 + 0.5 * t) for t in range(0, 600, 60)]
    intercept, slope = prediction_scorer.linear_fit(points)
    assert intercept == pytest.approx(2.0)
    assert slope == pytest.approx(0.5)
    assert prediction_scorer.linear_fit([(5.0, 7.0)]) == (7.0, 0.0)


@pytest.mark.parametrize("seed", range(20))
def test_prediction_scores_stay_in_range(seed: int) -> None:
    rng = random.Random(seed)
    data = [
        series({"pod": str(i)}, [rng.uniform(-1e6, 1e6) for _ in range(rng.randint(1, 30))])
        for i in range(5)
    ]
    results = prediction_scorer.scorer("m")(data)
    assert [r["metric"]["pod"] for r in results] == [str(i) for i in range(5)]  # each scored
    for result in results:
        assert math.isfinite(result["score"])
        assert -100 <= result["score"] <= 100


def test_prediction_scorer_over_http(prediction_url: str, client: httpx.Client) -> None:
    labels = {"node": "n", "namespace": "ns", "pod": "p"}
    body = {
        "data": [
            # Rising from 1 to 3 over 120 s: c = 3, p = 5, score = -100 * 2 / 8.
            series(labels, [1, 2, 3]),
            series({"pod": "flat"}, [0.5, 0.5, 0.5]),
            # Falling from 4 to 2: c = 2, p = 0, score = 100.
            series({"pod": "falling"}, [4, 3, 2]),
            series({"pod": "single"}, [7]),
        ]
    }
    answer = client.post(f"{prediction_url}/scoring", json=body)
    assert answer.status_code == 200
    results = ScoringResponse.model_validate_json(answer.content).results
    meta = "linear-trend-by-simple-prediction-scorer"
    assert [(r.metric, r.score) for r in results] == [
        ({**labels, "meta": meta}, pytest.approx(-25.0)),
        ({"pod": "flat", "meta": meta}, 0.0),
        ({"pod": "falling", "meta": meta}, pytest.approx(100.0)),
        ({"pod": "single", "meta": meta}, 0.0),
    ]


def test_prediction_scorer_config(prediction_url: str, client: httpx.Client) -> None:
    config = client.get(f"{prediction_url}/config").json()
    assert config["name"] == "simple-prediction-scorer"
    assert config["source"]["type"] == "Prometheus"
    assert config["source"]["params"]["step"] == 30
    assert config["scoring"]["params"] == {"name": "simple_prediction_score", "interval": 30}


def test_prediction_scorer_options_rename_it(client: httpx.Client) -> None:
    args = [
        "--name",
        "llm-forecast-scorer",
        "--score-name",
        "llm_forecast_score",
        "--interval",
        "60",
    ]
    with start("samples.prediction_scorer", args) as address:
        config = client.get(f"http://{address}/config").json()
    assert config["name"] == "llm-forecast-scorer"
    assert config["scoring"]["params"] == {"name": "llm_forecast_score", "interval": 60}


# --------------------------------------------------------------------------- auth


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, 401),
        ({"Authorization": "Bearer wrong"}, 401),
        ({"Authorization": "Basic " + TOKEN}, 401),
        ({"Authorization": "Bearer"}, 401),
        ({"Authorization": "Bearer " + TOKEN}, 200),
        ({"Authorization": "bearer " + TOKEN}, 200),
    ],
    ids=["none", "wrong", "basic", "empty", "right", "lower-case-scheme"],
)
def test_token_protects_scoring(
    protected_url: str, client: httpx.Client, headers: dict[str, str], status: int
) -> None:
    encoded = {k.encode(): v.encode() for k, v in headers.items()}  # the test token is not ASCII
    answer = client.post(f"{protected_url}/scoring", json={"data": []}, headers=encoded)
    assert answer.status_code == status
    if status == 401:
        assert answer.headers["www-authenticate"] == "Bearer"


def test_token_from_environment(client: httpx.Client) -> None:
    env = {**_environ(), "SCORER_TOKEN": "env-token"}
    with start("samples.sample_scorer", env=env) as address:
        refused = client.post(f"http://{address}/scoring", json={"data": []})
        accepted = client.post(
            f"http://{address}/scoring",
            json={"data": []},
            headers={"Authorization": "Bearer env-token"},
        )
    assert (refused.status_code, accepted.status_code) == (401, 200)


def test_refused_request_does_not_poison_the_connection(protected_url: str) -> None:
    # The server answers 401 without reading the body; the next request must still work.
    with httpx.Client(timeout=10) as http:
        assert http.post(f"{protected_url}/scoring", json={"data": []}).status_code == 401
        assert http.get(f"{protected_url}/healthz").status_code == 200


# ---------------------------------------------------------------------- body cap


def test_oversized_body_is_refused(protected_url: str, client: httpx.Client) -> None:
    big = {"data": [series({"pod": "p"}, [1.0] * 200)]}
    assert len(json.dumps(big)) > 2048
    answer = client.post(
        f"{protected_url}/scoring",
        json=big,
        headers={b"Authorization": b"Bearer " + TOKEN.encode()},
    )
    assert answer.status_code == 413


def test_scorer_failure_is_a_500() -> None:
    def broken(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        raise ZeroDivisionError("bug")

    with RunningServer(ScoringApp(scorers={"/scoring": broken})) as server, httpx.Client() as http:
        answer = http.post(f"http://{server.address}/scoring", json={"data": []})
    assert answer.status_code == 500


def test_sample_prints_address_first_and_never_the_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("very-private-value", encoding="utf-8")
    output: list[str] = []
    args = ["--token-file", str(token_file), "--verbose"]
    with start("samples.static_scorer", args, output=output) as address:
        host, port = address.rsplit(":", 1)
        assert host == "127.0.0.1" and int(port) > 0
        with httpx.Client() as http:
            for token in ("very-private-value", "wrong-value"):
                http.post(
                    f"http://{address}/performance/scoring",
                    json={"data": []},
                    headers={"Authorization": f"Bearer {token}"},
                )
    logged = "".join(output)
    assert "POST /performance/scoring" in logged  # --verbose logs requests ...
    assert "very-private-value" not in logged  # ... but never the token


# -------------------------------------------------------------------------- fleet


def test_running_fleet_serves_every_fleet_service(client: httpx.Client) -> None:
    with fleet.running_fleet({"LLM_FORECAST_TOKEN": "fleet-token"}) as mapping:
        assert sorted(mapping) == [
            "llm-forecast.scoring.example.net:8000",
            "sample-scorer.dynamic-scoring.svc:8000",
            "simple-prediction-scorer.dynamic-scoring.svc:8000",
            "static-scorer.dynamic-scoring.svc:8000",
        ]
        assert all(address.startswith("127.0.0.1:") for address in mapping.values())
        names = {
            service: client.get(f"http://{address}{path}").json()["name"]
            for service, address in mapping.items()
            for path in (
                ["/performance/config", "/powerconsumption/config"]
                if service.startswith("static")
                else ["/config"]
            )
        }
        llm = mapping["llm-forecast.scoring.example.net:8000"]
        refused = client.post(f"http://{llm}/scoring", json={"data": []})
        accepted = client.post(
            f"http://{llm}/scoring",
            json={"data": []},
            headers={"Authorization": "Bearer fleet-token"},
        )
        flags = fleet.resolve_flags(mapping)
    assert names["llm-forecast.scoring.example.net:8000"] == "llm-forecast-scorer"
    assert (refused.status_code, accepted.status_code) == (401, 200)
    assert flags[0] == f"--resolve=llm-forecast.scoring.example.net:8000:{llm}"


def test_fleet_dev_token_is_used_without_environment(client: httpx.Client) -> None:
    with fleet.running_fleet({}) as mapping:
        llm = mapping["llm-forecast.scoring.example.net:8000"]
        answer = client.post(
            f"http://{llm}/scoring",
            json={"data": []},
            headers={"Authorization": f"Bearer {fleet.DEV_TOKEN}"},
        )
    assert answer.status_code == 200


def test_fleet_sync_moves_global_options_first() -> None:
    assert fleet._split_globals(["--root", "x", "a", "--strict", "--format=github"]) == (
        ["--root", "x", "--format=github"],
        ["a", "--strict"],
    )


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "SCORER_TOKEN"}


def test_fleet_sync_reproduces_the_committed_lockfile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repository = EXAMPLE_FLEET
    for name in ("scorers", "clusters"):
        shutil.copytree(repository / name, tmp_path / name)
    shutil.copy(repository / "dsf.yaml", tmp_path / "dsf.yaml")
    assert fleet.main(["--root", str(tmp_path), "sync", "--strict"]) == 0
    assert "0 Inactive" in capsys.readouterr().err
    # The committed lockfile was made by this same command: a sample whose /config
    # changes must come with a re-synced lockfile.
    synced = json.loads((tmp_path / "dsf.lock.json").read_text(encoding="utf-8"))
    committed = json.loads((repository / "dsf.lock.json").read_text(encoding="utf-8"))
    assert synced == committed
