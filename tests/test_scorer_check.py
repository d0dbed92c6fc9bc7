"""``dsf-compile scorer-check`` against the real samples and against broken fake scorers."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from dsf_compile.commands import scorer_check, scorer_exchange
from dsf_compile.commands.cli import run
from dsf_compile.commands.scorer_check import run_scorer_check
from samples.process import sample_process
from samples.service import Reply, RunningServer, ScoringApp

pytestmark = pytest.mark.integration

TOKEN = "check-token-not-secret"
GOOD_CONFIG: dict[str, Any] = {
    "name": "fake",
    "source": {"type": "None"},
    "scoring": {"path": "/scoring", "params": {"name": "fake_score", "interval": 30}},
}


def _environ() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("SCORER_TOKEN", "DSF_SCORER_TOKEN")}


def check(*args: str) -> tuple[int, str, str]:
    """Run ``dsf-compile scorer-check ARGS``: exit code, stdout, stderr."""
    out, err = io.StringIO(), io.StringIO()
    code = run(["scorer-check", *args], out, err)
    return code, out.getvalue(), err.getvalue()


def lines(output: str, status: str) -> list[str]:
    """The names of the checks printed with ``status``."""
    return [line.split()[1] for line in output.splitlines() if line.startswith(status + " ")]


@pytest.fixture(autouse=True)
def _no_token_in_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DSF_SCORER_TOKEN", raising=False)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Base URLs of the real samples, each a subprocess on 127.0.0.1."""
    token_file = tmp_path_factory.mktemp("token") / "token"
    token_file.write_text(TOKEN, encoding="utf-8")
    env = _environ()
    with (
        sample_process("samples.sample_scorer", env=env) as sample,
        sample_process("samples.static_scorer", env=env) as static,
        sample_process("samples.prediction_scorer", env=env) as prediction,
        sample_process(
            "samples.prediction_scorer", ["--token-file", str(token_file)], env=env
        ) as protected,
    ):
        yield {
            "sample": f"http://{sample}",
            "static": f"http://{static}",
            "prediction": f"http://{prediction}",
            "protected": f"http://{protected}",
        }


@pytest.fixture
def fake() -> Iterator[Callable[..., str]]:
    """Start a fake scorer on 127.0.0.1; returns its base URL. Stopped after the test."""
    servers: list[RunningServer] = []

    def start(
        config: Any = GOOD_CONFIG,
        scoring: Callable[[], Reply] | None = None,
        *,
        token: str | None = None,
        healthz: bool = True,
        raw_config: Reply | None = None,
    ) -> str:
        app = ScoringApp(
            documents={"/config": config},
            scorers={"/scoring": lambda data: [{"metric": {"node": "n"}, "score": 1.0}]},
            token=token,
        )
        if scoring is not None:
            app.raw[("POST", "/scoring")] = scoring
        if raw_config is not None:
            app.raw[("GET", "/config")] = lambda: raw_config
        if not healthz:
            app.raw[("GET", "/healthz")] = lambda: Reply(404, b"{}")
        server = RunningServer(app)
        servers.append(server)
        return f"http://{server.address}"

    yield start
    for server in servers:
        server.close()


# ----------------------------------------------------------- the samples conform


@pytest.mark.parametrize(
    ("sample", "path"),
    [
        ("sample", ""),
        ("sample", "/"),
        ("sample", "/config"),
        ("static", "/performance/config"),
        ("static", "/powerconsumption/config"),
        ("prediction", "/config"),
    ],
)
def test_samples_pass(samples: dict[str, str], sample: str, path: str) -> None:
    code, out, err = check(samples[sample] + path)
    assert (code, err) == (0, "")
    assert lines(out, "FAIL") == []
    assert lines(out, "SKIP") == ["auth"]
    assert "conforms: 8 passed, 0 failed, 1 skipped" in out


