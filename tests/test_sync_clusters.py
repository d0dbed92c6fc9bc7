"""``dsf-compile sync --clusters``: the hub's ManagedClusters, read through the real
``kubernetes`` client from the emulated API, written to ``clusters/discovered.yaml``."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from dsf_compile.commands.cli import run
from dsf_compile.pipeline.inputs import plan_fleet
from dsf_compile.render.manifests import render_manifests
from tests.fleet_repo import copy_fleet
from tests.hub_kube import HubKube

EDGE_NOTES = {
    "open-cluster-management/created-via": "other",
    "kubectl.kubernetes.io/last-applied-configuration": '{"kind":"ManagedCluster"}',
}


def sync_clusters(root: Path, kubeconfig: Path) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--root", str(root), "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig)], out, err
    )
    return code, err.getvalue()


@pytest.fixture
def fleet(tmp_path: Path, hub: HubKube) -> tuple[Path, Path]:
    root = copy_fleet(tmp_path / "fleet", with_rendered=False)
    # The hub now lists the clusters: the discovered file replaces the hand-written one.
    (root / "clusters" / "inventory.yaml").unlink()
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(hub.kubeconfig("HUB-TOKEN"), encoding="utf-8")
    hub.add_cluster("worker02", labels={"region": "us-east", "gpu": "false"})
    hub.add_cluster(
        "worker01",
        labels={"region": "eu-west", "gpu": "true"},
        spec={
            "taints": [
                {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
            ]
        },
        status={
            "clusterClaims": [
                {"name": "platform.open-cluster-management.io", "value": "AWS"},
                {"name": "id.k8s.io", "value": "c0ffee"},
            ],
            "allocatable": {"memory": "64Gi", "cpu": "16"},
            "capacity": {"cpu": "16", "memory": "64Gi"},
        },
    )
    hub.add_cluster("edge01", labels={"region": "eu-west", "gpu": "false"}, annotations=EDGE_NOTES)
    return root, kubeconfig


def test_discovered_clusters_are_written_clean_and_sorted(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    root, kubeconfig = fleet
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0, err
    assert "3 cluster(s) on the hub (joined: edge01, worker01, worker02)" in err
    text = (root / "clusters" / "discovered.yaml").read_text(encoding="utf-8")
    documents = [d for d in yaml.safe_load_all(text) if d]
    assert [d["metadata"]["name"] for d in documents] == ["edge01", "worker01", "worker02"]
    worker01 = documents[1]
    assert worker01 == {
        "apiVersion": "cluster.open-cluster-management.io/v1",
        "kind": "ManagedCluster",
        "metadata": {
            "name": "worker01",
            "labels": {
                "cluster.open-cluster-management.io/clusterset": "default",
                "gpu": "true",
                "name": "worker01",
                "region": "eu-west",
            },
        },
        "spec": {
            "hubAcceptsClient": True,
            # timeAdded kept: a toleration's tolerationSeconds counts from it
            "taints": [
                {"key": "maintenance", "effect": "NoSelect", "timeAdded": "2026-01-01T00:00:00Z"}
            ],
        },
        "status": {
            "clusterClaims": [
                {"name": "id.k8s.io", "value": "c0ffee"},
                {"name": "platform.open-cluster-management.io", "value": "AWS"},
            ],
            "allocatable": {"cpu": "16", "memory": "64Gi"},
            "capacity": {"cpu": "16", "memory": "64Gi"},
            "version": {"kubernetes": "v1.30.2"},  # CEL reads it
        },
    }
    # annotations kept too (CEL reads them), but not kubectl's copy of the whole object
    assert documents[0]["metadata"]["annotations"] == {
        "open-cluster-management/created-via": "other"
    }
    assert "last-applied-configuration" not in text
    for noise in ("uid", "resourceVersion", "managedFields", "conditions", "caBundle", "addon-"):
        assert noise not in text
    # The inventory loader reads it, and the fleet renders from it as it did before.
    files = render_manifests(plan_fleet(root))
    assert {p.split("/")[1] for p in files if p.startswith("clusters/")} == {
        "edge01",
        "worker01",
        "worker02",
        "kustomization.yaml",
    }
    # Read-only: the only requests were GETs (HubKube refuses anything else).
    assert {r.method for r in hub.server.taken()} == {"GET"}
    assert {r.headers["authorization"] for r in hub.server.taken()} == {"Bearer HUB-TOKEN"}


def test_a_joining_cluster_changes_the_file_and_nothing_else_does(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    root, kubeconfig = fleet
    assert sync_clusters(root, kubeconfig)[0] == 0
    path = root / "clusters" / "discovered.yaml"
    first = path.read_bytes()
    # Server-side churn (a new resourceVersion, conditions, addon labels): same bytes.
    hub.add_cluster("edge01", labels={"region": "eu-west", "gpu": "false"}, annotations=EDGE_NOTES)
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0 and "unchanged" in err
    assert path.read_bytes() == first
    # A new cluster joins: the file changes, and says so.
    hub.add_cluster("worker03", labels={"region": "us-east", "gpu": "false"})
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0
    assert "4 cluster(s) on the hub (joined: worker03)" in err and "updated" in err
    assert "name: worker03" in path.read_text(encoding="utf-8")
    plan = plan_fleet(root)
    assert "worker03" in {c.name for c in plan.clusters}
    # It leaves again.
    hub.delete("managedclusters", "", "worker03")
    code, err = sync_clusters(root, kubeconfig)
    assert "(left: worker03)" in err
    assert path.read_bytes() == first


def test_an_unreachable_hub_is_a_clean_error(tmp_path: Path, fleet: tuple[Path, Path]) -> None:
    root, _ = fleet
    broken = tmp_path / "broken.kubeconfig"
    broken.write_text("not: a kubeconfig\n", encoding="utf-8")
    code, err = sync_clusters(root, broken)
    assert code == 2 and "error: hub: --hub-kubeconfig" in err and "Traceback" not in err
    assert not (root / "clusters" / "discovered.yaml").exists()
    out, err_stream = io.StringIO(), io.StringIO()
    argv = ["--root", str(root), "sync", "--clusters", "--strict"]
    assert run(argv, out, err_stream) == 2
    assert "sync --clusters takes no scorer names, --strict" in err_stream.getvalue()


# ------------------------------------------- the hub's credentials, as kubectl finds them


def elsewhere(hub: HubKube, name: str, server: str) -> dict[str, Any]:
    """A kubeconfig document whose cluster, user and context are all called ``name``."""
    document = json.loads(hub.kubeconfig("HUB-TOKEN"))
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": name, "user": document["users"][0]["user"]}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        "current-context": name,
    }


def sync_with(root: Path, *options: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "sync", "--clusters", *options], out, err)
    return code, err.getvalue()


def test_kubeconfig_files_merge_as_kubectl_merges_them(
    tmp_path: Path, fleet: tuple[Path, Path], hub: HubKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, kubeconfig = fleet
    # the second file sets another current context and redefines the hub's cluster as a
    # server nobody listens on: the first file to set each wins, as with kubectl
    second = elsewhere(hub, "closed", "http://127.0.0.1:9")
    second["clusters"].append({"name": "fake", "cluster": {"server": "http://127.0.0.1:9"}})
    (tmp_path / "second.kubeconfig").write_text(json.dumps(second), encoding="utf-8")
    files = [str(tmp_path / "missing"), str(kubeconfig), str(tmp_path / "second.kubeconfig")]
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join(files))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    code, err = sync_with(root)
    assert code == 0, err
    assert "3 cluster(s) on the hub" in err
    # --context chooses: the second file's context reaches its closed port
    code, err = sync_with(root, "--context", "closed")
    assert code == 2
    assert err.startswith("dsf-compile: error: hub: cannot list managedclusters: ")
    code, err = sync_with(root, "--context", "nowhere")
    assert code == 2
    assert f"hub: $KUBECONFIG ({os.pathsep.join(files)}), context nowhere is not usable" in err
    # --hub-kubeconfig wins over $KUBECONFIG
    assert sync_with(root, "--hub-kubeconfig", str(kubeconfig))[0] == 0


def test_without_kubeconfig_the_default_file_is_read(
    tmp_path: Path, fleet: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, kubeconfig = fleet
    home = tmp_path / "home"
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(home))
    code, err = sync_with(root)
    assert code == 2
    assert "dsf-compile: error: hub: ~/.kube/config is not usable: " in err
    (home / ".kube").mkdir(parents=True)
    (home / ".kube" / "config").write_text(kubeconfig.read_text(), encoding="utf-8")
    code, err = sync_with(root)
    assert code == 0, err


def test_explain_reads_the_hub_of_a_context(
    tmp_path: Path, fleet: tuple[Path, Path], hub: HubKube, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, kubeconfig = fleet
    assert sync_clusters(root, kubeconfig)[0] == 0
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    before = len(hub.server.taken())
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), "explain", "--context", "fake"], out, err)
    assert code == 0, err.getvalue()
    assert "no scores given" not in err.getvalue()  # the hub's scores were read
    paths = {r.path for r in hub.server.taken()[before:]}
    assert any(path.endswith("/addonplacementscores") for path in paths), paths


ROW7_PLACEMENT = """\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {name: discovered-fields, namespace: default}
spec:
  predicates:
    - requiredClusterSelector:
        celSelector:
          celExpressions:
            - managedCluster.status.version.kubernetes == 'v1.30.2'
            - >-
              !has(managedCluster.metadata.annotations) ||
              managedCluster.metadata.annotations['open-cluster-management/created-via'] != 'other'
  tolerations:
    - {key: maintenance, operator: Exists, effect: NoSelect, tolerationSeconds: 3600}
