"""The LLM forecast sample against a loopback fake of an OpenAI-compatible completions API."""

from __future__ import annotations

import io
import json
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsf_compile.commands.cli import run
from dsf_contract.scoring_api import ScorerConfig, ScoringResponse
from samples import fleet, llm_forecast_scorer
from samples.process import sample_process

pytestmark = pytest.mark.integration

INFERENCE_TOKEN = "inference-token-not-secret-4711"
MODEL = "fake-model"
HORIZON = 3

# What the fake answers, by mode: a function of the prompt's values.
Answer = Callable[[list[float]], tuple[int, bytes]]


def completion(text: str) -> tuple[int, bytes]:
    return 200, json.dumps({"choices": [{"text": text, "index": 0}]}).encode()


ANSWERS: dict[str, Answer] = {
    # Twice the last value: c = v, p = 2v, score = -100 * v / 3v.
    "double": lambda values: completion(", ".join([repr(values[-1] * 2)] * HORIZON)),
    "rambling": lambda values: completion(
        f"\n [{values[-1]}, {values[-1]}, {values[-1]}]\nI hope this helps"
    ),
    "nonsense": lambda values: completion("The load will go up, I think."),
    "short": lambda values: completion("1.0, 2.0"),
    "nan": lambda values: completion("1.0, nan, 2.0"),
    "overflow": lambda values: completion("1.0, 1e999, 2.0"),
    "no-choices": lambda values: (200, b'{"object": "text_completion"}'),
    "not-json": lambda values: (200, b"<html>oops</html>"),
    "server-error": lambda values: (500, b'{"error": "CUDA out of memory"}'),
    "huge": lambda values: completion("1, " * 500_000),
}


@dataclass
class FakeCompletions:
    """A loopback completions API: records requests, checks the token, answers by ``mode``."""

    mode: str = "double"
    requests: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str | None] = field(default_factory=list)


@pytest.fixture
def completions() -> Iterator[tuple[FakeCompletions, str]]:
    """The fake and its base URL (``http://127.0.0.1:PORT/v1``)."""
    fake = FakeCompletions()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            fake.requests.append(body)
            fake.authorizations.append(self.headers.get("Authorization"))
            if self.path != "/v1/completions":
                status, answer = 404, b"{}"
            elif self.headers.get("Authorization") != f"Bearer {INFERENCE_TOKEN}":
                status, answer = 401, b'{"error": "bad token"}'
            else:
                line = re.search(r"^Values: (.*)$", body["prompt"], re.MULTILINE)
                assert line is not None
                status, answer = ANSWERS[fake.mode]([float(v) for v in line[1].split(", ")])
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _environ(**extra: str) -> dict[str, str]:
    names = (
        "SCORER_TOKEN",
        "DSF_SCORER_TOKEN",
        "INFERENCE_ENDPOINT",
        "MODEL_NAME",
        "INFERENCE_TOKEN",
    )
    return {**{k: v for k, v in os.environ.items() if k not in names}, **extra}


@pytest.fixture
def scorer(completions: tuple[FakeCompletions, str]) -> Iterator[tuple[FakeCompletions, str]]:
    """The sample as a subprocess, pointed at the fake; yields the fake and the sample's base URL."""
    fake, endpoint = completions
    env = _environ(INFERENCE_ENDPOINT=endpoint, MODEL_NAME=MODEL, INFERENCE_TOKEN=INFERENCE_TOKEN)
    with sample_process(
        "samples.llm_forecast_scorer", ["--horizon", str(HORIZON)], env=env
    ) as address:
        yield fake, f"http://{address}"


def series(metric: dict[str, str], values: list[float | str], step: int = 60) -> dict[str, Any]:
    return {
        "metric": metric,
        "values": [[1_718_600_000 + i * step, str(v)] for i, v in enumerate(values)],
    }


def score(url: str, data: list[dict[str, Any]]) -> httpx.Response:
    with httpx.Client(timeout=30) as http:
        return http.post(f"{url}/scoring", json={"data": data})


# ---------------------------------------------------------------- good answers


