"""Command line and environment → :class:`Settings` (every flag has a ``DSF_*`` variable)."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from agent.aggregate import AGGREGATIONS, Aggregation
from agent.score import DEFAULT_MAX_RESULTS
from dsf_contract.connect_to import ResolveError, parse_connect_to
from dsf_contract.summary import DEFAULT_AGENT_NAMESPACE

LOG_LEVELS = ("debug", "info", "warning", "error")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class Settings:
    """Everything the agent is told at start; immutable for the life of the process."""

    cluster_name: str
    config_file: Path | None = None
    secrets_dir: Path | None = None
    hub_kubeconfig: Path | None = None
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 8080
    log_level: str = "info"
    log_format: str = "text"
    namespace: str = DEFAULT_AGENT_NAMESPACE
    aggregations: Mapping[str, Aggregation] = field(default_factory=dict)
    request_timeout: float = 30.0
    max_response_bytes: int = 64 * 1024 * 1024
    max_scoring_response_bytes: int = 16 * 1024 * 1024
    #: results one Scoring API answer may hold; a larger answer fails the cycle
    max_results: int = DEFAULT_MAX_RESULTS
    #: the container's memory limit (bytes) the answers are budgeted against; None: the
    #: cgroup's, if any
    memory_limit: int | None = None
    config_poll_seconds: float = 1.0
    #: the first hub write of each object after start waits up to this long (at most half
    #: the scorer's interval), spread by a hash of the cluster and score names
    hub_spread: float = 10.0
    hub_conflict_retries: int = 5
    #: ``(host, port)`` as the summaries name it → the address to connect to (``--resolve``).
    connect_to: Mapping[tuple[str, int], tuple[str, int]] = field(default_factory=dict)

    def aggregation_for(self, score_name: str) -> Aggregation:
        """How duplicate dimensions of ``score_name`` are folded (upstream: ``last``)."""
        return self.aggregations.get(score_name, "last")


def _env(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    return value if value else None


def _bind(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {value!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


def _aggregate(value: str) -> tuple[str, Aggregation]:
    name, sep, how = value.rpartition("=")
    if not sep or not name or how not in AGGREGATIONS:
        raise argparse.ArgumentTypeError(
            f"expected SCORE_NAME=FUNCTION with FUNCTION one of {', '.join(AGGREGATIONS)}, got {value!r}"
        )
    return name, cast(Aggregation, how)


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not number > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value!r}")
    return number


def _spread(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
    if not 0 <= number <= 3600:
        raise argparse.ArgumentTypeError(f"must be 0 to 3600 seconds, got {value!r}")
    return number


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return int(value)


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The argument parser; defaults come from ``environ`` so flags override variables."""
    parser = argparse.ArgumentParser(
        prog="dsf-agent",
        description="Run the dynamic scorers of one managed cluster and publish their scores.",
    )
    cluster = _env(environ, "DSF_CLUSTER_NAME")
    parser.add_argument(
        "--cluster-name",
        default=cluster,
        required=cluster is None,
        help="this managed cluster's name (its namespace on the hub) [DSF_CLUSTER_NAME]",
    )
    parser.add_argument(
        "--config-file",
        type=Path,
        default=_env(environ, "DSF_CONFIG_FILE"),
        help="read the summaries from this file (JSON list or ConfigMap YAML) instead of the API "
        "[DSF_CONFIG_FILE]",
    )
    parser.add_argument(
        "--secrets-dir",
        type=Path,
        default=_env(environ, "DSF_SECRETS_DIR"),
        help="read Secrets from DIR/<secret>/<key> instead of the API [DSF_SECRETS_DIR]",
    )
    parser.add_argument(
        "--hub-kubeconfig",
        type=Path,
        default=_env(environ, "DSF_HUB_KUBECONFIG"),
        help="kubeconfig of the hub; without it scores go to /metrics only [DSF_HUB_KUBECONFIG]",
    )
    parser.add_argument(
        "--metrics-bind",
        type=_bind,
        default=_env(environ, "DSF_METRICS_BIND") or "0.0.0.0:8080",
        help="HOST:PORT of /metrics, /healthz and /readyz (default 0.0.0.0:8080) [DSF_METRICS_BIND]",
    )
    parser.add_argument(
        "--log-level",
        type=str.lower,
        choices=LOG_LEVELS,
        default=(_env(environ, "DSF_LOG_LEVEL") or "info").lower(),
        help="debug, info, warning or error (default info) [DSF_LOG_LEVEL]",
    )
    parser.add_argument(
        "--log-format",
        type=str.lower,
        choices=("text", "json"),
        default=(_env(environ, "DSF_LOG_FORMAT") or "text").lower(),
        help="one line per event, as key=value text or as JSON (default text) [DSF_LOG_FORMAT]",
    )
    parser.add_argument(
        "--namespace",
        default=_env(environ, "DSF_NAMESPACE") or DEFAULT_AGENT_NAMESPACE,
        help=f"namespace of the ConfigMap and Secrets (default {DEFAULT_AGENT_NAMESPACE}) [DSF_NAMESPACE]",
    )
    parser.add_argument(
        "--aggregate",
        type=_aggregate,
        action="append",
        default=[
            _aggregate(v) for v in (_env(environ, "DSF_AGGREGATE") or "").replace(",", " ").split()
        ],
        metavar="SCORE_NAME=FUNCTION",
        help="fold results with the same dimension by last (default), max, min, avg or sum; "
        "repeatable [DSF_AGGREGATE, comma-separated]",
    )
    parser.add_argument(
        "--request-timeout",
        type=_positive_float,
        default=_env(environ, "DSF_REQUEST_TIMEOUT") or "30",
        help="seconds per HTTP request (default 30) [DSF_REQUEST_TIMEOUT]",
    )
    parser.add_argument(
        "--max-response-bytes",
        type=_positive_int,
        default=_env(environ, "DSF_MAX_RESPONSE_BYTES") or str(64 * 1024 * 1024),
        help="largest Prometheus response accepted (default 64 MiB) [DSF_MAX_RESPONSE_BYTES]",
    )
    parser.add_argument(
        "--max-scoring-response-bytes",
        type=_positive_int,
        default=_env(environ, "DSF_MAX_SCORING_RESPONSE_BYTES") or str(16 * 1024 * 1024),
        help="largest Scoring API response accepted (default 16 MiB) [DSF_MAX_SCORING_RESPONSE_BYTES]",
    )
    parser.add_argument(
        "--max-results",
        type=_positive_int,
        default=_env(environ, "DSF_MAX_RESULTS") or str(DEFAULT_MAX_RESULTS),
        help="most results one Scoring API answer may hold; a larger answer fails the cycle "
        f"(reason too_many_results; default {DEFAULT_MAX_RESULTS}) [DSF_MAX_RESULTS]",
    )
    parser.add_argument(
        "--hub-spread",
        type=_spread,
        default=_env(environ, "DSF_HUB_SPREAD") or "10",
        help="seconds over which the first AddOnPlacementScore write of each scorer after start "
        "is spread (at most half its interval; 0: none), so that agents restarting together do "
        "not all reach the hub in the same second (default 10) [DSF_HUB_SPREAD]",
    )
    parser.add_argument(
        "--resolve",
        action="append",
        default=(_env(environ, "DSF_RESOLVE") or "").replace(",", " ").split(),
        metavar="HOST:PORT:ADDR[:PORT]",
        help="connect to ADDR[:PORT] for HOST:PORT while keeping URLs, Host headers and TLS "
        "names, like dsf-compile sync --resolve; repeatable [DSF_RESOLVE, comma-separated]",
    )
    parser.add_argument(
        "--memory-limit",
        type=_positive_int,
        default=_env(environ, "DSF_MEMORY_LIMIT"),
        help="memory (bytes) to budget Prometheus answers against (default: the container's "
        "cgroup limit, else unbounded) [DSF_MEMORY_LIMIT]",
    )
    return parser


