"""Unit tests of the agent's pure rules: names, dimensions, values, parsing, settings."""

from __future__ import annotations

import contextlib
import gc
import io
import json
import logging
import math
from datetime import UTC, datetime
from typing import Any

import pytest

from agent import answer as answer_module
from agent.answer import scoring_request, series_block
from agent.config import parse_config_document, parse_config_text
from agent.errors import ConfigError, FetchError, ScoreError
from agent.fetch import range_params, split_queries
from agent.logs import Redactor, configure_logging, fields
from agent.loop import next_slot, scorer_phase
from agent.metrics import AgentMetrics
from agent.placement_score import placement_score_object, placement_score_status, valid_until
from agent.score import Scored, parse_response
from agent.settings import parse_settings
from dsf_contract.placement_scores import placement_value, render_dimension, score_items
from dsf_contract.summary import Summary
from dsf_contract.summary import sanitize_score_name as sanitize_name
from tests.agent.conftest import CLUSTER, configmap_yaml, make_summary
from tests.agent.exposed import sample_value

# ------------------------------------------------------------------ sanitize


@pytest.mark.parametrize(
    ("score_name", "expected"),
    [
        ("sample_my_score", "sample-my-score"),  # the naming rule's examples
        ("My Score@Name", "my-score-name"),
        ("", "score"),
        ("already-fine.name", "already-fine.name"),
        ("__x__", "x"),
        ("-.-", "score"),
        ("a---b___c", "a-b-c"),
        ("..dots..", "dots"),
        ("UPPER", "upper"),
        ("ünïcode", "n-code"),
        ("a" * 300, "a" * 253),
        ("a" * 252 + "-b", "a" * 252),  # cut at 253, then the trailing '-' trimmed
        ("../../etc/passwd", "etc-passwd"),
    ],
)
def test_sanitize_name(score_name: str, expected: str) -> None:
    assert sanitize_name(score_name) == expected


@pytest.mark.parametrize(
    "score_name", ["x", "A b", "é" * 400, "9lives", "a.b-c_d", "-", "__", "a" * 1000]
)
def test_sanitized_names_are_dns_subdomains(score_name: str) -> None:
    name = sanitize_name(score_name)
    assert 1 <= len(name) <= 253
    assert name[0].isalnum() and name[-1].isalnum()
    assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789.-")


# ---------------------------------------------------------- dimension format


@pytest.mark.parametrize(
    ("template", "labels", "expected"),
    [
        ("${node};${namespace};${pod}", {"node": "n1", "namespace": "ns", "pod": "p"}, "n1;ns;p"),
        ("${scoreName}", {}, "cpu_score"),
        ("${cluster}-${node}", {"node": "n1"}, f"{CLUSTER}-n1"),
        (
            "${device}/${app}/${container}/${meta}",
            {"device": "gpu0", "app": "a", "container": "c", "meta": "m"},
            "gpu0/a/c/m",
        ),
        ("${node};${pod}", {"node": "n1"}, "n1;"),  # absent label renders empty
        (
            "${unknown}:${node}",
            {"node": "n"},
            "${unknown}:n",
        ),  # compiler rejects these; kept literal
        ("static", {"node": "n"}, "static"),
        (
            "${meta}",
            {"meta": "x" * 400},
            "x" * 400,
        ),  # untruncated (metrics labels are cut, names are not)
    ],
)
def test_render_dimension(template: str, labels: dict[str, str], expected: str) -> None:
    assert render_dimension(template, labels, cluster=CLUSTER, score_name="cpu_score") == expected


# --------------------------------------------------------------- values


@pytest.mark.parametrize(
    ("score", "value"),
    [
        (10.0, 10),
        (10.9, 10),
        (-3.5, -4),  # rounded down, not toward zero
        (-0.1, -1),
        (0.0, 0),
        (100.0, 100),
        (100.5, 100),
        (250.0, 100),
        (-100.0, -100),
        (-100.2, -100),
        (-1e300, -100),
        (1e300, 100),
        (math.inf, 100),
        (-math.inf, -100),
    ],
)
def test_placement_value_floors_and_clamps(score: float, value: int) -> None:
    assert placement_value(score) == value