def test_protected_sample_passes_with_token(samples: dict[str, str]) -> None:
    code, out, _ = check(samples["protected"], "--token", TOKEN)
    assert code == 0
    assert "PASS auth" in out
    assert "no token -> 401, wrong token -> 401, token -> 200" in out
    assert TOKEN not in out


def test_token_from_environment(samples: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DSF_SCORER_TOKEN", TOKEN)
    code, out, _ = check(samples["protected"] + "/config")
    assert code == 0
    assert lines(out, "FAIL") == lines(out, "SKIP") == []


def test_protected_sample_without_token_fails(samples: dict[str, str]) -> None:
    code, out, _ = check(samples["protected"])
    assert code == 1
    assert lines(out, "FAIL") == ["scoring", "scoring-empty"]
    assert "401" in out and "--token or $DSF_SCORER_TOKEN" in out


def test_protected_sample_with_wrong_token_fails(samples: dict[str, str]) -> None:
    code, out, _ = check(samples["protected"], "--token", "not-the-token")
    assert code == 1
    assert "FAIL auth" in out
    assert "not-the-token" not in out


def test_open_scorer_fails_when_a_token_is_given(samples: dict[str, str]) -> None:
    code, out, _ = check(samples["sample"], "--token", TOKEN)
    assert code == 1
    assert lines(out, "FAIL") == ["auth"]
    assert "no token -> 200, expected 401 or 403" in out


# ------------------------------------------------------------ broken fake scorers


def test_non_json_config_fails(fake: Callable[..., str]) -> None:
    url = fake(raw_config=Reply(200, b"<html>hello</html>", "text/html"))
    code, out, _ = check(url)
    assert code == 1
    assert lines(out, "FAIL") == ["config"]
    assert "not JSON" in out
    assert lines(out, "SKIP") == [
        "scoring-endpoint",
        "scoring",
        "scoring-empty",
        "response-schema",
        "finite-scores",
        "auth",
        "latency",
    ]


@pytest.mark.parametrize(
    ("config", "reason"),
    [
        ([GOOD_CONFIG], "a list, not a JSON object"),
        ({"scoring": {"params": {"interval": "30"}}}, "scoring.params.interval"),
        ({"source": {"type": "Graphite"}}, "source.type"),
        ({"name": 5}, "name"),
        (
            {"source": {"type": "prometheus", "params": {"query": "up", "range": 60, "step": 120}}},
            "step 120 s is longer than range 60 s",
        ),
        (
            {
                "source": {
                    "type": "Prometheus",
                    "params": {"query": "up", "range": 86400, "step": 1},
                }
            },
            "Prometheus allows 11000",
        ),
    ],
)
def test_invalid_config_fails(fake: Callable[..., str], config: Any, reason: str) -> None:
    code, out, _ = check(fake(config))
    assert code == 1
    assert lines(out, "FAIL") == ["config"]
    assert reason in out


def test_sparse_config_passes_with_a_note(fake: Callable[..., str]) -> None:
    code, out, _ = check(fake({}))
    assert code == 0
    assert (
        "the DynamicScorer spec must supply scoring.params.name, scoring.params.interval, source.type"
        in out
    )
    assert "/scoring (default path)" in out


def test_nan_score_fails(fake: Callable[..., str]) -> None:
    body = b'{"results": [{"metric": {"node": "n"}, "score": NaN}]}'
    code, out, _ = check(fake(scoring=lambda: Reply(200, body)))
    assert code == 1
    assert lines(out, "FAIL") == ["finite-scores"]
    assert "not finite: nan" in out


def test_server_error_on_scoring_fails(fake: Callable[..., str]) -> None:
    code, out, _ = check(fake(scoring=lambda: Reply(500, b'{"error": "boom"}')))
    assert code == 1
    assert lines(out, "FAIL") == ["scoring", "scoring-empty"]
    assert "500" in out
    assert lines(out, "SKIP") == ["response-schema", "finite-scores", "auth", "latency"]


@pytest.mark.parametrize(
    "body",
    [
        b'{"scores": []}',
        b'{"results": [{"metric": {"node": 1}, "score": 1}]}',
        b'{"results": [{"metric": {}}]}',
        b'{"results": [{"score": "high"}]}',
        b"[]",
        b"not json",
    ],
)
def test_invalid_response_fails(fake: Callable[..., str], body: bytes) -> None:
    code, out, _ = check(fake(scoring=lambda: Reply(200, body)))
    assert code == 1
    assert lines(out, "FAIL") == ["response-schema"]


def test_scorer_without_auth_enforcement_fails_when_token_given(fake: Callable[..., str]) -> None:
    code, out, _ = check(fake(), "--token", TOKEN)
    assert code == 1
    assert lines(out, "FAIL") == ["auth"]


def test_token_protected_fake_passes(fake: Callable[..., str]) -> None:
    code, out, _ = check(fake(token=TOKEN), "--token", TOKEN)
    assert code == 0
    assert "PASS auth" in out


def test_missing_healthz_fails(fake: Callable[..., str]) -> None:
    code, out, _ = check(fake(healthz=False))
    assert code == 1
    assert lines(out, "FAIL") == ["healthz"]


def test_redirect_is_not_followed(fake: Callable[..., str]) -> None:
    moved = Reply(302, b"", headers=(("Location", "http://elsewhere.invalid/config"),))
    code, out, _ = check(fake(raw_config=moved))
    assert code == 1
    assert "302 redirect to http://elsewhere.invalid/config (redirects are not followed)" in out


def test_unreachable_scorer_fails() -> None:
    with RunningServer(ScoringApp()) as server:
        url = f"http://{server.address}"  # the port is free again once the server is closed
    code, out, _ = check(url)
    assert code == 1
    assert lines(out, "FAIL") == ["healthz", "config"]


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("ftp://example.invalid/config", "must be an absolute http:// or https:// URL"),
        ("not a url", "white space"),
        ("http://user:secret@example.invalid/config", "must not carry credentials"),
    ],
)
def test_bad_url_fails_without_network(url: str, shown: str) -> None:
    code, out, err = check(url)
    assert (code, err) == (1, "")
    assert lines(out, "FAIL") == ["url"]
    assert shown in out
    assert "secret" not in out


