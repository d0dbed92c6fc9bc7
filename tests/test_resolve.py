"""resolve: the precedence table, masks, ordering and the fleet-wide rules of resolution (docs/architecture.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.errors import InputError
from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.validate import Inputs, validate_documents
from dsf_compile.resolve.scorer import join_url
from dsf_compile.resolve.summaries import Plan, resolve_fleet
from dsf_compile.sync.lock import Lockfile, make_entry
from dsf_contract.bounded_yaml import parse_yaml
from dsf_contract.scoring_api import ScorerConfig
from dsf_contract.summary import SUMMARY_KEYS

PROM = "http://prometheus.monitoring.svc:9090"


def scorer(name: str, mode: str = "Full", **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "description": f"{name} scorer",
        "configURL": f"http://{name}.scoring.svc:8000/config",
        "configSyncMode": mode,
        "scoreDestination": "AddOnPlacementScore",
    }
    body.update(spec)
    return {
        "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
        "kind": "DynamicScorer",
        "metadata": {"name": name},
        "spec": body,
    }


def cluster(name: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {"name": name, "labels": labels},
    }


def masks(*items: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "dynamic-scoring.open-cluster-management.io/v1alpha1",
        "kind": "DynamicScoringConfig",
        "metadata": {"name": "dynamic-scoring-config"},
        "spec": {"masks": list(items)},
    }


def load(*documents: dict[str, Any], settings: Settings | None = None) -> Inputs:
    docs = []
    for index, document in enumerate(documents):
        folder = "scorers" if document["kind"] == "DynamicScorer" else "clusters"
        parsed, problems = parse_yaml(
            yaml.safe_dump(document, sort_keys=False), f"{folder}/doc{index}.yaml"
        )
        assert problems == []
        docs += parsed
    return validate_documents(docs, settings or Settings())


def plan(
    *documents: dict[str, Any],
    configs: dict[str, dict[str, Any] | None] | None = None,
    inactive: tuple[str, ...] = (),
    settings: Settings | None = None,
) -> Plan:
    """Resolve ``documents`` with a lockfile whose Full entries carry ``configs``."""
    inputs = load(*documents, settings=settings)
    entries = {}
    for located in inputs.scorers:
        name = located.model.metadata.name
        raw = (configs or {}).get(name)
        config = ScorerConfig.model_validate(raw) if raw is not None else None
        entries[name] = make_entry(
            located.model.spec,
            healthy=name not in inactive,
            reason="HTTP 500" if name in inactive else "",
            config=config,
        )
    return resolve_fleet(inputs, Lockfile(scorers=entries))


def prometheus_config(**scoring: Any) -> dict[str, Any]:
    return {
        "source": {
            "type": "prometheus",
            "host": PROM,
            "path": "/api/v1/query_range",
            "params": {"query": "up", "range": 3600, "step": 60},
        },
        "scoring": {"path": "/scoring", "params": {"name": "cpu_score", "interval": 30}, **scoring},
    }


def summary(result: Plan, name: str) -> dict[str, Any]:
    return dict(result.resolved[name].summary)


def test_config_fills_a_bare_spec_and_keys_come_in_upstream_order() -> None:
    result = plan(scorer("cpu"), cluster("c1"), configs={"cpu": prometheus_config()})
    got = summary(result, "cpu")
    assert tuple(got) == SUMMARY_KEYS
    assert got == {
        "name": "cpu",
        "scoreName": "cpu_score",
        "sourceType": "Prometheus",
        "sourceEndpoint": f"{PROM}/api/v1/query_range",
        "sourceEndpointAuthName": "",
        "sourceEndpointAuthKey": "",
        "sourceQuery": "up",
        "sourceRange": 3600,
        "sourceStep": 60,
        "scoringEndpoint": "http://cpu.scoring.svc:8000/scoring",
        "scoringInterval": 30,
        "scoringEndpointAuthName": "",
        "scoringEndpointAuthKey": "",
        "location": "Internal",
        "scoreDestination": "AddOnPlacementScore",
        "scoreDimensionFormat": "${scoreName}",
    }


def test_config_wins_over_spec_and_numbers_need_to_be_positive() -> None:
    spec = scorer(
        "cpu",
        source={"type": "None", "params": {"query": "spec_query", "range": 600, "step": 30}},
        scoring={"params": {"name": "spec_name", "interval": 99}},
    )
    config = prometheus_config()
    config["source"]["params"] = {
        "query": "",
        "range": 0,
        "step": 120,
    }  # empty and 0 fall through to spec
    config["scoring"]["params"] = {"interval": 0}
    got = summary(plan(spec, cluster("c1"), configs={"cpu": config}), "cpu")
    assert (got["sourceType"], got["sourceQuery"], got["sourceRange"], got["sourceStep"]) == (
        "Prometheus",
        "spec_query",
        600,
        120,
    )
    assert (got["scoreName"], got["scoringInterval"]) == ("spec_name", 99)


def test_scoring_host_comes_from_scoring_not_source() -> None:
    """Upstream takes the scoring host from L.source.host when L.scoring.host is set: not here."""
    config = prometheus_config(host="http://scoring-elsewhere:9000/base/")
    got = summary(plan(scorer("cpu"), cluster("c1"), configs={"cpu": config}), "cpu")
    assert got["scoringEndpoint"] == "http://scoring-elsewhere:9000/base/scoring"
    assert got["sourceEndpoint"] == f"{PROM}/api/v1/query_range"


def test_none_mode_uses_spec_only_and_source_none_is_empty() -> None:
    spec = scorer(
        "static",
        "None",
        source={
            "type": "none",
            "host": PROM,
            "params": {"query": "ignored"},
            "auth": {"tokenSecretRef": {"name": "s", "key": "k"}},
        },
        scoring={
            "path": "/static/scoring",
            "params": {"name": "static_score", "interval": 15},
            "auth": {"tokenSecretRef": {"name": "api", "key": "token"}},
        },
    )
    got = summary(plan(spec, cluster("c1")), "static")
    assert got["sourceType"] == "None"
    assert (got["sourceEndpoint"], got["sourceQuery"], got["sourceRange"], got["sourceStep"]) == (
        "",
        "",
        0,
        0,
    )
    assert (got["sourceEndpointAuthName"], got["sourceEndpointAuthKey"]) == ("", "")
    assert (got["scoringEndpointAuthName"], got["scoringEndpointAuthKey"]) == ("api", "token")
    assert got["scoringEndpoint"] == "http://static.scoring.svc:8000/static/scoring"


def test_credentials_come_only_from_git() -> None:
    config = prometheus_config()
    config["scoring"]["auth"] = {"tokenSecretRef": {"name": "from-config", "key": "k"}}  # ignored
    got = summary(plan(scorer("cpu"), cluster("c1"), configs={"cpu": config}), "cpu")
    assert got["scoringEndpointAuthName"] == ""


@pytest.mark.parametrize(
    ("host", "path", "joined"),
    [
        ("http://h:9090", "/api/v1/query_range", "http://h:9090/api/v1/query_range"),
        ("http://h/prefix/", "scoring", "http://h/prefix/scoring"),
        ("http://h/", "/x", "http://h/x"),
        ("http://h", "", "http://h"),
    ],
)
def test_join_url(host: str, path: str, joined: str) -> None:
    assert join_url(host, path) == joined


@pytest.mark.parametrize(
    ("config", "field", "message"),
    [
        (
            {"scoring": {"params": {"interval": 30}}, "source": {"type": "None"}},
            "spec.scoring.params.name",
            "score name is missing",
        ),
        ({"scoring": {"params": {"name": "x", "interval": 30}}}, "spec.source.type", "source type"),
        (
            {"scoring": {"params": {"name": "x"}}, "source": {"type": "None"}},
            "spec.scoring.params.interval",
            "interval is missing",
        ),
        (
            {
                "scoring": {"params": {"name": "x", "interval": 30}},
                "source": {"type": "Prometheus", "params": {"range": 60, "step": 60}},
            },
            "spec.source.params.query",
            "PromQL query is missing",
        ),
        (
            {
                "scoring": {"params": {"name": "x", "interval": 30}},
                "source": {
                    "type": "Prometheus",
                    "params": {"query": "up", "range": 60, "step": 120},
                },
            },
            "spec.configURL",
            "step 120 s is longer than range 60 s",
        ),
        (
            {
                "scoring": {"params": {"name": "x", "interval": 30}},
                "source": {
                    "type": "Prometheus",
                    "params": {"query": "up", "range": 86400, "step": 1},
                },
            },
            "spec.configURL",
            "86400 points",
        ),
        (
            {
                "scoring": {"host": "ftp://nope", "params": {"name": "x", "interval": 30}},
                "source": {"type": "None"},
            },
            "spec.configURL",
            "/config scoring.host",
        ),
    ],
    ids=[
        "no-name",
        "no-source-type",
        "no-interval",
        "no-query",
        "step-over-range",
        "too-many-points",
        "bad-config-host",
    ],
)
def test_missing_or_invalid_after_resolution(
    config: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InputError) as caught:
        plan(scorer("cpu"), cluster("c1"), configs={"cpu": config})
    problem = caught.value.problems[0]
    assert problem.path == "scorers/doc0.yaml"
    assert problem.line > 0
    assert problem.field == field
    assert message in problem.message
    if field.startswith("spec.scoring.params.name"):
        assert "or the scorer's /config" in problem.message


def test_duplicate_score_names_and_sanitized_collisions() -> None:
    a = scorer(
        "a",
        "None",
        source={"type": "None"},
        scoring={"params": {"name": "my_score", "interval": 30}},
    )
    b = scorer(
        "b",
        "None",
        source={"type": "None"},
        scoring={"params": {"name": "my-score", "interval": 30}},
    )
    c = scorer(
        "c",
        "None",
        source={"type": "None"},
        scoring={"params": {"name": "my_score", "interval": 30}},
    )
    with pytest.raises(InputError) as caught:
        plan(a, b, c, cluster("c1"))
    messages = sorted(p.message for p in caught.value.problems)
    assert any("both become AddOnPlacementScore 'my-score'" in m for m in messages)
    assert any("is also the score of scorer 'a'" in m for m in messages)


def static(name: str, score: str) -> dict[str, Any]:
    return scorer(
        name, "None", source={"type": "None"}, scoring={"params": {"name": score, "interval": 30}}
    )


def test_masks_by_name_glob_selector_and_score_glob() -> None:
    result = plan(
        static("b-gpu", "b_gpu_score"),
        static("a-cpu", "a_cpu_score"),
        static("c-net", "c_net_score"),
        cluster("worker01", gpu="true"),
        cluster("worker02", gpu="false"),
        cluster("edge01", gpu="false", tier="edge"),
        masks(
            {"clusterSelector": {"matchLabels": {"gpu": "false"}}, "scoreName": "*_gpu_score"},
            {"clusterName": "edge*", "scoreName": "c_net_score"},
            {
                "clusterName": "worker0*",
                "clusterSelector": {
                    "matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["false"]}]
                },
                "scoreName": "a_cpu_score",
            },
        ),
    )
    got = {c.name: c.scorers for c in result.clusters}
    assert got == {
        "edge01": ("a-cpu",),
        "worker01": ("b-gpu", "c-net"),  # the third mask: both its name and its selector match
        "worker02": ("a-cpu", "c-net"),
    }


def test_inactive_scorers_are_left_out_with_a_warning_or_kept() -> None:
    documents = (static("a", "a_score"), static("b", "b_score"), cluster("c1"))
    result = plan(*documents, inactive=("b",))
    assert result.clusters[0].scorers == ("a",)
    assert result.health == {"a": "Active", "b": "Inactive"}
    (warning,) = result.warnings
    assert warning.severity == "warning" and "Inactive (HTTP 500); left out" in warning.message
    kept = plan(
        *documents,
        inactive=("b",),
        settings=Settings.model_validate({"render": {"keepInactive": True}}),
    )
    assert kept.clusters[0].scorers == ("a", "b")


def test_mask_on_an_inactive_scorer_is_not_a_typo() -> None:
    result = plan(
        static("a", "a_score"),
        static("b", "b_score"),
        cluster("c1"),
        masks({"clusterName": "c1", "scoreName": "b_score"}),
        inactive=("b",),
    )
    assert result.clusters[0].scorers == ("a",)


def test_mask_matching_no_score_is_an_error_at_render() -> None:
    with pytest.raises(InputError) as caught:
        plan(
            static("a", "a_score"),
            cluster("c1"),
            masks({"clusterName": "c1", "scoreName": "typo_score"}),
        )
    (problem,) = caught.value.problems
    assert problem.field == "spec.masks[0].scoreName"
    assert "matches no score" in problem.message


def test_a_cluster_with_nothing_to_score_gets_an_empty_list() -> None:
    result = plan(
        static("a", "a_score"),
        cluster("c1"),
        cluster("c2"),
        masks({"clusterName": "c2", "scoreName": "*"}),
    )
    assert {c.name: c.scorers for c in result.clusters} == {"c1": ("a",), "c2": ()}


def test_lock_entry_missing_or_stale() -> None:
    inputs = load(static("a", "a_score"), static("b", "b_score"), cluster("c1"))
    entry = make_entry(inputs.scorers[0].model.spec, healthy=True)
    stale = inputs.scorers[1].model.spec.model_copy(update={"configURL": "http://old:8000/config"})
    lock = Lockfile(scorers={"a": entry, "b": make_entry(stale, healthy=True)})
    with pytest.raises(InputError) as caught:
        resolve_fleet(inputs, lock)
    (problem,) = caught.value.problems
    assert (problem.field, problem.message) == (
        "spec.configURL",
        "changed since the last sync: run 'dsf-compile sync b'",
    )
    with pytest.raises(InputError) as caught:
        resolve_fleet(inputs, Lockfile(scorers={"a": entry}))
    assert caught.value.problems[0].message == "no entry in dsf.lock.json: run 'dsf-compile sync b'"


def test_validate_checks_mask_scores_when_no_scorer_needs_a_sync() -> None:
    from dsf_compile.resolve.summaries import check_spec_only_scorers

    typo = masks({"clusterName": "c1", "scoreName": "typo_score"})
    (problem,) = check_spec_only_scorers(load(static("a", "a_score"), cluster("c1"), typo))
    assert (problem.field, problem.message) == (
        "spec.masks[0].scoreName",
        "matches no score of any scorer (a typo?) (did you mean 'a_score'?)",
    )
    # a Full scorer's score name may come from its /config: validate cannot tell yet
    assert (
        check_spec_only_scorers(load(static("a", "a_score"), scorer("b"), cluster("c1"), typo))
        == []
    )


def test_validate_and_render_resolve_each_scorer_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example fleet has Placements, so its placement checks look at every scorer's
    score before the plan resolves them: each scorer is still resolved once per command."""
    from collections import Counter

    from dsf_compile.pipeline.inputs import load_inputs, plan_fleet, validate_fleet
    from dsf_compile.resolve import scorer
    from tests.fleet_repo import copy_fleet

    fleet = copy_fleet(tmp_path / "fleet")
    calls: Counter[str] = Counter()
    resolve = scorer._Resolver.resolve

    def counted(self: scorer._Resolver) -> scorer.ResolvedScorer | None:
        calls[self.located.model.metadata.name] += 1
        return resolve(self)

    monkeypatch.setattr(scorer._Resolver, "resolve", counted)
    scorers = [s.model.metadata.name for s in load_inputs(fleet).scorers]
    assert (fleet / "placements").is_dir() and len(scorers) >= 2
    for command in (plan_fleet, validate_fleet):
        calls.clear()
        command(fleet)
        assert calls == dict.fromkeys(scorers, 1), command
