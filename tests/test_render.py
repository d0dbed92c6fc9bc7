"""render: byte-stable output, the ConfigMap's exact JSON, the ManifestWork size limit."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.edges.yaml_text import dump_yaml
from dsf_compile.errors import InputError
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.emit import encode_summaries, encode_summary
from dsf_compile.render.manifests import render_manifests, summaries_of
from dsf_compile.resolve.summaries import ClusterPlan, Plan
from dsf_contract.summary import Summary


def manifestwork(files: dict[str, str], cluster: str) -> dict[str, Any]:
    loaded = yaml.safe_load(files[f"clusters/{cluster}/manifestwork.yaml"])
    assert isinstance(loaded, dict)
    return loaded


def test_rendering_twice_gives_identical_bytes(fleet: Path) -> None:
    assert render_manifests(plan_fleet(fleet)) == render_manifests(plan_fleet(fleet))


def test_every_file_is_lf_terminated_yaml_with_the_fixed_key_order(fleet: Path) -> None:
    for path, text in render_manifests(plan_fleet(fleet)).items():
        assert text.endswith("\n") and "\r" not in text, path
        assert text.startswith("apiVersion: "), path
        for document in yaml.safe_load_all(text):
            assert list(document)[:2] == ["apiVersion", "kind"], path


def test_the_fast_manifestwork_equals_the_generic_emitter(fleet: Path) -> None:
    plan = plan_fleet(fleet)
    files = render_manifests(plan)
    for cluster in plan.clusters:
        work = manifestwork(files, cluster.name)
        assert dump_yaml(work) == files[f"clusters/{cluster.name}/manifestwork.yaml"]


def test_summaries_are_upstreams_indented_json(fleet: Path) -> None:
    plan = plan_fleet(fleet)
    files = render_manifests(plan)
    for cluster in plan.clusters:
        configmap = manifestwork(files, cluster.name)["spec"]["workload"]["manifests"][0]
        assert (configmap["kind"], configmap["metadata"]) == (
            "ConfigMap",
            {
                "name": "dynamic-scoring-config",
                "namespace": "dynamic-scoring",
                "labels": {
                    "app.kubernetes.io/managed-by": "dsf-compile",
                    "app.kubernetes.io/part-of": "dynamic-scoring-framework",
                },
            },
        )
        expected = [s.model_dump() for s in summaries_of(plan, cluster.name)]
        assert configmap["data"]["summaries"] == json.dumps(expected, indent=2)
        assert [s["name"] for s in expected] == sorted(s["name"] for s in expected)


@pytest.mark.parametrize("count", [0, 1, 3])
def test_joined_blocks_equal_json_dumps(count: int) -> None:
    summaries = [
        Summary(
            name=f"s{i}",
            scoreName='x"y\u00e9',
            sourceType="Prometheus",
            sourceEndpoint="http://prometheus:9090/api/v1/query_range",
            sourceEndpointAuthName="",
            sourceEndpointAuthKey="",
            sourceQuery="up",
            sourceRange=i,
            sourceStep=1,
            scoringEndpoint="http://scorer/scoring",
            scoringInterval=30,
            scoringEndpointAuthName="",
            scoringEndpointAuthKey="",
            location="Internal",
            scoreDestination="AddOnPlacementScore",
            scoreDimensionFormat="${node}",
        )
        for i in range(count)
    ]
    assert encode_summaries([encode_summary(s) for s in summaries]) == json.dumps(
        [s.model_dump() for s in summaries], indent=2
    )


def test_the_example_fleet_masks(fleet: Path) -> None:
    plan = plan_fleet(fleet)
    got = {c.name: c.scorers for c in plan.clusters}
    assert got == {
        "edge01": ("llm-forecast-scorer", "sample-scorer", "simple-prediction-scorer"),
        "worker01": (
            "example-performance-scorer",
            "example-powerconsumption-scorer",
            "llm-forecast-scorer",
            "sample-scorer",
            "simple-prediction-scorer",
        ),
        "worker02": (
            "example-performance-scorer",
            "example-powerconsumption-scorer",
            "sample-scorer",
            "simple-prediction-scorer",
        ),
    }


def test_scorer_crs_carry_health_and_config_hash(fleet: Path) -> None:
    files = render_manifests(plan_fleet(fleet))
    cr = yaml.safe_load(files["hub/dynamicscorers/sample-scorer.yaml"])
    annotations = cr["metadata"]["annotations"]
    assert annotations["dynamic-scoring.open-cluster-management.io/health"] == "Active"
    assert annotations["dynamic-scoring.open-cluster-management.io/config-hash"].startswith(
        "sha256:"
    )
    assert cr["metadata"]["namespace"] == "open-cluster-management"
    assert cr["spec"]["source"] == {"type": "Prometheus"}  # canonical case of "prometheus"


def test_a_manifestwork_over_500_kib_is_refused_naming_the_cluster(fleet: Path) -> None:
    plan = plan_fleet(fleet)
    big_query = "x" * 200_000
    resolved = {}
    for name, scorer in plan.resolved.items():
        summary = scorer.summary.model_copy(update={"sourceQuery": big_query})
        resolved[name] = type(scorer)(name, summary, scorer.located)
    heavy = Plan(
        plan.inputs, plan.health, resolved, (ClusterPlan("worker01", {}, tuple(resolved)),), ()
    )
    with pytest.raises(InputError) as caught:
        render_manifests(heavy)
    (problem,) = caught.value.problems
    assert problem.path == "clusters/inventory.yaml" and problem.line > 0
    assert "over OCM's 500 KiB limit" in problem.message


def test_the_size_estimate_matches_the_json_the_hub_sees(fleet: Path) -> None:
    """The limit is checked on an exact computation of the manifest's JSON, not a guess."""
    from dsf_compile.render import manifests as render

    plan = plan_fleet(fleet)
    files = render_manifests(plan)
    configmap = manifestwork(files, "worker01")["spec"]["workload"]["manifests"][0]
    exact = len(json.dumps(configmap, separators=(",", ":")))
    limit = render.MAX_MANIFEST_BYTES
    try:
        render.MAX_MANIFEST_BYTES = exact
        render_manifests(plan)  # exactly at the limit: fine
        render.MAX_MANIFEST_BYTES = exact - 1
        with pytest.raises(InputError):
            render_manifests(plan)
    finally:
        render.MAX_MANIFEST_BYTES = limit


@pytest.mark.parametrize("name", ["worker01", "a", "edge-7", "123", "true", "no", "0x1f", "e1"])
def test_cluster_templates_equal_a_full_dump(name: str) -> None:
    from dsf_compile.render.emit import ClusterTemplate

    def build(cluster: str) -> dict[str, Any]:
        return {
            "apiVersion": "v1",
            "kind": "X",
            "metadata": {"name": "x", "namespace": cluster},
            "spec": {"c": [cluster]},
        }

    assert ClusterTemplate(build).render(name) == dump_yaml(build(name))
    assert yaml.safe_load(ClusterTemplate(build).render(name))["metadata"]["namespace"] == name
