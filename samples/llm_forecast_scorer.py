"""The LLM forecast scorer: a language model forecasts each series, the forecast becomes a score.

Run: ``INFERENCE_ENDPOINT=http://vllm:8000/v1 MODEL_NAME=my-model python -m samples.llm_forecast_scorer``.

Like upstream's external vLLM forecaster, it asks any OpenAI-compatible completions API
(vLLM, llama.cpp's server, Ollama, a hosted API) for a forecast:

- ``INFERENCE_ENDPOINT`` (or ``--inference-endpoint``): the API's base URL; the sample
  POSTs to ``<endpoint>/completions``.
- ``MODEL_NAME`` (or ``--model``): the ``model`` field of the request.
- ``INFERENCE_TOKEN`` (or ``--inference-token-file PATH``): optional bearer token for that
  API. It is sent only there and never logged. (``--token-file``/``$SCORER_TOKEN``
  protect this sample's own ``/scoring``, as for every sample.)

For each series with finite values, the last ``--history`` points go into a prompt
(:data:`PROMPT`, a jinja2 template) that asks for the next ``--horizon`` values as
comma-separated numbers. The first non-empty line of the answer must be exactly that
many finite numbers (optionally in ``[...]``). With ``c`` the series' last value and
``p`` the mean of the forecast, the score is the simple prediction scorer's
``-100 * (p - c) / (|p| + |c|)``: in [-100, 100], below 0 when the load is predicted
to rise.

``/config`` is a constant document: it needs no model, so ``dsf-compile sync`` works
without one. ``/scoring`` answers ``{"results": []}`` to ``{"data": []}`` without calling
the model. When the model cannot help, scoring fails with a clear ``error`` text:
502 when it answers nonsense (unparseable text, a wrong number of values, non-finite
values) or an error status, 503 when the endpoint is not configured or unreachable,
504 when it does not answer within ``--inference-timeout`` seconds.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import httpx
import jinja2

from .cli import add_schedule_options, base_parser, require_at_least_one, run_main
from .prediction_scorer import normalized_score
from .sample_scorer import CPU_QUERY, PROMETHEUS_HOST, finite_values
from .service import ScoreFunction, ScoringApp, UpstreamError

ENDPOINT_ENV = "INFERENCE_ENDPOINT"
MODEL_ENV = "MODEL_NAME"
INFERENCE_TOKEN_ENV = "INFERENCE_TOKEN"
DEFAULT_MAX_RESPONSE_BYTES = 1024 * 1024
EXCERPT_CHARS = 60

# Plain text, not HTML: no autoescaping. StrictUndefined turns a typo into an error.
_TEMPLATES = jinja2.Environment(
    autoescape=False, undefined=jinja2.StrictUndefined, keep_trailing_newline=True
)
PROMPT = _TEMPLATES.from_string(
    """\