def parse_settings(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> Settings:
    """Parse the command line; exits with status 2 and a usage message on a bad flag."""
    env = os.environ if environ is None else environ
    parser = build_parser(env)
    args = parser.parse_args(list(argv))
    if not _DNS_LABEL.match(args.cluster_name):
        parser.error(
            f"--cluster-name {args.cluster_name!r} must be a DNS label (it is a hub namespace)"
        )
    if not _DNS_LABEL.match(args.namespace):
        parser.error(f"--namespace {args.namespace!r} must be a DNS label")
    host, port = args.metrics_bind
    try:
        connect_to = parse_connect_to(args.resolve)
    except ResolveError as err:
        parser.error(str(err))
    return Settings(
        cluster_name=args.cluster_name,
        config_file=args.config_file,
        secrets_dir=args.secrets_dir,
        hub_kubeconfig=args.hub_kubeconfig,
        metrics_host=host,
        metrics_port=port,
        log_level=args.log_level,
        log_format=args.log_format,
        namespace=args.namespace,
        aggregations=dict(args.aggregate),
        request_timeout=args.request_timeout,
        max_response_bytes=args.max_response_bytes,
        max_scoring_response_bytes=args.max_scoring_response_bytes,
        max_results=args.max_results,
        hub_spread=args.hub_spread,
        connect_to=connect_to,
        memory_limit=args.memory_limit,
    )