def _results(*pairs: tuple[str, float]) -> list[Scored]:
    return [Scored(labels={"node": node}, score=score) for node, score in pairs]


@pytest.mark.parametrize(
    ("how", "expected"),
    [("last", 5), ("max", 50), ("min", -20), ("sum", 35), ("avg", 11)],
)
def test_duplicate_dimensions_are_folded(how: Any, expected: int) -> None:
    results = _results(("b", 50.0), ("b", -20.0), ("a", 1.0), ("b", 5.0))
    items = score_items(results, template="${node}", cluster=CLUSTER, score_name="s", how=how)
    assert [(i.name, i.value) for i in items] == [("a", 1), ("b", expected)]


def test_items_are_sorted_and_empty_names_skipped() -> None:
    results = _results(("zeta", 1.0), ("", 99.0), ("alpha", 2.0), ("mid", 3.0))
    items = score_items(results, template="${node}", cluster=CLUSTER, score_name="s", how="last")
    assert [i.name for i in items] == ["alpha", "mid", "zeta"]


def test_sum_overflow_still_gives_a_bound() -> None:
    items = score_items(
        _results(("a", 1e308), ("a", 1e308)),
        template="${node}",
        cluster=CLUSTER,
        score_name="s",
        how="sum",
    )
    assert [i.value for i in items] == [100]


def test_status_and_valid_until() -> None:
    now = datetime(2024, 6, 17, 5, 0, 0, 123456, tzinfo=UTC)
    assert valid_until(now, 30) == "2024-06-17T05:01:30Z"
    items = score_items(
        _results(("n", 12.7)), template="${node}", cluster=CLUSTER, score_name="s", how="last"
    )
    status = placement_score_status(items, now=now, interval=60)
    assert status == {"scores": [{"name": "n", "value": 12}], "validUntil": "2024-06-17T05:03:00Z"}
    obj = placement_score_object("n", CLUSTER, status=status, resource_version="7")
    assert obj["metadata"]["resourceVersion"] == "7" and obj["status"] is status
    assert "status" not in placement_score_object("n", CLUSTER)


def test_placement_score_validates_against_crd(crd_schema: dict[str, Any]) -> None:
    import jsonschema

    results = _results(("n1", 1e9), ("n2", -1e9), ("n3", 0.5))
    items = score_items(results, template="${node}", cluster=CLUSTER, score_name="s", how="last")
    obj = placement_score_object(
        "s", CLUSTER, status=placement_score_status(items, now=datetime.now(UTC), interval=5)
    )
    jsonschema.validate(obj, crd_schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


# ------------------------------------------------------------------ fetch


def test_split_queries_and_params() -> None:
    assert split_queries("up; rate(x[1m]) ;;  ") == ["up", "rate(x[1m])"]
    summary = Summary.model_validate(make_summary(sourceRange=3600, sourceStep=60))
    assert range_params("up", 1718600000.9, summary) == {
        "query": "up",
        "start": "1718596400",
        "end": "1718600000",
        "step": "60",
    }


@pytest.mark.parametrize(
    "document",
    [
        [],
        {"data": {"result": []}},
        {"status": "error", "error": "bad query"},
        {"status": "success"},
        {"status": "success", "data": {"result": {}}},
        {"status": "success", "data": {"result": [{"metric": {}}]}},
        {"status": "success", "data": {"result": [{"metric": [], "values": []}]}},
        {"status": "success", "data": {"result": ["x"]}},
    ],
)
def test_series_block_rejects_non_prometheus_answers(document: Any) -> None:
    with pytest.raises(FetchError):
        series_block(json.dumps(document).encode())


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"not json",
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": []}]}} trailing',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": []},]}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": [NaN]}]}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": [}]}}',
        b'{"status": "success" "data": {"result": []}}',
        b'{"status": "success", "data": {"result": []}',
        b'\xff{"status": "success", "data": {"result": []}}',
        b"[" * 100_000,
    ],
)
def test_series_block_rejects_what_is_not_json(body: bytes) -> None:
    with pytest.raises(FetchError) as caught:
        series_block(body)
    assert caught.value.reason == "invalid_response"


