"""Command line and environment → :class:`RuntimeSettings` (every flag has a ``DSF_*`` variable)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from agent.score import DEFAULT_MAX_RESULTS
from dsf_contract import __version__
from dsf_contract import agent_cli as cli
from dsf_contract.agent_cli import AGGREGATIONS, PROGRAM, AgentOption, Aggregation
from dsf_contract.compliance import reserved_claim
from dsf_contract.fields import DNS_SUBDOMAIN_RE, is_dns_label
from dsf_contract.summary import DEFAULT_AGENT_NAMESPACE
from dsf_transport.connect_to import ResolveError, parse_connect_to


@dataclass(frozen=True)
class RuntimeSettings:
    """Everything the agent is told at start; immutable for the life of the process."""

    cluster_name: str
    config_file: Path | None = None
    secrets_dir: Path | None = None
    hub_kubeconfig: Path | None = None
    metrics_host: str = "0.0.0.0"
    metrics_port: int = cli.METRICS_PORT
    log_level: str = "info"
    log_format: str = "text"
    namespace: str = DEFAULT_AGENT_NAMESPACE
    aggregations: Mapping[str, Aggregation] = field(default_factory=dict)
    request_timeout: float = 30.0
    max_response_bytes: int = cli.DEFAULT_MAX_RESPONSE_BYTES
    max_scoring_response_bytes: int = cli.DEFAULT_MAX_SCORING_RESPONSE_BYTES
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
    #: the ClusterClaim kept from the Policies' compliance (agent.md); None: off
    compliance_claim: str | None = None
    compliance_poll_seconds: float = 30.0
    compliance_stable_seconds: float = 120.0

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


def _seconds_up_to(most: int) -> Callable[[str], float]:
    """A parser of a number of seconds from 0 to ``most``."""

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {value!r}") from None
        if not 0 <= number <= most:
            raise argparse.ArgumentTypeError(f"must be 0 to {most} seconds, got {value!r}")
        return number

    return parse


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class Flag:
    """How ``dsf-agent`` parses one option of :data:`dsf_contract.agent_cli.OPTIONS`."""

    help: str
    type: Callable[[str], Any] | None = None
    #: the default as the command line would spell it (``type`` converts it)
    default: str | None = None
    choices: tuple[str, ...] | None = None
    #: required unless its variable is set
    required: bool = False
    #: a repeatable option's metavar; its variable holds values separated by commas or blanks
    repeated: str | None = None


#: Each option's help, type and default: ``dsf-agent --help`` lists them in
#: :data:`~dsf_contract.agent_cli.OPTIONS`' order.
FLAGS: Mapping[AgentOption, Flag] = {
    cli.CLUSTER_NAME: Flag("this managed cluster's name (its namespace on the hub)", required=True),
    cli.CONFIG_FILE: Flag(
        "read the summaries from this file (JSON list or ConfigMap YAML) instead of the API",
        type=Path,
    ),
    cli.SECRETS_DIR: Flag("read Secrets from DIR/<secret>/<key> instead of the API", type=Path),
    cli.HUB_KUBECONFIG: Flag(
        "kubeconfig of the hub; without it scores go to /metrics only", type=Path
    ),
    cli.METRICS_BIND: Flag(
        f"HOST:PORT of /metrics, /healthz and /readyz (default {cli.DEFAULT_METRICS_BIND})",
        type=_bind,
        default=cli.DEFAULT_METRICS_BIND,
    ),
    cli.LOG_LEVEL: Flag(
        "debug, info, warning or error (default info)",
        type=str.lower,
        choices=cli.LOG_LEVELS,
        default="info",
    ),
    cli.LOG_FORMAT: Flag(
        "one line per event, as key=value text or as JSON (default text)",
        type=str.lower,
        choices=cli.LOG_FORMATS,
        default="text",
    ),
    cli.NAMESPACE: Flag(
        f"namespace of the ConfigMap and Secrets (default {DEFAULT_AGENT_NAMESPACE})",
        default=DEFAULT_AGENT_NAMESPACE,
    ),
    cli.AGGREGATE: Flag(
        "fold results with the same dimension by last (default), max, min, avg or sum; repeatable",
        type=_aggregate,
        repeated="SCORE_NAME=FUNCTION",
    ),
    cli.REQUEST_TIMEOUT: Flag(
        "seconds per HTTP request (default 30)", type=_positive_float, default="30"
    ),
    cli.MAX_RESPONSE_BYTES: Flag(
        "largest Prometheus response accepted (default 64 MiB)",
        type=_positive_int,
        default=str(cli.DEFAULT_MAX_RESPONSE_BYTES),
    ),
    cli.MAX_SCORING_RESPONSE_BYTES: Flag(
        "largest Scoring API response accepted (default 16 MiB)",
        type=_positive_int,
        default=str(cli.DEFAULT_MAX_SCORING_RESPONSE_BYTES),
    ),
    cli.MAX_RESULTS: Flag(
        "most results one Scoring API answer may hold; a larger answer fails the cycle "
        f"(reason too_many_results; default {DEFAULT_MAX_RESULTS})",
        type=_positive_int,
        default=str(DEFAULT_MAX_RESULTS),
    ),
    cli.HUB_SPREAD: Flag(
        "seconds over which the first AddOnPlacementScore write of each scorer after start "
        "is spread (at most half its interval; 0: none), so that agents restarting together do "
        "not all reach the hub in the same second (default 10)",
        type=_seconds_up_to(3600),
        default="10",
    ),
    cli.RESOLVE: Flag(
        "connect to ADDR[:PORT] for HOST:PORT while keeping URLs, Host headers and TLS "
        "names, like dsf-compile sync --resolve; repeatable",
        repeated="HOST:PORT:ADDR[:PORT]",
    ),
    cli.MEMORY_LIMIT: Flag(
        "memory (bytes) to budget Prometheus answers against (default: the container's "
        "cgroup limit, else unbounded)",
        type=_positive_int,
    ),
    cli.COMPLIANCE_CLAIM: Flag(
        "keep this ClusterClaim at empty, noncompliant or compliant from the Policies of the "
        "namespace named after the cluster (upstream's policy watcher; default: off)",
    ),
    cli.COMPLIANCE_POLL_SECONDS: Flag(
        "seconds between two looks at the Policies at most (default 30)",
        type=_positive_float,
        default="30",
    ),
    cli.COMPLIANCE_STABLE_SECONDS: Flag(
        "seconds the Policies stay compliant before the claim says so (default 120)",
        type=_seconds_up_to(86400),
        default="120",
    ),
}


def _add_option(
    parser: argparse.ArgumentParser, environ: Mapping[str, str], option: AgentOption
) -> None:
    """Add ``option`` as :data:`FLAGS` says; its variable, when set and not empty, gives
    the default, so a flag overrides its variable."""
    flag = FLAGS[option]
    kwargs: dict[str, Any] = {"type": flag.type} if flag.type is not None else {}
    if flag.repeated is not None:
        # append's default is not passed through ``type``: the variable's values are here
        values = (_env(environ, option.env) or "").replace(",", " ").split()
        parser.add_argument(
            option.flag,
            action="append",
            default=[flag.type(v) for v in values] if flag.type is not None else values,
            metavar=flag.repeated,
            help=f"{flag.help} [{option.env}, comma-separated]",
            **kwargs,
        )
        return
    if flag.choices is not None:
        kwargs["choices"] = flag.choices
    if flag.required:
        kwargs["required"] = _env(environ, option.env) is None
    parser.add_argument(
        option.flag,
        default=_env(environ, option.env) or flag.default,
        help=f"{flag.help} [{option.env}]",
        **kwargs,
    )


def build_parser(environ: Mapping[str, str]) -> argparse.ArgumentParser:
    """The argument parser: one argument per option of :data:`FLAGS`, defaults from ``environ``."""
    parser = argparse.ArgumentParser(
        prog=PROGRAM,
        description="Run the dynamic scorers of one managed cluster and publish their scores.",
    )
    parser.add_argument("--version", action="version", version=f"{PROGRAM} {__version__}")
    for option in cli.OPTIONS:
        _add_option(parser, environ, option)
    return parser


def parse_settings(
    argv: Sequence[str], environ: Mapping[str, str] | None = None
) -> RuntimeSettings:
    """Parse the command line; exits with status 2 and a usage message on a bad flag."""
    env = os.environ if environ is None else environ
    parser = build_parser(env)
    args = parser.parse_args(list(argv))
    if not is_dns_label(args.cluster_name):
        parser.error(
            f"--cluster-name {args.cluster_name!r} must be a DNS label (it is a hub namespace)"
        )
    if not is_dns_label(args.namespace):
        parser.error(f"--namespace {args.namespace!r} must be a DNS label")
    claim = args.compliance_claim
    if claim is not None and (len(claim) > 253 or not DNS_SUBDOMAIN_RE.fullmatch(claim)):
        parser.error(f"--compliance-claim {args.compliance_claim!r} must be a DNS subdomain")
    if claim is not None and (why := reserved_claim(claim)) is not None:
        parser.error(f"--compliance-claim: {why}")
    host, port = args.metrics_bind
    try:
        connect_to = parse_connect_to(args.resolve)
    except ResolveError as err:
        parser.error(str(err))
    return RuntimeSettings(
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
        compliance_claim=args.compliance_claim,
        compliance_poll_seconds=args.compliance_poll_seconds,
        compliance_stable_seconds=args.compliance_stable_seconds,
    )
