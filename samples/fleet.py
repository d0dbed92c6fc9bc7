"""Every sample the example fleet uses, on 127.0.0.1, for ``dsf-compile sync`` and tests.

- ``running_fleet()``: a context manager yielding ``{"<fleet host>:<port>": "127.0.0.1:<port>"}``.
- ``python -m samples.fleet [--root DIR] sync [NAME ...] [--strict]``: starts the samples,
  runs ``dsf-compile sync`` with one ``--resolve`` per service, stops them.
- ``python -m samples.fleet serve``: runs them until Ctrl-C, printing the mapping.

The servers run in threads of this process. The ``llm-forecast`` service
(``samples.llm_forecast_scorer``) requires a bearer token on scoring:
``$LLM_FORECAST_TOKEN``, or a fake development value. Its ``/config`` needs no model; its
scoring asks the model at ``$INFERENCE_ENDPOINT`` (``$MODEL_NAME``, ``$INFERENCE_TOKEN``)
and answers 503 when that is not set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from . import llm_forecast_scorer, prediction_scorer, sample_scorer, static_scorer
from .service import RunningServer, ScoringApp

LLM_FORECAST_TOKEN_ENV = "LLM_FORECAST_TOKEN"
# Not a credential: a placeholder so the auth path is exercised on a workstation.
DEV_TOKEN = "dev-only-fake-token"


@dataclass(frozen=True)
class FleetService:
    """One Scoring API of the example fleet: where ``scorers/`` says it is, and what serves it."""

    address: str  # host:port as written in the fleet's configURLs
    build: Callable[[Mapping[str, str]], ScoringApp]


def _prediction(args: Sequence[str]) -> ScoringApp:
    return prediction_scorer.build(prediction_scorer.parser().parse_args(list(args)))


def _llm_forecast(environ: Mapping[str, str]) -> ScoringApp:
    # /config needs no model; scoring asks $INFERENCE_ENDPOINT when set (503 otherwise).
    app = llm_forecast_scorer.build(llm_forecast_scorer.parser().parse_args([]), environ)
    app.token = environ.get(LLM_FORECAST_TOKEN_ENV) or DEV_TOKEN
    return app


SERVICES: tuple[FleetService, ...] = (
    FleetService("llm-forecast.scoring.example.net:8000", _llm_forecast),
    FleetService(
        "sample-scorer.dynamic-scoring.svc:8000",
        lambda _: sample_scorer.build(argparse.Namespace()),
    ),
    FleetService("simple-prediction-scorer.dynamic-scoring.svc:8000", lambda _: _prediction([])),
    FleetService(
        "static-scorer.dynamic-scoring.svc:8000",
        lambda _: static_scorer.build(argparse.Namespace()),
    ),
)


@contextlib.contextmanager
def running_fleet(environ: Mapping[str, str] | None = None) -> Iterator[dict[str, str]]:
    """Start every fleet service on 127.0.0.1 (free ports); yield fleet address -> loopback address."""
    env = os.environ if environ is None else environ
    with contextlib.ExitStack() as stack:
        mapping = {}
        for service in SERVICES:
            server = stack.enter_context(RunningServer(service.build(env)))
            mapping[service.address] = server.address
        yield mapping


def resolve_flags(mapping: Mapping[str, str]) -> list[str]:
    """``--resolve HOST:PORT:ADDR:PORT`` flags for ``dsf-compile sync``, sorted."""
    return [f"--resolve={fleet}:{local}" for fleet, local in sorted(mapping.items())]


def _split_globals(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """Move ``--root``/``--format`` (global dsf-compile options) in front of ``sync``."""
    global_args: list[str] = []
    rest: list[str] = []
    items = iter(args)
    for arg in items:
        if arg in ("--root", "--format"):
            global_args += [arg, next(items, "")]
        elif arg.startswith(("--root=", "--format=")):
            global_args.append(arg)
        else:
            rest.append(arg)
    return global_args, rest


def sync(args: Sequence[str], root: str | None = None) -> int:
    """Run ``dsf-compile [--root ROOT] sync ARGS`` against the fleet on loopback; return its exit code."""
    from dsf_compile.commands.cli import run

    global_args, rest = _split_globals(args)
    if root is not None:
        global_args = ["--root", root, *global_args]
    with running_fleet() as mapping:
        return run([*global_args, "sync", *resolve_flags(mapping), *rest], sys.stdout, sys.stderr)


def serve() -> int:
    """Run the fleet until Ctrl-C, printing the mapping and the matching ``--resolve`` flags."""
    stop = threading.Event()
    with running_fleet() as mapping:
        for fleet, local in sorted(mapping.items()):
            print(f"{fleet} -> {local}", flush=True)
        print(" ".join(resolve_flags(mapping)), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point: ``sync [dsf-compile sync args...]`` or ``serve``."""
    parser = argparse.ArgumentParser(
        prog="python -m samples.fleet", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--root", default=None, help="sync: the fleet repository (dsf-compile --root)"
    )
    parser.add_argument("command", choices=("sync", "serve"))
    parser.add_argument(
        "args", nargs=argparse.REMAINDER, help="sync: passed on to dsf-compile sync"
    )
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve()
    return sync(args.args, root=args.root)


if __name__ == "__main__":
    raise SystemExit(main())