def test_series_block_forwards_the_series_untouched() -> None:
    series = [
        {"metric": {"node": "n", "pod": "p\u00e9"}, "values": [[1, "2"], [2, "NaN"]]},
        {"metric": {}, "values": []},
    ]
    answers = [
        {"data": {"result": series, "resultType": "matrix"}, "status": "success"},
        {"status": "success", "warnings": ["w"], "data": {"resultType": "matrix", "result": []}},
        {"status": "success", "data": {"resultType": "matrix", "result": series[:1]}},
    ]
    blocks = [series_block(json.dumps(answer, indent=1).encode()) for answer in answers]
    assert [block.count for block in blocks] == [2, 0, 1]
    assert json.loads(scoring_request(blocks)) == {"data": [*series, series[0]]}
    assert json.loads(scoring_request([])) == {"data": []}
    # non-ASCII text is forwarded as UTF-8
    accented = series_block(json.dumps(answers[0], ensure_ascii=False).encode())
    assert json.loads(scoring_request([accented])) == {"data": series}


@pytest.mark.parametrize(
    "body",
    [
        b'{"status":"success","data":{"result":[{"metric":{},"values":[[1,"2"]]}]}}',
        b'{ "status" :\n"success" ,\t"data" : { "result" : [ {"metric" : {} , "values" : [ ] } ] } }',
        b'{"st\\u0061tus": "success", "data": {"res\\u0075lt": [{"metric": {}, "values": []}]}}',
        b'{"status": "success", "data": {"result": [{"metr\\"ic": 1, "metric": {}, "values": []}]}}',
    ],
    ids=["compact", "spaced", "escaped_keys", "escaped_quote_in_key"],
)
def test_series_block_reads_keys_however_they_are_written(body: bytes) -> None:
    assert series_block(body).count == 1


@pytest.mark.parametrize(
    "body",
    [
        b'{"sta\ttus": "success", "data": {"result": []}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": []}],}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": []}] ,, }}',
        b'{"status": "success", "data" {"result": []}}',
        b'{"status": "success", "data": {"result": []} "x": 1}',
    ],
    ids=["control_character_in_key", "trailing_comma", "two_commas", "no_colon", "no_comma"],
)
def test_series_block_refuses_malformed_members(body: bytes) -> None:
    with pytest.raises(FetchError) as caught:
        series_block(body)
    assert caught.value.reason == "invalid_response"