def test_forecasts_become_scores(scorer: tuple[FakeCompletions, str]) -> None:
    fake, url = scorer
    labels = {"node": "n1", "namespace": "ns", "pod": "p"}
    answer = score(
        url,
        [
            series(labels, [1, 2, "NaN", 4]),
            series({"pod": "idle"}, ["NaN"]),  # nothing finite: no request, no result
            series({"pod": "q"}, [0.5] * 100, step=30),
        ],
    )
    assert answer.status_code == 200, answer.text
    results = ScoringResponse.model_validate_json(answer.content).results
    meta = f"llm-forecast-by-{MODEL}"
    assert [r.metric for r in results] == [{**labels, "meta": meta}, {"pod": "q", "meta": meta}]
    assert [r.score for r in results] == pytest.approx([-100 / 3, -100 / 3])
    assert len(fake.requests) == 2
    first, second = sorted(fake.requests, key=lambda r: "pod=p" not in r["prompt"])
    assert first["model"] == MODEL and first["temperature"] == 0
    assert "Values: 1.0, 2.0, 4.0\n" in first["prompt"]
    assert "one every 60 seconds" in first["prompt"]
    assert "namespace=ns, node=n1, pod=p" in first["prompt"]
    assert f"Forecast the next {HORIZON} values" in first["prompt"]
    # Only the last 60 values (--history), and the data's own step.
    assert second["prompt"].count("0.5") == 60
    assert "one every 30 seconds" in second["prompt"]
    assert fake.authorizations == [f"Bearer {INFERENCE_TOKEN}"] * 2


def test_a_rambling_but_usable_answer_is_accepted(scorer: tuple[FakeCompletions, str]) -> None:
    fake, url = scorer
    fake.mode = "rambling"
    answer = score(url, [series({"pod": "p"}, [2, 3])])
    assert answer.status_code == 200, answer.text
    assert answer.json()["results"][0]["score"] == 0.0


def test_empty_data_needs_no_model() -> None:
    # No endpoint configured at all: config and empty scoring still work.
    with (
        sample_process("samples.llm_forecast_scorer", env=_environ()) as address,
        httpx.Client(timeout=10) as http,
    ):
        config = http.get(f"http://{address}/config")
        empty = http.post(f"http://{address}/scoring", json={"data": []})
        some = http.post(f"http://{address}/scoring", json={"data": [series({}, [1])]})
    assert config.status_code == 200
    parsed = ScorerConfig.model_validate_json(config.content)
    assert parsed.name == "llm-forecast-scorer"
    assert parsed.scoring is not None and parsed.scoring.params is not None
    assert (parsed.scoring.params.name, parsed.scoring.params.interval) == (
        "llm_forecast_score",
        60,
    )
    assert (empty.status_code, empty.json()) == (200, {"results": []})
    assert (some.status_code, some.json()) == (
        503,
        {"error": "inference: INFERENCE_ENDPOINT is not set"},
    )


# ------------------------------------------------------------ nonsense answers


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        (
            "nonsense",
            "model answer for series 0: unparseable forecast 'The load will go up, I think.'",
        ),
        ("short", "model answer for series 0: 2 values instead of 3 in '1.0, 2.0'"),
        ("nan", "model answer for series 0: non-finite value 'nan' in '1.0, nan, 2.0'"),
        ("overflow", "model answer for series 0: non-finite value '1e999'"),
        ("no-choices", "inference: not a completions response (no choices[0].text)"),
        ("not-json", "inference: not a completions response (no choices[0].text)"),
        ("server-error", 'answered 500: {"error": "CUDA out of memory"}'),
        ("huge", "inference: answer larger than 1048576 bytes"),
    ],
)
def test_nonsense_is_a_502_with_the_reason(
    scorer: tuple[FakeCompletions, str], mode: str, reason: str
) -> None:
    fake, url = scorer
    fake.mode = mode
    answer = score(url, [series({"pod": "p"}, [1, 2, 3])])
    assert answer.status_code == 502
    assert reason in answer.json()["error"]


def test_a_wrong_inference_token_is_a_502_with_a_hint(
    completions: tuple[FakeCompletions, str],
) -> None:
    _, endpoint = completions
    env = _environ(INFERENCE_ENDPOINT=endpoint, MODEL_NAME=MODEL, INFERENCE_TOKEN="wrong")
    with sample_process("samples.llm_forecast_scorer", env=env) as address:
        answer = score(f"http://{address}", [series({"pod": "p"}, [1])])
    assert answer.status_code == 502
    assert "answered 401 (check INFERENCE_TOKEN)" in answer.json()["error"]


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_endpoint_down_is_a_503() -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}/v1"
    env = _environ(INFERENCE_ENDPOINT=endpoint, MODEL_NAME=MODEL)
    with sample_process("samples.llm_forecast_scorer", env=env) as address:
        answer = score(f"http://{address}", [series({"pod": "p"}, [1])])
    assert answer.status_code == 503
    assert answer.json()["error"].startswith(
        f"inference: {endpoint}/completions unreachable: ConnectError"
    )


