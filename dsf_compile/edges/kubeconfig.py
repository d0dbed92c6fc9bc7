"""Kubeconfig files, found and merged as kubectl does, read within bounds.

The ``kubernetes`` client's own merger splits every path on ``:`` (an explicit
``--hub-kubeconfig`` with a colon in its name becomes two missing files), reads each file
whole into ``yaml.safe_load`` (an alias bomb or a multi-gigabyte file, a FIFO that never
ends, all held in memory) and merges by scanning every entry already merged for each new
one (quadratic in the entries). Here an explicit file is one path, as kubectl's
``--kubeconfig``; ``$KUBECONFIG`` is split on ``os.pathsep``; each file must be a regular
file (links are followed: a kubeconfig lives outside the repository, often linked) of at
most :data:`MAX_KUBECONFIG_BYTES`, parsed by the house's bounded YAML reader, and merged
by name in one pass. The result feeds the client's own loader unchanged.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import ConfigNode, KubeConfigMerger

from dsf_compile.edges.files import read_regular_file
from dsf_contract.bounded_yaml import parse_yaml

__all__ = ["MAX_KUBECONFIG_BYTES", "BoundedKubeConfigMerger", "kubeconfig_paths"]

#: Largest kubeconfig file read. Embedded certificates make a context a few KiB; a file of
#: thousands of contexts stays far below this.
MAX_KUBECONFIG_BYTES = 4 * 1024 * 1024
#: The lists a kubeconfig merges by name, as kubectl does (the first file to name one wins).
MERGED_LISTS = ("clusters", "contexts", "users")


def kubeconfig_paths(explicit: str | None, variable: str | None, default: str) -> list[str]:
    """The files to merge: ``explicit`` alone, else ``variable`` split on ``os.pathsep``
    (empty parts skipped), else ``default``; each with ``~`` expanded."""
    if explicit:
        named = [explicit]
    elif variable:
        named = [part for part in variable.split(os.pathsep) if part]
    else:
        named = [default]
    return [os.path.expanduser(path) for path in named]


class BoundedKubeConfigMerger(KubeConfigMerger):
    """The client's merger, given a list of paths and reading each within bounds."""

    def __init__(self, paths: list[str]) -> None:
        self._names: dict[str, set[str]] = {item: set() for item in MERGED_LISTS}
        super().__init__(paths)  # type: ignore[no-untyped-call]

    def _load_config_from_file_path(self, paths: list[str]) -> None:
        for path in paths:
            if os.path.exists(path):  # a missing file is skipped, as kubectl skips it
                self.paths.append(path)
                self.load_config(path)

    def load_config(self, path: str) -> None:
        config = _read_kubeconfig(path)
        if self.config_merged is None:
            merged = dict(config)
            for item in MERGED_LISTS:
                merged[item] = []
            self.config_merged = ConfigNode(path, merged, path)  # type: ignore[no-untyped-call]
        for item in MERGED_LISTS:
            self._merge(item, _entries(config, item, path), path)
        if "current-context" in config:
            self.config.value["current-context"] = config["current-context"]
        self.config_files[path] = config

    def _merge(self, item: str, add_cfg: list[Mapping[str, Any]], path: str) -> None:
        names = self._names[item]
        for new_item in add_cfg:
            if new_item["name"] not in names:
                names.add(new_item["name"])
                node = ConfigNode(f"{path}/{new_item}", new_item, path)  # type: ignore[no-untyped-call]
                self.config.value[item].append(node)


def _read_kubeconfig(path: str) -> dict[str, Any]:
    """One kubeconfig file as a mapping; a :class:`ConfigException` naming what is wrong."""
    try:
        data = read_regular_file(path, max_bytes=MAX_KUBECONFIG_BYTES, follow_links=True)
        text = data.decode("utf-8")
    except OSError as err:
        raise ConfigException(f"{path}: {err.strerror or err}") from None
    except UnicodeDecodeError:
        raise ConfigException(f"{path}: not UTF-8 text") from None
    documents, problems = parse_yaml(text, path)
    if problems:
        raise ConfigException(problems[0].format())
    if len(documents) != 1 or not isinstance(documents[0].data, dict):
        raise ConfigException(f"Invalid kube-config. {path} is not one mapping")
    return documents[0].data


def _entries(config: Mapping[str, Any], item: str, path: str) -> list[Mapping[str, Any]]:
    """``config[item]``, each entry a mapping with a string ``name``."""
    entries = config.get(item) or []
    if not isinstance(entries, list):
        raise ConfigException(f"{path}: {item} is not a list")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise ConfigException(f"{path}: {item}[{index}] has no name")
    return entries
