"""``validate``'s Placement warnings, computed on groups of look-alike clusters, equal the
warnings of scheduling every Placement against every cluster (the plain algorithm)."""

from __future__ import annotations

import re
from collections import Counter
from datetime import UTC, datetime
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from bench.validate_bench import generate_fleet
from dsf_compile.inputs.selectors import selects_cluster
from dsf_compile.pipeline.inputs import load_inputs
from dsf_compile.placement.checks import check_placements
from dsf_compile.placement.cluster_groups import inventory_clusters
from dsf_compile.placement.published_scores import score_catalog
from dsf_compile.placement.scheduler import schedule

AT = datetime(2026, 11, 22, tzinfo=UTC)
MASKED = re.compile(r"score '(?P<score>[^']+)' is masked on (?P<masked>\d+) of the (?P<of>\d+) ")


def plain_masked_counts(root: Path) -> dict[tuple[str, str], tuple[int, int]]:
    """(Placement, score) → (masked, selectable), every Placement against every cluster."""
    inputs = load_inputs(root)
    catalog = score_catalog(inputs, None)
    clusters = inventory_clusters(inputs)
    models = {c.model.metadata.name: c.model for c in inputs.clusters}
    bindings = [b.model for b in inputs.bindings]
    found = {}
    for located in inputs.placements:
        result = schedule(located.model, clusters, bindings, None, (), AT)
        for configuration in located.model.spec.prioritizerPolicy.configurations:
            addon = configuration.scoreCoordinate.addOn
            assert addon is not None
            score = catalog.scores[addon.resourceName].score_name
            masked = [
                name
                for name in result.ranking
                if any(
                    fnmatchcase(score, mask.scoreName)
                    and selects_cluster(mask, name, models[name].metadata.labels)
                    for mask in inputs.masks
                )
            ]
            found[located.model.metadata.name, score] = (len(masked), len(result.ranking))
    return found


def test_grouped_warnings_equal_the_plain_algorithm(tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    generate_fleet(root, 90, 6, 24)
    # a taint on some clusters, tolerated by some Placements; a claim selector on others
    inventory = root / "clusters/inventory.yaml"
    clusters = list(yaml.safe_load_all(inventory.read_text()))
    for index, cluster in enumerate(clusters):
        if index % 7 == 0:  # across regions and GPU labels
            cluster["spec"] = {"taints": [{"key": "maintenance", "effect": "NoSelect"}]}
        if index % 5 == 0:
            cluster["status"] = {"clusterClaims": [{"name": "tier", "value": "gold"}]}
    inventory.write_text(yaml.safe_dump_all(clusters))
    placements = root / "placements/placements.yaml"
    documents = list(yaml.safe_load_all(placements.read_text()))
    for index, placement in enumerate(documents):
        if index % 3 == 0:
            placement["spec"]["tolerations"] = [{"key": "maintenance", "operator": "Exists"}]
        if index % 4 == 1:
            selector = placement["spec"]["predicates"][0]["requiredClusterSelector"]
            selector["claimSelector"] = {
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]
            }
    placements.write_text(yaml.safe_dump_all(documents))

    inputs = load_inputs(root)
    _, warnings = check_placements(inputs, score_catalog(inputs, None), AT)
    expected = plain_masked_counts(root)
    assert any(masked for masked, _ in expected.values())  # the case is not trivial
    told = Counter(
        (found["score"], int(found["masked"]), int(found["of"]))
        for w in warnings
        if (found := MASKED.search(w.message))
    )
    assert told == Counter(
        (score, masked, selectable)
        for (_, score), (masked, selectable) in expected.items()
        if masked and selectable
    )
