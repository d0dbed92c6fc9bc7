"""The command line every reference Scoring API shares.

``--host``, ``--port`` (``0`` picks a free port; the actual ``host:port`` is the first line
of stdout), ``--token-file`` (or ``$SCORER_TOKEN``), ``--max-body-bytes`` and ``--verbose``;
a sample adds its own options to :func:`base_parser` and hands :func:`run_main` the function
that builds its :class:`~samples.service.ScoringApp`.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence

from .service import DEFAULT_MAX_BODY_BYTES, QuietServer, ScoringApp, listen_address, make_handler

TOKEN_ENV = "SCORER_TOKEN"


def read_token(token_file: str | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The bearer token from ``--token-file`` (stripped) or ``$SCORER_TOKEN``; None when unset."""
    if token_file is not None:
        with open(token_file, encoding="utf-8") as handle:
            token = handle.read().strip()
        if not token:
            raise SystemExit(f"error: {token_file} is empty")
        return token
    return environ.get(TOKEN_ENV) or None


def base_parser(description: str) -> argparse.ArgumentParser:
    """The options every sample takes; a sample adds its own before calling :func:`serve`."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=8000, help="port; 0 picks a free one (default 8000)"
    )
    parser.add_argument(
        "--token-file",
        default=None,
        metavar="PATH",
        help=f"require 'Authorization: Bearer <token>' on scoring, token read from PATH (or ${TOKEN_ENV})",
    )
    parser.add_argument(
        "--max-body-bytes",
        type=int,
        default=DEFAULT_MAX_BODY_BYTES,
        help="largest accepted request body",
    )
    parser.add_argument("--verbose", action="store_true", help="log one line per request on stderr")
    return parser


def add_schedule_options(parser: argparse.ArgumentParser, *, interval: int, step: int) -> None:
    """``--interval`` and ``--step``: the scoring interval and query step ``/config`` announces."""
    parser.add_argument(
        "--interval",
        type=int,
        default=interval,
        help="scoring interval in /config, seconds (default %(default)s)",
    )
    parser.add_argument(
        "--step",
        type=int,
        default=step,
        help="query step in /config, seconds (default %(default)s)",
    )


def require_at_least_one(args: argparse.Namespace, names: Iterable[str]) -> None:
    """SystemExit naming the first option of ``names`` (attribute names) set below 1."""
    for name in names:
        if getattr(args, name) < 1:
            raise SystemExit(f"error: --{name.replace('_', '-')} must be at least 1")


def serve(app: ScoringApp, args: argparse.Namespace) -> int:
    """Serve ``app`` until interrupted; print ``host:port`` first so callers can find it."""
    app.token = read_token(args.token_file)
    app.max_body_bytes = args.max_body_bytes
    server = QuietServer((args.host, args.port), make_handler(app, verbose=args.verbose))
    print(listen_address(server), flush=True)
    auth = "bearer token required" if app.token else "no auth"
    print(
        f"serving {', '.join(sorted([*app.documents, *app.scorers, *app.actions]))} ({auth}); Ctrl-C stops",
        file=sys.stderr,
    )
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def run_main(
    build: Callable[[argparse.Namespace], ScoringApp],
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None = None,
) -> int:
    """Parse ``argv``, build the sample's app and serve it."""
    args = parser.parse_args(argv)
    return serve(build(args), args)
