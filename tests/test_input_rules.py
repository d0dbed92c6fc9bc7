"""The Kubernetes rules inputs are held to: what they accept as well as what they refuse.

The bad-input corpus (``test_bad_inputs.py``) shows one located error per rule; this
checks each rule's edges, so that a valid fleet is never refused.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.validate import validate_settings
from dsf_contract.bounded_yaml import parse_yaml
from dsf_contract.fields import check_label_key, check_label_value
from dsf_transport.connect_to import parse_resolve_entry


@pytest.mark.parametrize(
    "key",
    [
        "gpu",
        "a",
        "app.kubernetes.io/name",
        "Team_Lead.v2",
        "example.com/" + "n" * 63,
        "p" * 63 + "." + "q" * 63 + "/x",
        "cluster.open-cluster-management.io/clusterset",
    ],
)
def test_valid_label_keys(key: str) -> None:
    assert check_label_key(key) == key


@pytest.mark.parametrize(
    "key",
    [
        "",
        "team a",
        "-gpu",
        "gpu_",
        "n" * 64,
        "Example.com/name",
        "/name",
        "example.com/",
        "a/b/c",
        "owner:team",
        "p" * 254 + "/x",
        "gpu\n",
        "example.com\n/gpu",
    ],
)
def test_invalid_label_keys(key: str) -> None:
    with pytest.raises(ValueError, match="key"):
        check_label_key(key)


@pytest.mark.parametrize("value", ["", "true", "eu-west-1", "A.b_c-9", "v" * 63])
def test_valid_label_values(value: str) -> None:
    assert check_label_value(value) == value


@pytest.mark.parametrize("value", ["-x", "x-", "with space", "a/b", "v" * 64, "ü", "true\n"])
def test_invalid_label_values(value: str) -> None:
    with pytest.raises(ValueError, match="label value"):
        check_label_value(value)


def _settings(data: dict[str, Any]) -> Settings:
    return Settings.model_validate(data)


@pytest.mark.parametrize("quantity", ["0", "100m", "1.5", "256Mi", "2Gi", "1e3", "+1", ".5"])
def test_resource_quantities_kubernetes_accepts(quantity: str) -> None:
    settings = _settings({"agent": {"resources": {"requests": {"cpu": quantity}}}})
    requests = settings.agent.resources.requests
    assert requests is not None and requests.cpu == quantity


@pytest.mark.parametrize("quantity", ["lots", "-5Gi", "2 Gi", "1.5.2", "5gb", ""])
def test_resource_quantities_kubernetes_refuses(quantity: str) -> None:
    with pytest.raises(ValidationError, match="quantity"):
        _settings({"agent": {"resources": {"limits": {"memory": quantity}}}})


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/example/fleet.git",
        "http://gitea.local:3000/ops/fleet",
        "ssh://git@github.com/example/fleet.git",
        "ssh://git@gitlab.example.com:2222/ops/fleet.git",
    ],
)
def test_repository_urls_argo_cd_and_flux_accept(url: str) -> None:
    (document,), _ = parse_yaml(f"repository:\n  url: {url}\n", "dsf.yaml")
    settings, problems = validate_settings(document)
    assert problems == []
    assert settings.repository.url == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("not a url", "must be an https://, http:// or ssh:// URL"),
        ("git@github.com:example/fleet.git", "no scp-style host:path address"),
        ("file:///srv/fleet", "must be an https://"),
        ("https://github.com/example/fleet.git#main", "repository.branch"),
        ("https://github.com/exa mple/fleet", "white space"),
        ("ssh://git:hunter2@github.com/example/fleet.git", "credentials"),
        ("https://token@github.com/example/fleet.git", "credentials"),
    ],
)
def test_repository_urls_refused(url: str, message: str) -> None:
    (document,), _ = parse_yaml(f"repository:\n  url: '{url}'\n", "dsf.yaml")
    _, problems = validate_settings(document)
    assert problems, url
    assert message in problems[0].message
    assert (problems[0].line, problems[0].field) == (2, "repository.url")


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("svc.ns:8000", "127.0.0.1:18000", (("svc.ns", 8000), ("127.0.0.1", 18000))),
        ("SVC.ns:8000", "127.0.0.1", (("svc.ns", 8000), ("127.0.0.1", 8000))),
        ("svc:443", "[::1]:8443", (("svc", 443), ("::1", 8443))),
    ],
)
def test_resolve_entries(key: str, value: str, expected: Any) -> None:
    assert parse_resolve_entry(key, value) == expected


def test_tolerations_take_label_style_keys_and_int64_seconds() -> None:
    # tolerationSeconds only with effect NoExecute: the API server refuses it otherwise
    toleration = {
        "key": "node.kubernetes.io/unreachable",
        "operator": "Exists",
        "effect": "NoExecute",
    }
    override = {"clusterName": "*", "tolerations": [{**toleration, "tolerationSeconds": 2**63 - 1}]}
    settings = _settings({"agent": {"overrides": [override]}})
    assert settings.agent.overrides[0].tolerations is not None
    with pytest.raises(ValidationError, match="64-bit"):
        bad = {**override, "tolerations": [{**toleration, "tolerationSeconds": 2**63}]}
        _settings({"agent": {"overrides": [bad]}})


def test_resolve_entries_are_checked_beside_other_wrong_settings() -> None:
    text = 'sync:\n  timeoutSeconds: .nan\n  resolve:\n    "svc": "127.0.0.1"\n'
    (document,), _ = parse_yaml(text, "dsf.yaml")
    _, problems = validate_settings(document)
    assert [(p.line, p.field, p.message) for p in problems] == [
        (2, "sync.timeoutSeconds", "must be a finite number"),
        (4, "sync.resolve.svc", "the key must be HOST:PORT, for example scorer.ns.svc:8000"),
    ]


def test_placement_tolerations_and_metadata_follow_the_same_rules() -> None:
    from dsf_compile.inputs.placements import NamespacedMeta, PlacementToleration

    assert PlacementToleration(key="gpu", operator="Exists", tolerationSeconds=2**63 - 1)
    with pytest.raises(ValidationError, match="64-bit"):
        PlacementToleration(key="gpu", operator="Exists", tolerationSeconds=10**26)
    with pytest.raises(ValidationError, match="qualified key"):
        PlacementToleration(key="gpu\n", operator="Exists")
    meta = {"name": "p", "namespace": "default"}
    assert NamespacedMeta.model_validate({**meta, "labels": {"app.kubernetes.io/name": "x"}})
    with pytest.raises(ValidationError, match="key 'team a'"):
        NamespacedMeta.model_validate({**meta, "labels": {"team a": "x"}})