def test_a_silent_endpoint_is_a_504() -> None:
    # A listening socket that never answers: the request times out.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        endpoint = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        env = _environ(INFERENCE_ENDPOINT=endpoint, MODEL_NAME=MODEL)
        args = ["--inference-timeout", "0.5"]
        with sample_process("samples.llm_forecast_scorer", args, env=env) as address:
            answer = score(f"http://{address}", [series({"pod": "p"}, [1])])
    assert answer.status_code == 504
    assert "did not answer within 0.5 s" in answer.json()["error"]


def test_the_inference_token_is_never_logged(
    completions: tuple[FakeCompletions, str],
) -> None:
    fake, endpoint = completions
    fake.mode = "server-error"
    env = _environ(INFERENCE_ENDPOINT=endpoint, MODEL_NAME=MODEL, INFERENCE_TOKEN=INFERENCE_TOKEN)
    output: list[str] = []
    with sample_process(
        "samples.llm_forecast_scorer", ["--verbose"], env=env, output=output
    ) as address:
        answer = score(f"http://{address}", [series({"pod": "p"}, [1])])
    logged = "".join(output)
    assert answer.status_code == 502
    assert "scoring failed: 502: inference:" in logged  # failures are logged ...
    assert INFERENCE_TOKEN not in logged and INFERENCE_TOKEN not in answer.text  # ... not the token
    assert INFERENCE_TOKEN not in repr(
        llm_forecast_scorer.settings_from(llm_forecast_scorer.parser().parse_args([]), env)
    )


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        ([], {"INFERENCE_ENDPOINT": "vllm:8000"}, "INFERENCE_ENDPOINT: must be an absolute http"),
        ([], {"INFERENCE_ENDPOINT": "http://u:p@h/v1"}, "must not hold credentials"),
        (["--horizon", "0"], {}, "--horizon must be at least 1"),
        (["--inference-timeout", "0"], {}, "--inference-timeout must be above 0"),
    ],
)
def test_bad_settings_stop_the_sample_with_a_message(
    args: list[str], env: dict[str, str], message: str
) -> None:
    parsed = llm_forecast_scorer.parser().parse_args(args)
    with pytest.raises(SystemExit, match=re.escape(message)):
        llm_forecast_scorer.settings_from(parsed, env)


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1, 2, 3", [1.0, 2.0, 3.0]),
        ("[1.5,2.5,-3e2]", [1.5, 2.5, -300.0]),
        ("\n\n 1 2 3 \nmore text", [1.0, 2.0, 3.0]),
    ],
)
def test_parse_forecast(text: str, values: list[float]) -> None:
    assert llm_forecast_scorer.parse_forecast(text, 3) == values


def test_the_inference_token_can_come_from_a_file(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("from-file\n", encoding="utf-8")
    args = llm_forecast_scorer.parser().parse_args(["--inference-token-file", str(token_file)])
    settings = llm_forecast_scorer.settings_from(args, {"INFERENCE_TOKEN": "from-env"})
    assert settings.token == "from-file"


# --------------------------------------------------------------- scorer-check


def check(url: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["scorer-check", url], out, err)
    return code, out.getvalue() + err.getvalue()


def test_scorer_check_passes_against_a_good_model(scorer: tuple[FakeCompletions, str]) -> None:
    fake, url = scorer
    code, output = check(url)
    assert code == 0, output
    assert "PASS scoring          POST 3 series x 60 points -> 200" in output
    assert "PASS finite-scores    3 score(s) in [-33.3333, -33.3333]" in output
    assert len(fake.requests) == 3  # scorer-check's three generated series


def test_scorer_check_fails_with_the_reason_when_the_model_answers_nonsense(
    scorer: tuple[FakeCompletions, str],
) -> None:
    fake, url = scorer
    fake.mode = "nonsense"
    code, output = check(url)
    assert code == 1
    assert "FAIL scoring " in output
    assert '502: {"error":"model answer for series 0: unparseable forecast' in output
    assert "PASS scoring-empty" in output  # an empty request never reaches the model


# ---------------------------------------------------------------------- fleet


def test_the_fleet_serves_this_sample_without_a_model() -> None:
    with fleet.running_fleet({}) as mapping, httpx.Client(timeout=10) as http:
        address = mapping["llm-forecast.scoring.example.net:8000"]
        config = http.get(f"http://{address}/config").json()
        answer = http.post(
            f"http://{address}/scoring",
            json={"data": [series({"pod": "p"}, [1])]},
            headers={"Authorization": f"Bearer {fleet.DEV_TOKEN}"},
        )
    assert config == llm_forecast_scorer.config()
    assert (answer.status_code, answer.json()["error"]) == (
        503,
        "inference: INFERENCE_ENDPOINT is not set",
    )