You are a forecasting system. Below are the last {{ values | length }} values of a time
series, oldest first, one every {{ step }} seconds.
Series: {{ labels }}
Values: {{ values | join(", ") }}
Forecast the next {{ horizon }} values. Answer with exactly {{ horizon }} numbers separated
by commas, and nothing else.
Forecast:"""
)
_SEPARATORS = re.compile(r"[,\s]+")


@dataclass(frozen=True)
class InferenceSettings:
    """Where and how to ask the model; ``token`` is kept out of ``repr`` so it is never printed."""

    endpoint: str | None
    model: str | None
    token: str | None = field(repr=False)
    timeout: float = 30.0
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    horizon: int = 5
    history: int = 60
    parallel: int = 4
    max_tokens: int = 128


def config(interval: int = 60, step: int = 60) -> dict[str, Any]:
    """The ``/config`` document (upstream's external forecaster's, with the canonical enum case)."""
    return {
        "name": "llm-forecast-scorer",
        "description": "A forecast of CPU usage by a language model (OpenAI-compatible completions API)",
        "source": {
            "type": "Prometheus",
            "host": PROMETHEUS_HOST,
            "path": "/api/v1/query_range",
            "params": {"query": CPU_QUERY, "range": 3600, "step": step},
        },
        "scoring": {
            "path": "/scoring",
            "params": {"name": "llm_forecast_score", "interval": interval},
        },
    }


def render_prompt(
    metric: Mapping[str, str], values: Sequence[float], step: int, horizon: int
) -> str:
    """The prompt for one series (``repr`` of floats: exact and short)."""
    labels = ", ".join(f"{k}={v}" for k, v in sorted(metric.items())) or "(no labels)"
    return PROMPT.render(
        labels=labels, values=[repr(v) for v in values], step=step, horizon=horizon
    )


def parse_forecast(text: str, horizon: int) -> list[float]:
    """The ``horizon`` numbers of a model's answer; ValueError says why the answer is unusable.

    Only the first non-empty line counts (a model may ramble on after it); it may be
    wrapped in ``[...]``; numbers are separated by commas or spaces.
    """
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if line.startswith("[") and line.endswith("]"):
        line = line[1:-1].strip()
    tokens = [token for token in _SEPARATORS.split(line) if token]
    if not tokens:
        raise ValueError("empty answer")
    values = []
    for token in tokens:
        try:
            values.append(float(token))
        except ValueError:
            raise ValueError(f"unparseable forecast {_excerpt(line)}") from None
    if len(values) != horizon:
        raise ValueError(f"{len(values)} values instead of {horizon} in {_excerpt(line)}")
    bad = [token for token, value in zip(tokens, values, strict=True) if not math.isfinite(value)]
    if bad:
        raise ValueError(f"non-finite value {bad[0]!r} in {_excerpt(line)}")
    return values


def _excerpt(text: str) -> str:
    return repr(text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "...")


def completion_text(body: bytes) -> str:
    """``choices[0].text`` of a completions response; ValueError when the shape is wrong."""
    try:
        document = json.loads(body)
        text = document["choices"][0]["text"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise ValueError("not a completions response (no choices[0].text)") from None
    if not isinstance(text, str):
        raise ValueError("choices[0].text is not a string")
    return text


def _completions_url(endpoint: str) -> str:
    return endpoint.rstrip("/") + "/completions"


def ask(client: httpx.Client, settings: InferenceSettings, prompt: str) -> str:
    """POST one completion request; return the answer's text or raise :class:`UpstreamError`."""
    assert settings.endpoint is not None and settings.model is not None
    url = _completions_url(settings.endpoint)
    request = {
        "model": settings.model,
        "prompt": prompt,
        "max_tokens": settings.max_tokens,
        "temperature": 0,
    }
    headers = {"Authorization": f"Bearer {settings.token}"} if settings.token else {}
    try:
        with client.stream("POST", url, json=request, headers=headers) as response:
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > settings.max_response_bytes:
                    raise UpstreamError(
                        HTTPStatus.BAD_GATEWAY,
                        f"inference: answer larger than {settings.max_response_bytes} bytes",
                    )
            status = response.status_code
    except httpx.TimeoutException:
        raise UpstreamError(
            HTTPStatus.GATEWAY_TIMEOUT,
            f"inference: {url} did not answer within {settings.timeout:g} s",
        ) from None
    except httpx.HTTPError as error:
        # The message names the URL and the cause (refused, unknown host), never headers.
        raise UpstreamError(
            HTTPStatus.SERVICE_UNAVAILABLE,
            f"inference: {url} unreachable: {type(error).__name__}: {error}",
        ) from None
    if status != 200:
        detail = bytes(body[:EXCERPT_CHARS]).decode("utf-8", "replace").strip()
        hint = " (check INFERENCE_TOKEN)" if status in (401, 403) else ""
        raise UpstreamError(
            HTTPStatus.BAD_GATEWAY, f"inference: {url} answered {status}{hint}: {detail}"
        )
    try:
        return completion_text(bytes(body))
    except ValueError as error:
        raise UpstreamError(HTTPStatus.BAD_GATEWAY, f"inference: {error}") from None


