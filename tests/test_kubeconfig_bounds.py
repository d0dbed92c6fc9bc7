"""Kubeconfig files are read as kubectl finds them and within bounds: an explicit path is one
file whatever its characters, a file that is not a regular file, too large or an alias bomb
is a one-line error naming it, and merging many entries keeps the first of each name."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from kubernetes.config.config_exception import ConfigException

from dsf_compile.edges.kubeconfig import (
    MAX_KUBECONFIG_BYTES,
    BoundedKubeConfigMerger,
    kubeconfig_paths,
)
from tests.fleet_repo import cli, copy_fleet
from tests.hub_kube import HubKube


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    return copy_fleet(tmp_path / "fleet", with_rendered=False)


def sync_clusters(fleet: Path, kubeconfig: Path) -> tuple[int, str]:
    code, _, err = cli(
        "--root", str(fleet), "sync", "--clusters", "--hub-kubeconfig", str(kubeconfig)
    )
    return code, err


def test_an_explicit_path_with_a_colon_is_one_file(
    tmp_path: Path, fleet: Path, hub: HubKube
) -> None:
    (fleet / "clusters" / "inventory.yaml").unlink()
    hub.add_cluster("worker01", labels={"region": "eu-west"})
    kubeconfig = tmp_path / "hub:prod.kubeconfig"
    kubeconfig.write_text(hub.kubeconfig("HUB-TOKEN"), encoding="utf-8")
    code, err = sync_clusters(fleet, kubeconfig)
    assert code == 0, err
    assert "1 cluster(s) on the hub" in err


def test_a_linked_kubeconfig_is_followed(tmp_path: Path, fleet: Path, hub: HubKube) -> None:
    (fleet / "clusters" / "inventory.yaml").unlink()
    hub.add_cluster("worker01")
    target = tmp_path / "real.kubeconfig"
    target.write_text(hub.kubeconfig("HUB-TOKEN"), encoding="utf-8")
    link = tmp_path / "config"
    link.symlink_to(target)
    assert sync_clusters(fleet, link)[0] == 0


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _oversized(path: Path) -> Path:
    with path.open("wb") as file:
        file.truncate(MAX_KUBECONFIG_BYTES + 1)
    return path


def _alias_bomb(path: Path) -> Path:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [
        f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (_fifo, "is a FIFO; a regular file is expected"),
        (_oversized, f"is larger than {MAX_KUBECONFIG_BYTES} bytes"),
        (_alias_bomb, "YAML aliases expand to more than"),
    ],
)
def test_an_unreadable_kubeconfig_is_one_line_naming_it(
    tmp_path: Path, fleet: Path, make: object, says: str
) -> None:
    kubeconfig = make(tmp_path / "hub.kubeconfig")  # type: ignore[operator]
    code, err = sync_clusters(fleet, kubeconfig)
    assert code == 2
    assert err.startswith(f"dsf-compile: error: hub: --hub-kubeconfig {kubeconfig} is not usable")
    assert says in err and "Traceback" not in err and err.count("\n") == 1


def test_the_variable_is_split_and_an_explicit_path_is_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    variable = os.pathsep.join(["a", "", "~/b"])
    assert kubeconfig_paths(None, variable, "~/.kube/config") == ["a", "/home/someone/b"]
    assert kubeconfig_paths("x:y", variable, "~/.kube/config") == ["x:y"]
    assert kubeconfig_paths(None, None, "~/.kube/config") == ["/home/someone/.kube/config"]


def test_many_entries_merge_by_name_the_first_winning(tmp_path: Path) -> None:
    count = 20_000
    first = {
        "clusters": [
            {"name": f"c{i}", "cluster": {"server": "https://first"}} for i in range(count)
        ],
        "current-context": "c0",
    }
    second = {
        "clusters": [
            {"name": f"c{i}", "cluster": {"server": "https://second"}} for i in range(count + 1)
        ],
        "current-context": "other",
    }
    paths = []
    for name, document in (("first", first), ("second", second)):
        (tmp_path / name).write_text(json.dumps(document), encoding="utf-8")
        paths.append(str(tmp_path / name))
    merged = BoundedKubeConfigMerger(paths).config.value
    servers = [node.value["cluster"]["server"] for node in merged["clusters"]]
    assert servers == ["https://first"] * count + ["https://second"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("clusters: {a: b}\n", "clusters is not a list"),
        ("users: [{user: {}}]\n", "users[0] has no name"),
        ("- a list\n", "is not one mapping"),
    ],
)
def test_a_malformed_kubeconfig_says_where(tmp_path: Path, text: str, says: str) -> None:
    path = tmp_path / "config"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigException) as caught:
        BoundedKubeConfigMerger([str(path)])
    assert says in str(caught.value)
