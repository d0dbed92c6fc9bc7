"""The agent's command line is the contract's (``dsf_contract.agent_cli``): the parser
offers exactly its options, and what the compiler renders and the image sets uses them."""

from __future__ import annotations

import re

from agent.settings import FLAGS, build_parser, parse_settings
from dsf_contract import agent_cli
from tests.agent.kube_rbac import addon_template
from tests.agent.kubelet import processed_manifests
from tests.fleet_repo import EXAMPLE_FLEET, REPO_ROOT

CLUSTER = "worker01"


def test_the_parser_offers_exactly_the_contract_options() -> None:
    parser = build_parser({})
    flags = {
        flag
        for action in parser._actions
        for flag in action.option_strings
        if flag not in ("-h", "--help", "--version")  # argparse's own, no variable
    }
    assert flags == {option.flag for option in agent_cli.OPTIONS}
    usage = parser.format_help()
    for option in agent_cli.OPTIONS:
        assert f"[{option.env}" in usage, option


def test_the_flag_table_describes_exactly_the_contract_options() -> None:
    assert list(FLAGS) == list(agent_cli.OPTIONS)  # --help lists them in the contract's order


def test_every_variable_sets_its_option() -> None:
    values = {
        agent_cli.CLUSTER_NAME: ("cluster-a", "cluster_name", "cluster-a"),
        agent_cli.NAMESPACE: ("team-b", "namespace", "team-b"),
        agent_cli.METRICS_BIND: ("127.0.0.1:9100", "metrics_port", 9100),
        agent_cli.LOG_LEVEL: ("DEBUG", "log_level", "debug"),
        agent_cli.LOG_FORMAT: ("json", "log_format", "json"),
        agent_cli.REQUEST_TIMEOUT: ("7", "request_timeout", 7.0),
        agent_cli.MAX_RESPONSE_BYTES: ("4096", "max_response_bytes", 4096),
        agent_cli.MAX_SCORING_RESPONSE_BYTES: ("2048", "max_scoring_response_bytes", 2048),
        agent_cli.MEMORY_LIMIT: ("1000000", "memory_limit", 1_000_000),
        agent_cli.MAX_RESULTS: ("25", "max_results", 25),
        agent_cli.HUB_SPREAD: ("2.5", "hub_spread", 2.5),
    }
    for option, (text, attribute, expected) in values.items():
        environ = {agent_cli.CLUSTER_NAME.env: "c1", option.env: text}
        assert getattr(parse_settings([], environ), attribute) == expected, option
        # and the flag wins over the variable
        flagged = parse_settings([option.arg(text)], {agent_cli.CLUSTER_NAME.env: "c1"})
        assert getattr(flagged, attribute) == expected, option


def test_the_rendered_deployment_speaks_the_contract() -> None:
    template = addon_template(EXAMPLE_FLEET / "rendered")
    (deployment,) = [m for m in processed_manifests(template, CLUSTER) if m["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    known = {option.flag for option in agent_cli.OPTIONS}
    assert {arg.partition("=")[0] for arg in container["args"]} <= known
    variables = {option.env for option in agent_cli.OPTIONS}
    assert {e["name"] for e in container["env"] if e["name"].startswith("DSF_")} <= variables
    assert container["ports"][0]["containerPort"] == agent_cli.METRICS_PORT
    settings = parse_settings(container["args"], {})
    assert (settings.cluster_name, settings.metrics_port) == (CLUSTER, agent_cli.METRICS_PORT)


def test_the_image_sets_contract_variables_and_exposes_the_metrics_port() -> None:
    text = (REPO_ROOT / "agent" / "Containerfile").read_text()
    variables = set(re.findall(r"\b(DSF_[A-Z_]+)=", text))
    assert variables and variables <= {option.env for option in agent_cli.OPTIONS}
    assert f"DSF_METRICS_BIND={agent_cli.DEFAULT_METRICS_BIND}" in text
    assert f"EXPOSE {agent_cli.METRICS_PORT}" in text