def scorer(settings: InferenceSettings, default_step: int) -> ScoreFunction:
    """The scoring function: one completion request per series with finite values."""

    def forecast(
        client: httpx.Client,
        index: int,
        metric: Mapping[str, str],
        points: list[tuple[float, float]],
    ) -> float:
        values = [value for _, value in points]
        # The step the agent actually queried (the spec may override /config's): the
        # smallest gap, as dropped NaN points widen some gaps.
        gaps = [b[0] - a[0] for a, b in itertools.pairwise(points) if b[0] > a[0]]
        step = round(min(gaps)) if gaps else default_step
        text = ask(client, settings, render_prompt(metric, values, step, settings.horizon))
        try:
            predicted = parse_forecast(text, settings.horizon)
        except ValueError as error:
            raise UpstreamError(
                HTTPStatus.BAD_GATEWAY, f"model answer for series {index}: {error}"
            ) from None
        return normalized_score(values[-1], math.fsum(predicted) / len(predicted))

    def score(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
        work = []
        for index, series in enumerate(data):
            points = sorted(finite_values(series))[-settings.history :]
            if points:
                work.append((index, series.get("metric", {}), points))
        if not work:
            return []  # nothing to forecast: the model is not needed
        if settings.endpoint is None or settings.model is None:
            missing = ENDPOINT_ENV if settings.endpoint is None else MODEL_ENV
            raise UpstreamError(HTTPStatus.SERVICE_UNAVAILABLE, f"inference: {missing} is not set")
        meta = f"llm-forecast-by-{settings.model}"
        timeout = httpx.Timeout(settings.timeout)
        with (
            httpx.Client(timeout=timeout, follow_redirects=False) as client,
            ThreadPoolExecutor(max_workers=settings.parallel) as pool,
        ):
            scores = list(pool.map(lambda item: forecast(client, *item), work))
        return [
            {"metric": {**metric, "meta": meta}, "score": value}
            for (_, metric, _), value in zip(work, scores, strict=True)
        ]

    return score


def check_endpoint(endpoint: str) -> str:
    """``endpoint`` when it is an absolute http(s) URL without credentials; else ValueError."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("must be an absolute http:// or https:// URL")
    if parts.username or parts.password:
        raise ValueError("must not hold credentials (use INFERENCE_TOKEN)")
    return endpoint


# Options that count something, each at least 1; InferenceSettings has fields of these names.
_COUNTS = ("horizon", "history", "parallel", "max_tokens", "max_response_bytes")


def settings_from(args: argparse.Namespace, environ: Mapping[str, str]) -> InferenceSettings:
    """The inference settings: options first, then the environment."""
    endpoint = _endpoint(args, environ)
    token = _inference_token(args, environ)
    require_at_least_one(args, _COUNTS)
    if not args.inference_timeout > 0:
        raise SystemExit("error: --inference-timeout must be above 0")
    return InferenceSettings(
        endpoint=endpoint,
        model=args.model or environ.get(MODEL_ENV) or None,
        token=token,
        timeout=args.inference_timeout,
        **{name: getattr(args, name) for name in _COUNTS},
    )


def _endpoint(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    endpoint = args.inference_endpoint or environ.get(ENDPOINT_ENV) or None
    if endpoint is not None:
        try:
            check_endpoint(endpoint)
        except ValueError as error:
            raise SystemExit(f"error: {ENDPOINT_ENV}: {error}") from None
    return endpoint


def _inference_token(args: argparse.Namespace, environ: Mapping[str, str]) -> str | None:
    if args.inference_token_file is None:
        return environ.get(INFERENCE_TOKEN_ENV) or None
    with open(args.inference_token_file, encoding="utf-8") as handle:
        return handle.read().strip() or None


def parser() -> argparse.ArgumentParser:
    """The sample's options (the shared ones plus the model's)."""
    result = base_parser("The LLM forecast scorer (OpenAI-compatible completions API).")
    add = result.add_argument
    add("--inference-endpoint", default=None, help=f"API base URL (default ${ENDPOINT_ENV})")
    add("--model", default=None, help=f"model name (default ${MODEL_ENV})")
    add(
        "--inference-token-file",
        default=None,
        metavar="PATH",
        help=f"bearer token for the API, read from PATH (default ${INFERENCE_TOKEN_ENV})",
    )
    add("--inference-timeout", type=float, default=30.0, help="seconds per request (default 30)")
    add(
        "--max-response-bytes",
        type=int,
        default=DEFAULT_MAX_RESPONSE_BYTES,
        help="largest accepted answer of the API (default 1 MiB)",
    )
    add("--horizon", type=int, default=5, help="values to forecast per series (default 5)")
    add("--history", type=int, default=60, help="last values sent per series (default 60)")
    add("--parallel", type=int, default=4, help="concurrent requests to the API (default 4)")
    add("--max-tokens", type=int, default=128, help="max_tokens of each request (default 128)")
    add_schedule_options(result, interval=60, step=60)
    return result


def build(args: argparse.Namespace, environ: Mapping[str, str] | None = None) -> ScoringApp:
    """The app serving ``/config`` and ``/scoring``."""
    settings = settings_from(args, os.environ if environ is None else environ)
    return ScoringApp(
        documents={"/config": config(args.interval, args.step)},
        scorers={"/scoring": scorer(settings, args.step)},
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    return run_main(build, parser(), argv)


if __name__ == "__main__":
    raise SystemExit(main())