@pytest.mark.parametrize("enabled", [True, False])
@pytest.mark.parametrize(
    "body",
    [
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": [[1, "2"]]}]}}',
        b'{"status": "success", "data": {"result": [{"metric": {}, "values": [NaN]}]}}',
    ],
    ids=["accepted", "refused"],
)
def test_series_block_pauses_the_collector_only_while_it_walks(
    body: bytes, enabled: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk runs with the cyclic collector paused, and leaves it as it found it."""
    seen: list[bool] = []
    walk = answer_module._walk_answer

    def spy(text: str, found: Any) -> None:
        seen.append(gc.isenabled())
        walk(text, found)

    monkeypatch.setattr(answer_module, "_walk_answer", spy)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        with contextlib.suppress(FetchError):
            series_block(body)
        assert seen == [False]
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


# ------------------------------------------------------------------ score


def encode(document: Any) -> bytes:
    return json.dumps(document).encode()


def results(count: int) -> list[dict[str, Any]]:
    return [{"metric": {"node": f"n{i}"}, "score": i} for i in range(count)]


def test_parse_response_refuses_more_results_than_the_cap() -> None:
    assert len(parse_response(encode({"results": results(3)}), max_results=3).results) == 3
    for answer in (
        encode({"results": results(4)}),
        encode({"results": [*results(3), "garbage"]}),  # skipped results count too
        # refused at the first result past the cap: what follows is not even read
        encode({"results": results(4)})[:-5] + b" not JSON",
    ):
        with pytest.raises(ScoreError) as caught:
            parse_response(answer, max_results=3)
        assert caught.value.reason == "too_many_results"
        assert "more than 3 results" in str(caught.value)


def test_parse_response_keeps_only_the_labels_the_agent_uses() -> None:
    labels = {f"extra{i}": "x" * 100 for i in range(50)} | {"node": "n1", "meta": "m"}
    outcome = parse_response(encode({"results": [{"metric": labels, "score": 1}]}))
    assert outcome.results == [Scored(labels={"node": "n1", "meta": "m"}, score=1.0)]


def test_parse_response_takes_the_last_results_key() -> None:
    answer = b'{"results": [{"score": 1}], "other": [1, {"a": null}], "results": [{"score": 2}]}'
    assert [r.score for r in parse_response(answer).results] == [2.0]


def test_parse_response_skips_non_finite_and_malformed_results() -> None:
    outcome = parse_response(
        encode(
            {
                "results": [
                    {"metric": {"node": "a"}, "score": 1},
                    {"metric": {"node": "b"}, "score": float("nan")},
                    {"metric": {"node": "c"}, "score": float("inf")},
                    {"metric": {"node": "d"}, "score": "10"},
                    {"metric": {"node": 5}, "score": 1.0},
                    {"metric": {"node": "e"}},
                    "garbage",
                    {"score": -2.5},
                    {"metric": {"node": "f"}, "score": True},
                ]
            }
        )
    )
    assert [(r.labels, r.score) for r in outcome.results] == [({"node": "a"}, 1.0), ({}, -2.5)]
    assert outcome.skipped == 7


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        {},
        {"results": None},
        {"results": {}},
        {"result": []},
    ],
)
def test_parse_response_needs_results_list(document: Any) -> None:
    with pytest.raises(ScoreError):
        parse_response(encode(document))


# ----------------------------------------------------------------- config


def test_config_accepts_json_list_and_configmap_yaml() -> None:
    summaries = [make_summary(), make_summary(name="other", scoreName="other")]
    from_json = parse_config_text(json.dumps(summaries))
    from_yaml = parse_config_text(configmap_yaml(summaries))
    assert from_json == from_yaml
    assert [s.scoreName for s in from_json.summaries] == ["sample_my_score", "other"]
    assert from_json.problems == ()


def test_config_enum_values_are_case_insensitive() -> None:
    parsed = parse_config_document(
        [
            make_summary(
                sourceType="prometheus", location="internal", scoreDestination="addonplacementscore"
            )
        ]
    )
    (summary,) = parsed.summaries
    assert (summary.sourceType, summary.location, summary.scoreDestination) == (
        "Prometheus",
        "Internal",
        "AddOnPlacementScore",
    )


def test_config_source_type_none_needs_no_source() -> None:
    none = make_summary(
        sourceType="None", sourceEndpoint="", sourceQuery="", sourceRange=0, sourceStep=0
    )
    assert len(parse_config_document([none]).summaries) == 1


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ({"scoringInterval": 0}, "scoringInterval"),
        ({"scoringInterval": "30"}, "scoringInterval"),
        ({"sourceType": "Graphite"}, "sourceType"),
        ({"extra": 1}, "extra"),
        ({"scoringEndpoint": "ftp://x/scoring"}, "scoringEndpoint"),
        ({"sourceEndpoint": "not a url"}, "sourceEndpoint"),
        ({"sourceQuery": " "}, "sourceQuery"),
        ({"sourceRange": 0}, "sourceRange"),
        ({"sourceEndpointAuthName": "s"}, "sourceEndpointAuthName and sourceEndpointAuthKey"),
        ({"scoreName": ""}, "scoreName"),
    ],
)
def test_one_bad_summary_does_not_take_the_others_down(bad: dict[str, Any], fragment: str) -> None:
    broken = make_summary(name="broken", **{"scoreName": "broken_score", **bad})
    parsed = parse_config_document([make_summary(name="good", scoreName="good"), broken])
    assert [s.scoreName for s in parsed.summaries] == ["good"]
    assert len(parsed.problems) == 1 and fragment in parsed.problems[0]


def test_missing_key_is_reported() -> None:
    summary = make_summary()
    del summary["location"]
    parsed = parse_config_document([summary])
    assert parsed.summaries == () and "location" in parsed.problems[0]
    assert parsed.rejected_score_names == {"sample_my_score"}


def test_duplicate_and_colliding_score_names_keep_the_first() -> None:
    parsed = parse_config_document(
        [
            make_summary(name="a", scoreName="cpu_score"),
            make_summary(name="b", scoreName="cpu_score"),
            make_summary(name="c", scoreName="cpu-score"),
        ]
    )
    assert [s.name for s in parsed.summaries] == ["a"]
    assert len(parsed.problems) == 2
    assert parsed.rejected_score_names == {"cpu-score"}


# Each level doubles the previous one: 2**30 nodes once expanded.
ALIAS_BOMB = "l0: &l0 [x, x]\n" + "".join(
    f"l{i}: &l{i} [*l{i - 1}, *l{i - 1}]\n" for i in range(1, 31)
)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty"),
        ("{not json: [", "invalid_yaml"),
        ("42", "invalid_document"),
        ('{"kind": "Secret", "data": {}}', "invalid_document"),
        ("kind: ConfigMap\ndata: {}\n", "missing_key"),
        ("kind: ConfigMap\ndata:\n  summaries: '[{'\n", "invalid_json"),
        ("kind: ConfigMap\ndata:\n  summaries: '{}'\n", "invalid_document"),
        ("kind: ConfigMap\ndata:\n  summaries: 5\n", "invalid_document"),
        # Hostile or broken files: bounded before anything recurses or converts.
        pytest.param("[" * 100_000 + "]" * 100_000, "too_deep", id="deep_json"),
        pytest.param("[" * 65 + "]" * 65, "too_deep", id="json_one_level_too_deep"),
        pytest.param("a: " + "[" * 100_000, "too_deep", id="deep_yaml"),
        pytest.param("[" + "7" * 6000 + "]", "invalid_yaml", id="huge_json_number"),
        pytest.param(
            "kind: ConfigMap\ndata:\n  summaries: " + "1" * 6000 + "\n",
            "invalid_yaml",
            id="huge_yaml_int",
        ),
        pytest.param(
            json.dumps({"data": {"summaries": "[" * 100_000 + "]" * 100_000}}),
            "too_deep",
            id="deep_data_summaries",
        ),
        pytest.param(
            "kind: ConfigMap\ndata:\n  summaries: '[" + "7" * 6000 + "]'\n",
            "invalid_json",
            id="huge_number_in_data_summaries",
        ),
        pytest.param(ALIAS_BOMB, "invalid_yaml", id="alias_bomb"),
        pytest.param("a: 1\n---\nb: 2\n", "invalid_document", id="two_documents"),
        pytest.param(b"\xff\xfe[", "invalid_yaml", id="not_utf8"),
    ],
)
def test_broken_documents_raise_config_error(text: str | bytes, reason: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text)
    assert caught.value.reason == reason


def test_empty_list_is_a_valid_configuration() -> None:
    assert parse_config_text("[]").summaries == ()


# ---------------------------------------------------------------- metrics


def test_stale_series_are_removed_and_labels_cut() -> None:
    metrics = AgentMetrics(CLUSTER)
    first = [Scored({"node": "n1", "meta": "m" * 300}, 1.0), Scored({"node": "n2"}, 2.0)]
    assert metrics.publish_scores("s", first, "last") == 2
    assert sample_value(metrics, "dynamic_score", _labels("s", node="n2")) == 2.0
    assert sample_value(metrics, "dynamic_score", _labels("s", node="n1", meta="m" * 256)) == 1.0
    metrics.publish_scores("other", [Scored({"node": "n1"}, 7.0)], "last")
    metrics.publish_scores("s", [Scored({"node": "n2"}, 3.0)], "last")
    assert sample_value(metrics, "dynamic_score", _labels("s", node="n1", meta="m" * 256)) is None
    assert sample_value(metrics, "dynamic_score", _labels("s", node="n2")) == 3.0
    assert sample_value(metrics, "dynamic_score", _labels("other", node="n1")) == 7.0


def test_duplicate_series_follow_the_aggregation() -> None:
    metrics = AgentMetrics(CLUSTER)
    metrics.publish_scores(
        "s",
        [Scored({"node": "n"}, 1.0), Scored({"node": "n"}, 9.0), Scored({"node": "n"}, 2.0)],
        "max",
    )
    assert sample_value(metrics, "dynamic_score", _labels("s", node="n")) == 9.0


def test_forget_removes_every_series_of_a_scorer() -> None:
    from agent.metrics import ScorerMetrics

    metrics = AgentMetrics(CLUSTER)
    counters = ScorerMetrics(metrics, "gone")
    counters.success.inc()
    counters.failed("fetch", "timeout")
    metrics.publish_scores("gone", [Scored({"node": "n"}, 1.0)], "last")
    ScorerMetrics(metrics, "kept").success.inc()
    metrics.forget("gone")
    text = metrics.exposition().decode()
    assert 'score_name="gone"' not in text and 'ds_score_name="gone"' not in text
    assert 'score_name="kept"' in text


def test_exposition_reads_back_as_the_scores_published() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from agent.metrics import ScorerMetrics

    metrics = AgentMetrics(CLUSTER)
    ScorerMetrics(metrics, "s").success.inc()
    tricky = 'a"b\\c\nd\u00e9'
    metrics.publish_scores(
        "s", [Scored({"node": tricky}, 1.5), Scored({"pod": "p"}, -2e-7)], "last"
    )
    metrics.publish_scores("t", [Scored({"node": "n"}, 1e21)], "last")

    def samples(text: str) -> set[tuple[str, tuple[tuple[str, str], ...], float]]:
        return {
            (s.name, tuple(sorted(s.labels.items())), s.value)
            for family in text_string_to_metric_families(text)
            for s in family.samples
        }

    served = metrics.exposition().decode()
    assert ("dynamic_score", tuple(sorted(_labels("s", node=tricky).items())), 1.5) in samples(
        served
    )
    assert ("dynamic_score", tuple(sorted(_labels("s", pod="p").items())), -2e-7) in samples(served)
    assert ("dynamic_score", tuple(sorted(_labels("t", node="n").items())), 1e21) in samples(served)
    assert served.count("# TYPE dynamic_score gauge") == 1
    metrics.forget("s")
    metrics.forget("t")
    assert "dynamic_score{" not in metrics.exposition().decode()


def _labels(score_name: str, **labels: str) -> dict[str, str]:
    names = ("node", "device", "namespace", "app", "pod", "container", "meta")
    return {
        "ds_cluster": CLUSTER,
        **{f"ds_{n}": labels.get(n, "") for n in names},
        "ds_score_name": score_name,
    }


# -------------------------------------------------------------- scheduling


def test_phase_is_stable_and_bounded() -> None:
    assert scorer_phase("a", 30) == scorer_phase("a", 30)
    assert all(0 <= scorer_phase(f"s{i}", 1) < 1 for i in range(200))
    assert all(0 <= scorer_phase(f"s{i}", 3600) < 10 for i in range(200))


@pytest.mark.parametrize(
    ("not_before", "expected"),
    [(0.0, 0.5), (0.5, 0.5), (0.6, 1.5), (1.5, 1.5), (10.49, 10.5), (10.51, 11.5)],
)
def test_next_slot(not_before: float, expected: float) -> None:
    assert next_slot(0.5, 1.0, not_before) == pytest.approx(expected)


# ---------------------------------------------------------------- settings


def test_settings_from_environment_and_flags() -> None:
    env = {
        "DSF_CLUSTER_NAME": "worker01",
        "DSF_CONFIG_FILE": "/cfg/summaries",
        "DSF_SECRETS_DIR": "/secrets",
        "DSF_HUB_KUBECONFIG": "/hub/kubeconfig",
        "DSF_METRICS_BIND": "127.0.0.1:9000",
        "DSF_LOG_LEVEL": "DEBUG",
        "DSF_AGGREGATE": "cpu=max,mem=avg",
    }
    settings = parse_settings([], env)
    assert settings.cluster_name == "worker01" and str(settings.config_file) == "/cfg/summaries"
    assert (settings.metrics_host, settings.metrics_port, settings.log_level) == (
        "127.0.0.1",
        9000,
        "debug",
    )
    assert settings.aggregation_for("cpu") == "max" and settings.aggregation_for("other") == "last"
    flagged = parse_settings(
        ["--cluster-name", "c2", "--metrics-bind", ":8081", "--aggregate", "cpu=min"], env
    )
    assert (flagged.cluster_name, flagged.metrics_host, flagged.metrics_port) == (
        "c2",
        "0.0.0.0",
        8081,
    )
    assert flagged.aggregation_for("cpu") == "min" and flagged.aggregation_for("mem") == "avg"


def test_the_result_cap_is_a_flag_and_a_variable() -> None:
    assert parse_settings(["--cluster-name", "c"], {}).max_results == 10_000
    assert parse_settings(["--cluster-name", "c"], {"DSF_MAX_RESULTS": "50"}).max_results == 50
    flagged = parse_settings(
        ["--cluster-name", "c", "--max-results", "7"], {"DSF_MAX_RESULTS": "50"}
    )
    assert flagged.max_results == 7
    assert parse_settings(["--cluster-name", "c"], {}).hub_spread == 10.0
    assert parse_settings(["--cluster-name", "c", "--hub-spread", "0"], {}).hub_spread == 0.0
    assert parse_settings(["--cluster-name", "c"], {"DSF_HUB_SPREAD": "2.5"}).hub_spread == 2.5


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--cluster-name", "Not_A_Label"],
        ["--cluster-name", "c", "--metrics-bind", "nope"],
        ["--cluster-name", "c", "--aggregate", "x=median"],
        ["--cluster-name", "c", "--log-level", "loud"],
        ["--cluster-name", "c", "--request-timeout", "0"],
        ["--cluster-name", "c", "--max-results", "0"],
        ["--cluster-name", "c", "--max-results", "many"],
        ["--cluster-name", "c", "--hub-spread", "-1"],
        ["--cluster-name", "c", "--hub-spread", "nan"],
    ],
)
def test_bad_flags_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        parse_settings(argv, {})
    assert caught.value.code == 2
    assert "usage: dsf-agent" in capsys.readouterr().err


# -------------------------------------------------------------------- logs


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_logs_are_structured_and_redacted(log_format: str) -> None:
    stream = io.StringIO()
    redactor = Redactor()
    redactor.add("s3cr3t-token-value")
    configure_logging("info", log_format, stream=stream, redactor=redactor)
    try:
        logging.getLogger("dsf.test").warning(
            "cycle_failed",
            extra=fields(score_name="x", error="header Bearer s3cr3t-token-value rejected"),
        )
    finally:
        configure_logging("warning", "text")
    line = stream.getvalue().strip()
    assert "s3cr3t-token-value" not in line and "***" in line
    if log_format == "json":
        record = json.loads(line)
        assert (
            record["event"] == "cycle_failed"
            and record["score_name"] == "x"
            and record["level"] == "warning"
        )
    else:
        assert "event=cycle_failed" in line and "score_name=x" in line