# ---------------------------------------------------------- without a real server


def _mock(handler: Callable[[httpx.Request], httpx.Response]) -> httpx.MockTransport:
    return httpx.MockTransport(handler)


def _good(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/config":
        return httpx.Response(200, json=GOOD_CONFIG)
    if request.method == "POST":
        return httpx.Response(200, json={"results": [{"metric": {}, "score": 250}]})
    return httpx.Response(200, json={"status": "ok"})


def test_requests_are_what_the_contract_says() -> None:
    seen: list[tuple[str, str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content) if request.content else None
        seen.append((request.method, request.url.path, body))
        return _good(request)

    out = io.StringIO()
    assert run_scorer_check(
        "https://scorer.example.invalid/", token=None, timeout=1, out=out, transport=_mock(handler)
    )
    assert [(method, path) for method, path, _ in seen] == [
        ("GET", "/healthz"),
        ("GET", "/config"),
        ("POST", "/scoring"),
        ("POST", "/scoring"),
    ]
    generated = seen[2][2]["data"]
    assert len(generated) == 3
    assert all(set(s["metric"]) == {"node", "namespace", "pod"} for s in generated)
    assert all(len(s["values"]) == 60 for s in generated)
    assert seen[3][2] == {"data": []}
    assert "the agent clamps scores to [-100, 100]" in out.getvalue()


def test_scoring_host_from_config_is_used() -> None:
    config = {**GOOD_CONFIG, "scoring": {"host": "http://other.invalid:9000/", "path": "score"}}
    hosts: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        hosts.append(f"{request.url.host}{request.url.path}")
        if request.url.path == "/config":
            return httpx.Response(200, json=config)
        return _good(request)

    out = io.StringIO()
    assert run_scorer_check(
        "http://scorer.invalid/config", token=None, timeout=1, out=out, transport=_mock(handler)
    )
    assert hosts[2:] == ["other.invalid/score", "other.invalid/score"]


def test_oversized_response_fails() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/config":
            return httpx.Response(200, content=b" " * (scorer_check.MAX_CONFIG_BYTES + 1))
        return _good(request)

    out = io.StringIO()
    assert not run_scorer_check(
        "http://scorer.invalid", token=None, timeout=1, out=out, transport=_mock(handler)
    )
    assert "FAIL config" in out.getvalue()
    assert "body larger than 1048576 bytes" in out.getvalue()


def test_slow_scoring_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # The limit is lowered instead of making a slow server: tests assert no timing.
    monkeypatch.setattr(scorer_check, "LATENCY_LIMIT_SECONDS", -1.0)
    out = io.StringIO()
    assert not run_scorer_check(
        "http://scorer.invalid", token=None, timeout=1, out=out, transport=_mock(_good)
    )
    assert [line.split()[1] for line in out.getvalue().splitlines() if line.startswith("FAIL")] == [
        "latency"
    ]


def test_timeout_fails() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/scoring":
            raise httpx.ReadTimeout("timed out", request=request)
        return _good(request)

    out = io.StringIO()
    assert not run_scorer_check(
        "http://scorer.invalid", token=None, timeout=1, out=out, transport=_mock(handler)
    )
    assert "ReadTimeout" in out.getvalue()


def test_token_echoed_by_the_scorer_is_not_printed() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/scoring":
            return httpx.Response(500, text=f"bad header {request.headers.get('authorization')}")
        return _good(request)

    out = io.StringIO()
    assert not run_scorer_check(
        "http://scorer.invalid", token=TOKEN, timeout=1, out=out, transport=_mock(handler)
    )
    assert "bad header Bearer ***" in out.getvalue()
    assert TOKEN not in out.getvalue()


@pytest.mark.parametrize(
    ("url", "healthz", "config"),
    [
        ("http://h:8000", "http://h:8000/healthz", "http://h:8000/config"),
        ("http://h:8000/", "http://h:8000/healthz", "http://h:8000/config"),
        ("http://h/perf/config", "http://h/healthz", "http://h/perf/config"),
        ("http://h/perf/config/", "http://h/healthz", "http://h/perf/config"),
        ("https://h/prefix", "https://h/healthz", "https://h/prefix/config"),
        ("http://h/config?v=1", "http://h/healthz", "http://h/config?v=1"),
    ],
)
def test_endpoints_from_url(url: str, healthz: str, config: str) -> None:
    endpoints = scorer_exchange.endpoints(url)
    assert (endpoints.healthz, endpoints.config) == (healthz, config)


def test_readme_commands_exist() -> None:
    readme = (Path(__file__).resolve().parent.parent / "samples" / "README.md").read_text(
        encoding="utf-8"
    )
    for module in ("samples.sample_scorer", "samples.static_scorer", "samples.prediction_scorer"):
        assert f"python -m {module}" in readme
    assert "dsf-compile scorer-check" in readme


def test_a_base_url_whose_config_is_elsewhere_is_told_to_pass_the_config_url(fake) -> None:
    base = fake(raw_config=Reply(404, b'{"detail": "Not Found"}'))
    code, out, _ = check(base)
    assert code == 1
    (line,) = [line for line in out.splitlines() if line.startswith("FAIL config")]
    assert "; if the scorer serves its /config elsewhere (say /api/config), pass that URL (" in line
    # given as the /config URL, the 404 is just a 404
    code, out, _ = check(f"{base}/config")
    (line,) = [line for line in out.splitlines() if line.startswith("FAIL config")]
    assert "pass that URL" not in line