"""


def _decided(root: Path, at: str) -> list[str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(
        ["--root", str(root), "explain", "default/discovered-fields", "--at", at,
         "--format", "json"],
        out,
        err,
    )  # fmt: skip
    assert code == 0, err.getvalue()
    found = yaml.safe_load(out.getvalue())
    results = found["placements"] if isinstance(found, dict) else found
    return list(results[0]["decisions"])


def test_explain_reads_what_the_hub_keeps_of_each_cluster(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    # What OCM's scheduler and CEL read is kept whole in the discovered file: taint
    # timeAdded (tolerationSeconds counts from it), annotations and status.version
    root, kubeconfig = fleet
    assert sync_clusters(root, kubeconfig)[0] == 0
    (root / "placements" / "discovered-fields.yaml").write_text(ROW7_PLACEMENT, encoding="utf-8")
    # edge01's annotation says it was created another way: CEL leaves it out; worker01's
    # maintenance taint was added at midnight and is tolerated for one hour
    assert _decided(root, "2026-01-01T00:30:00Z") == ["worker01", "worker02"]
    assert _decided(root, "2026-01-01T01:30:00Z") == ["worker02"]
    # a cluster on another Kubernetes version no longer matches
    hub.add_cluster("worker02", labels={"region": "us-east", "gpu": "false"},
                    status={"version": {"kubernetes": "v1.29.0"}})  # fmt: skip
    assert sync_clusters(root, kubeconfig)[0] == 0
    assert _decided(root, "2026-01-01T00:30:00Z") == ["worker01"]


def test_a_hub_listing_far_fewer_clusters_empties_nothing_without_the_override(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    # a wrong kubeconfig, a restored hub, an empty answer: the scheduled sync must not
    # propose removing the fleet (sync.maxClusterRemovalFraction, like the scorers' guard)
    root, kubeconfig = fleet
    assert sync_clusters(root, kubeconfig)[0] == 0
    path = root / "clusters" / "discovered.yaml"
    first = path.read_bytes()
    for name in ("edge01", "worker01", "worker02"):
        hub.delete("managedclusters", "", name)
    code, err = sync_clusters(root, kubeconfig)
    assert code == 1, err
    assert path.read_bytes() == first
    lines = err.splitlines()
    assert lines[:3] == [
        f"clusters/discovered.yaml:{n}:3: error: metadata.name: {name}: not on the hub's list"
        for n, name in _name_lines(first.decode(), "edge01", "worker01", "worker02")
    ]
    assert lines[3] == (
        "dsf-compile: error: the hub lists 0 cluster(s): removing 3 of the 3 in "
        "clusters/discovered.yaml is more than sync.maxClusterRemovalFraction (0.5) allows; "
        "the file was not changed (check that --hub-kubeconfig names the right hub, or pass "
        "--allow-mass-removal to remove them)"
    )
    assert "Traceback" not in err
    # two of three gone is still too many; one of three is an ordinary leave
    hub.add_cluster("edge01", labels={"region": "eu-west", "gpu": "false"}, annotations=EDGE_NOTES)
    assert sync_clusters(root, kubeconfig)[0] == 1 and path.read_bytes() == first
    hub.add_cluster("worker02", labels={"region": "us-east", "gpu": "false"})
    code, err = sync_clusters(root, kubeconfig)
    assert code == 0 and "(left: worker01)" in err
    # the setting moves the line (0: any removal); the flag overrides it once
    settings = root / "dsf.yaml"
    settings.write_text(
        settings.read_text(encoding="utf-8") + "sync:\n  maxClusterRemovalFraction: 0\n",
        encoding="utf-8",
    )
    hub.delete("managedclusters", "", "worker02")
    before = path.read_bytes()
    assert sync_clusters(root, kubeconfig)[0] == 1 and path.read_bytes() == before
    out, errs = io.StringIO(), io.StringIO()
    argv = ["--root", str(root), "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig)]
    assert run([*argv, "--allow-mass-removal"], out, errs) == 0, errs.getvalue()
    assert "(left: worker02)" in errs.getvalue() and path.read_bytes() != before
    # without --clusters the flag means nothing: a usage error
    assert run(["--root", str(root), "sync", "--allow-mass-removal"], out, errs) == 2


def _name_lines(text: str, *names: str) -> list[tuple[int, str]]:
    lines = text.splitlines()
    return [
        (next(i for i, line in enumerate(lines, 1) if line == f"  name: {name}"), name)
        for name in names
    ]


def test_dsf_mcp_reads_the_hub_of_a_context(
    tmp_path: Path, fleet: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from dsf_compile.commands import mcp_server
    from dsf_compile.commands.mcp_fleet import Fleet
    from dsf_compile.edges.hub import HubAccess

    root, kubeconfig = fleet
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    state = Fleet(root, None, HubAccess(None, "fake")).state()
    assert state.scores == ()  # read from the hub (none there yet), not "no scores given"
    assert mcp_server.main(["--root", str(root), "--scores", "snapshots", "--context", "x"]) == 2


LABELS = {
    "edge01": ("eu-west", "false"),
    "worker01": ("eu-west", "true"),
    "worker02": ("us-east", "false"),
}


def _item(name: str, indent: str) -> str:
    region, gpu = LABELS[name]
    return (
        f"{indent}- apiVersion: cluster.open-cluster-management.io/v1\n"
        f"{indent}  kind: ManagedCluster\n{indent}  metadata:\n{indent}    name: {name}\n"
        f'{indent}    labels: {{region: {region}, gpu: "{gpu}"}}\n'
    )


LIST_FORMS = {
    kind: f"apiVersion: v1\nkind: {kind}\nitems:\n" + "".join(_item(n, "  ") for n in LABELS)
    for kind in ("List", "ManagedClusterList")
}


@pytest.mark.parametrize("form", sorted(LIST_FORMS))
def test_the_guard_reads_every_form_validate_accepts(
    fleet: tuple[Path, Path], hub: HubKube, form: str
) -> None:
    # issue 35 row 18: a List of clusters passes validate; a hub listing none must not
    # empty it
    root, kubeconfig = fleet
    path = root / "clusters" / "discovered.yaml"
    path.write_text(LIST_FORMS[form], encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    assert run(["--root", str(root), "validate"], out, err) == 0, err.getvalue()
    before = path.read_bytes()
    for name in ("edge01", "worker01", "worker02"):
        hub.delete("managedclusters", "", name)
    code, said = sync_clusters(root, kubeconfig)
    assert code == 1, said
    assert path.read_bytes() == before
    lines = said.splitlines()
    assert lines[:3] == [
        f"clusters/discovered.yaml:{line}:7: error: items[{index}].metadata.name: {name}: "
        "not on the hub's list"
        for index, (line, name) in enumerate(((7, "edge01"), (12, "worker01"), (17, "worker02")))
    ]
    assert "removing 3 of the 3 in clusters/discovered.yaml" in said


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("kind: List\nitems: {edge01: {}}\n", "clusters/discovered.yaml:2:1: error: items: "),
        ("kind: ManagedCluster\nmetadata: [\n", "clusters/discovered.yaml:3:1: error: "),
        ("kind: Cluster\nmetadata: {name: edge01}\n", "clusters/discovered.yaml:1:1: error: kind"),
    ],
)
def test_a_form_the_guard_cannot_read_is_an_error(
    fleet: tuple[Path, Path], text: str, where: str
) -> None:
    root, kubeconfig = fleet
    path = root / "clusters" / "discovered.yaml"
    path.write_text(text, encoding="utf-8")
    code, said = sync_clusters(root, kubeconfig)
    assert code == 1, said
    assert path.read_text(encoding="utf-8") == text
    assert said.startswith(where), said
    assert said.splitlines()[-1] == (
        "dsf-compile: error: cannot tell which clusters clusters/discovered.yaml holds, so "
        "not which ones the hub's list would remove; the file was not changed (fix or remove "
        "it, or pass --allow-mass-removal to replace it)"
    )
    out, err = io.StringIO(), io.StringIO()
    argv = ["--root", str(root), "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig)]
    assert run([*argv, "--allow-mass-removal"], out, err) == 0, err.getvalue()
    assert "name: worker01" in path.read_text(encoding="utf-8")


def test_a_journal_naming_the_inventory_is_refused_before_the_hub_is_read(
    fleet: tuple[Path, Path], hub: HubKube
) -> None:
    # issue 35 row 17: sync --clusters writes clusters/discovered.yaml, nothing else there
    root, kubeconfig = fleet
    planted = root / "clusters" / "inventory.yaml"
    planted.write_text("# hand-written\n", encoding="utf-8")
    staged = root / "clusters" / ".inventory.yaml.0123456789ab.dsf-tmp"
    staged.write_text("kind: ManagedCluster\n", encoding="utf-8")
    journal = root / "clusters" / ".dsf-journal"
    journal.write_text(
        '{"journal": 1, "state": "commit", "renames": [["inventory.yaml", '
        '".inventory.yaml.0123456789ab.dsf-tmp", ""]], "removals": []}',
        encoding="utf-8",
    )
    code, said = sync_clusters(root, kubeconfig)
    assert code == 1, said
    assert said.startswith(
        "clusters/.dsf-journal:1:1: error: renames[0]: names inventory.yaml, which "
        "'sync --clusters' never writes here (it writes discovered.yaml)"
    ), said
    assert not hub.server.taken()  # nothing asked of the hub
    assert planted.read_text(encoding="utf-8") == "# hand-written\n"
    assert staged.exists() and journal.exists()
    assert not (root / "clusters" / "discovered.yaml").exists()
