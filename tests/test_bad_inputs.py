"""The bad-input corpus: every case fails cleanly.

Each case starts from a small valid fleet (``tests/bad_inputs/base`` plus a lockfile
made here with :func:`dsf_compile.sync.lock.make_entry`), renders it once, then writes the
case's files and runs ``render`` (and ``validate`` where the inputs alone show the
problem). Every case must exit 1, print first the problem it is about as
``PATH:LINE:COL: error: FIELD: MESSAGE``, show no traceback, and leave ``rendered/``
byte-for-byte as it was.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from dsf_compile.commands.cli import run
from dsf_compile.inputs.load import MAX_FILE_BYTES
from dsf_compile.inputs.names import MAX_DERIVED_FILE_NAME_BYTES
from dsf_compile.sync.lock import encode_lockfile, write_lockfile
from tests.bad_input_base import BASE, BASE_CONFIGS, base_lock

PROBLEM_LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+):(?P<column>\d+): error: (?P<rest>.*)$")


# --------------------------------------------------------------- file contents


@dataclass(frozen=True)
class Symlink:
    """A symbolic link to ``target`` (relative to the link's folder)."""

    target: str


@dataclass(frozen=True)
class Fifo:
    """A named pipe (opening it for reading would block until a writer comes)."""


@dataclass(frozen=True)
class Folder:
    """An empty directory."""


@dataclass(frozen=True)
class Padded:
    """A valid copy of the base file ``source``, padded with comment lines to ``size`` bytes."""

    source: str
    size: int


Content = str | bytes | Symlink | Fifo | Folder | Padded


def _base(path: str) -> str:
    return (BASE / path).read_text(encoding="utf-8")


def _edit(path: str, old: str, new: str) -> dict[str, Content]:
    """The base file ``path`` with its one occurrence of ``old`` replaced by ``new``."""
    text = _base(path)
    assert text.count(old) == 1, f"{old!r} must occur once in {path}"
    return {path: text.replace(old, new)}


def _lock_with_config(name: str, edit: Mapping[str, Any]) -> dict[str, Content]:
    """A lockfile whose /config of ``name`` has ``edit`` applied (dotted paths; None deletes)."""
    config = json.loads(json.dumps(BASE_CONFIGS[name]))
    for dotted, value in edit.items():
        *parents, last = dotted.split(".")
        node = config
        for part in parents:
            node = node[part]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return {"dsf.lock.json": encode_lockfile(base_lock({**BASE_CONFIGS, name: config}))}


def _lock_with_raw_config(name: str, dotted: str, value: Any) -> dict[str, Content]:
    """A lockfile whose /config of ``name`` holds ``value`` at ``dotted``, written as JSON as is."""
    lock = json.loads(encode_lockfile(base_lock(BASE_CONFIGS)))
    node = lock["scorers"][name]["config"]
    *parents, last = dotted.split(".")
    for part in parents:
        node = node[part]
    node[last] = value
    return {"dsf.lock.json": json.dumps(lock, indent=2) + "\n"}


def _write(root: Path, relative: str, content: Content) -> None:
    file = root / relative
    file.parent.mkdir(parents=True, exist_ok=True)
    if file.is_dir() and not file.is_symlink():
        shutil.rmtree(file)
    elif file.exists() or file.is_symlink():
        file.unlink()
    if isinstance(content, Symlink):
        file.symlink_to(content.target)
    elif isinstance(content, Fifo):
        os.mkfifo(file)
    elif isinstance(content, Folder):
        file.mkdir()
    elif isinstance(content, Padded):
        data = _base(content.source).encode()
        line = b"# " + b"x" * 1021 + b"\n"
        file.write_bytes(data + line * ((content.size - len(data)) // len(line) + 1))
    elif isinstance(content, bytes):
        file.write_bytes(content)
    else:
        file.write_text(content, encoding="utf-8")


# ------------------------------------------------------------------- the cases

SCORER = "scorers/static-scorer.yaml"
FULL = "scorers/cpu-scorer.yaml"
INVENTORY = "clusters/inventory.yaml"
MASKS = "clusters/dynamic-scoring-config.yaml"
SETTINGS = "dsf.yaml"
LOCK = "dsf.lock.json"

BILLION_LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
"""

NEW_FULL_SCORER = """\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: DynamicScorer
metadata:
  name: new-scorer
spec:
  description: Added without running sync
  configURL: http://new-scorer.dynamic-scoring.svc:8000/config
  configSyncMode: Full
  scoreDestination: AddOnPlacementScore
"""

LONG_SCORER = ".".join(["s" * 63, "t" * 63, "u" * 63, "v" * 59])  # 251: 256 bytes with .yaml
LONG_POLICY = ".".join(["p" * 63, "q" * 63, "r" * 63, "s" * 61])  # 253: 265 bytes as policy-….yaml
#: Issue 25's regression: 252 bytes as policy-….yaml, 274 as the file render stages.
POLICY_240 = ".".join(["p" * 63, "q" * 63, "r" * 63, "s" * 48])
#: 240 bytes as placementbinding-….yaml: under 255, but not its staged copy (+22).
BINDING_218 = ".".join(["b" * 63, "c" * 63, "d" * 63, "e" * 26])
#: The longest binding name whose staged copy still fits: 211 characters.
BINDING_211 = BINDING_218[:-7]

BINDING = """\
apiVersion: policy.open-cluster-management.io/v1
kind: PlacementBinding
metadata: {name: %s, namespace: default}
placementRef:
  name: placement-a
  kind: Placement
  apiGroup: cluster.open-cluster-management.io
subjects:
  - name: policy-a
    kind: Policy
    apiGroup: policy.open-cluster-management.io
"""


def _optimization(namespace: str, name: str) -> str:
    return f"""\
apiVersion: dynamic-scoring.open-cluster-management.io/v1alpha1
kind: PlacementOptimization
metadata:
  name: {name}
  namespace: {namespace}
spec:
  preference:
    addOnPlacementScore: static-score
    scoreDimensionFormat: "${{app}};${{device}}"
  clusters:
    - name: worker01
      availablePolicies: [policy-a]
  targetWorkloads: [mwrs-a]
"""


def _placement(name: str, score_name: str = "app;gpu") -> str:
    return f"""\
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: {name}
  namespace: default
spec:
  prioritizerPolicy:
    configurations:
      - scoreCoordinate:
          type: AddOn
          addOn:
            resourceName: static-score
            scoreName: {score_name}
"""


POLICY = """\
apiVersion: policy.open-cluster-management.io/v1
kind: Policy
metadata:
  name: %s
  namespace: default
spec: {disabled: false}
"""

WORKLOAD = """\
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata:
  name: mwrs-a
  namespace: default
spec:
  placementRefs:
    - name: %s
"""


PROMETHEUS_SOURCE = """\
    type: Prometheus
    host: http://prometheus.monitoring.svc:9090
    path: /api/v1/query_range
    params: {query: up, range: %d, step: %d}"""


class Case(NamedTuple):
    """One bad input: the files written over the base, and the first problem expected.

    ``field`` is the exact dotted field of the first problem ("" for a whole file or
    document); ``message`` is a regular expression searched in the rest of the line;
    ``validate`` says whether ``validate`` (inputs only, no lockfile) must fail the same way.
    """

    id: str
    files: Mapping[str, Content]
    path: str
    line: int
    field: str
    message: str
    validate: bool = True


CASES = [
    # -- YAML that cannot be read
    Case(
        "malformed-unclosed-flow",
        _edit(SCORER, "type: None", "type: [None"),
        SCORER,
        13,
        "",
        "invalid YAML",
    ),
    Case(
        "malformed-mapping-in-scalar",
        _edit(SCORER, "A static score", "A static: score"),
        SCORER,
        7,
        "",
        "invalid YAML",
    ),
    Case(
        "malformed-tab-indent",
        _edit(SCORER, "    type: None", "\ttype: None"),
        SCORER,
        12,
        "",
        "invalid YAML",
    ),
    Case(
        "duplicate-key",
        _edit(SCORER, "  source:\n", "  configSyncMode: Full\n  source:\n"),
        SCORER,
        11,
        "spec.configSyncMode",
        "duplicate key",
    ),
    Case(
        "duplicate-top-level-key",
        _edit(SCORER, "metadata:\n", "kind: DynamicScorer\nmetadata:\n"),
        SCORER,
        4,
        "kind",
        "duplicate key",
    ),
    Case(
        "alias-bomb",
        {SCORER: BILLION_LAUGHS},
        SCORER,
        5,
        "e[0]",
        "aliases expand to more than 10000 nodes",
    ),
    Case(
        "deep-nesting",
        {SCORER: "[" * 100_000 + "]" * 100_000},
        SCORER,
        1,
        "",
        "nested deeper than 64 levels",
    ),
    Case("empty-file", {"scorers/empty.yaml": ""}, "scorers/empty.yaml", 0, "", "file is empty"),
    Case(
        "blank-file",
        {"scorers/blank.yaml": "\n  \n\n"},
        "scorers/blank.yaml",
        0,
        "",
        "file is empty",
    ),
    Case(
        "huge-file",
        {SCORER: Padded(SCORER, MAX_FILE_BYTES + 1)},
        SCORER,
        0,
        "",
        "larger than 10 MiB",
    ),
    Case(
        "not-utf8",
        {SCORER: _base(SCORER).replace("A static", "Caf\xe9 static").encode("latin-1")},
        SCORER,
        7,
        "",
        "not UTF-8",
    ),
    Case("nul-byte", {SCORER: _base(SCORER) + "\x00"}, SCORER, 1, "", "NUL byte"),
    Case(
        "non-string-key",
        _edit(SCORER, "spec:\n", "  42: answer\nspec:\n"),
        SCORER,
        6,
        "metadata",
        "key '42' must be a string",
    ),
    Case(
        "merge-key",
        _edit(SCORER, "      name: static_score", "      <<: {name: static_score}"),
        SCORER,
        16,
        "spec.scoring.params",
        "merge keys",
    ),
    Case(
        "unsafe-tag",
        _edit(SCORER, "description: A static", "description: !!python/name:os.system A static"),
        SCORER,
        7,
        "spec.description",
        r"^YAML tag !!python/name:os\.system is not supported",
    ),
    Case(
        "tag-on-sequence",
        _edit(
            SCORER,
            "description: A static score per application",
            'description: !!python/object/apply:os.system ["echo pwned"]',
        ),
        SCORER,
        7,
        "spec.description",
        r"^YAML tag !!python/object/apply:os\.system is not supported",
    ),
    Case(
        "tag-on-mapping",
        _edit(SCORER, "  scoring:\n", "  scoring: !!python/object:dsf.Scoring\n"),
        SCORER,
        13,
        "spec.scoring",
        r"^YAML tag !!python/object:dsf\.Scoring is not supported",
    ),
    Case(
        "tag-set-on-labels",
        _edit(INVENTORY, '  labels:\n    gpu: "true"', "  labels: !!set {gpu}"),
        INVENTORY,
        5,
        "metadata.labels",
        r"^YAML tag !!set is not supported",
    ),
    Case(
        "tag-local-on-integer",
        _edit(SCORER, "interval: 60", "interval: !seconds 60"),
        SCORER,
        17,
        "spec.scoring.params.interval",
        r"^YAML tag !seconds is not supported",
    ),
    Case(
        "tag-on-key",
        _edit(SCORER, "  description:", "  !!python/name:os.system description:"),
        SCORER,
        7,
        "spec",
        r"^YAML tag !!python/name:os\.system on a key is not supported",
    ),
    Case(
        "tag-on-document",
        {SCORER: "--- !!python/object:dsf.Scorer\n" + _base(SCORER)},
        SCORER,
        1,
        "",
        r"^YAML tag !!python/object:dsf\.Scorer is not supported",
    ),
    # -- documents of the wrong shape or kind
    Case(
        "list-instead-of-mapping",
        {SCORER: "- name: static-scorer\n- kind: DynamicScorer\n"},
        SCORER,
        1,
        "",
        "must be a mapping",
    ),
    Case("scalar-document", {SCORER: "just some text\n"}, SCORER, 1, "", "must be a mapping"),
    Case(
        "wrong-kind-in-scorers",
        _edit(SCORER, "kind: DynamicScorer", "kind: ManagedCluster"),
        SCORER,
        3,
        "kind",
        "DynamicScorer documents only",
    ),
    Case(
        "missing-kind",
        _edit(SCORER, "kind: DynamicScorer\n", ""),
        SCORER,
        2,
        "kind",
        "DynamicScorer",
    ),
    Case(
        "wrong-api-version",
        _edit(SCORER, "/v1alpha1", "/v1beta1"),
        SCORER,
        2,
        "apiVersion",
        "must be one of",
    ),
    Case(
        "unknown-kind-in-clusters",
        {"clusters/extra.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"},
        "clusters/extra.yaml",
        2,
        "kind",
        "ManagedCluster",
    ),
    Case(
        "cluster-list-items-not-a-list",
        {"clusters/extra.yaml": "apiVersion: v1\nkind: List\nitems: {a: b}\n"},
        "clusters/extra.yaml",
        3,
        "items",
        "must be a list",
    ),
    Case(
        "cluster-list-item-wrong-kind",
        {"clusters/extra.yaml": "apiVersion: v1\nkind: List\nitems:\n  - kind: Pod\n"},
        "clusters/extra.yaml",
        4,
        "items[0].kind",
        "must be ManagedCluster",
    ),
    # -- unknown, missing and mistyped fields
    Case(
        "unknown-field-did-you-mean",
        _edit(SCORER, "  source:\n", "  locaton: Internal\n  source:\n"),
        SCORER,
        11,
        "spec.locaton",
        "did you mean 'location'",
    ),
    Case(
        "unknown-field-known-elsewhere",
        _edit(SCORER, "spec:\n", "labels: {team: a}\nspec:\n"),
        SCORER,
        6,
        "labels",
        r"^unknown field$",
    ),
    Case(
        "unknown-field-with-line-break",
        _edit(SCORER, "spec:\n", '"team\\nlead": a\nspec:\n'),
        SCORER,
        6,
        '["team\\nlead"]',
        "^unknown field$",
    ),
    Case(
        "missing-description",
        _edit(SCORER, "  description: A static score per application\n", ""),
        SCORER,
        6,
        "spec.description",
        "required field is missing",
    ),
    Case(
        "missing-metadata-name",
        _edit(SCORER, "  name: static-scorer", "  labels: {team: a}"),
        SCORER,
        4,
        "metadata.name",
        "required field is missing",
    ),
    Case(
        "interval-as-string",
        _edit(SCORER, "interval: 60", 'interval: "60"'),
        SCORER,
        17,
        "spec.scoring.params.interval",
        "must be an integer",
    ),
    Case(
        "interval-as-float",
        _edit(SCORER, "interval: 60", "interval: 60.5"),
        SCORER,
        17,
        "spec.scoring.params.interval",
        "must be an integer",
    ),
    Case(
        "description-as-number",
        _edit(SCORER, "A static score per application", "42"),
        SCORER,
        7,
        "spec.description",
        'quote it: "42"',
    ),
    Case(
        "description-as-float-written-with-exponent",
        _edit(SCORER, "A static score per application", "1.5e+3"),
        SCORER,
        7,
        "spec.description",
        r'quote it: "1\.5e\+3"',
    ),
    Case(
        "name-null",
        _edit(SCORER, "name: static-scorer", "name: null"),
        SCORER,
        5,
        "metadata.name",
        r"^must be a string, not null \(no value is written here\)$",
    ),
    Case(
        "name-without-value",
        _edit(SCORER, "name: static-scorer", "name:"),
        SCORER,
        5,
        "metadata.name",
        r"^must be a string, not null",
    ),
    Case(
        "description-too-long",
        _edit(SCORER, "A static score per application", "x" * 2_000_000),
        SCORER,
        7,
        "spec.description",
        "must be at most 4096 characters",
    ),
    Case(
        "interval-beyond-int64",
        _edit(SCORER, "interval: 60", "interval: " + "1" + "0" * 26),
        SCORER,
        17,
        "spec.scoring.params.interval",
        r"must be <= 9223372036854775807 \(a 64-bit integer\)",
    ),
    Case(
        "description-as-list",
        _edit(SCORER, "A static score per application", "[a, b]"),
        SCORER,
        7,
        "spec.description",
        "must be a string",
    ),
    Case(
        "spec-empty",
        {SCORER: _base(SCORER).split("spec:")[0] + "spec:\n"},
        SCORER,
        6,
        "spec",
        "must be a mapping",
    ),
    Case(
        "labels-as-list",
        _edit(INVENTORY, '    gpu: "false"', "    - gpu"),
        INVENTORY,
        12,
        "metadata.labels",
        "must be a mapping",
    ),
    # -- enumerations
    Case(
        "bad-sync-mode",
        _edit(SCORER, "configSyncMode: None", "configSyncMode: Partial"),
        SCORER,
        9,
        "spec.configSyncMode",
        "must be one of: Full, None",
    ),
    Case(
        "bad-score-destination",
        _edit(SCORER, "scoreDestination: AddOnPlacementScore", "scoreDestination: Placement"),
        SCORER,
        10,
        "spec.scoreDestination",
        "AddOnPlacementScore",
    ),
    Case(
        "bad-source-type",
        _edit(SCORER, "type: None", "type: Graphite"),
        SCORER,
        12,
        "spec.source.type",
        "must be one of: Prometheus, None",
    ),
    Case(
        "bad-location",
        _edit(SCORER, "  source:\n", "  location: Elsewhere\n  source:\n"),
        SCORER,
        11,
        "spec.location",
        "Internal, External",
    ),
    # -- URLs
    Case(
        "url-ftp-scheme",
        _edit(SCORER, "configURL: http://", "configURL: ftp://"),
        SCORER,
        8,
        "spec.configURL",
        "http:// or https://",
    ),
    Case(
        "url-relative",
        _edit(SCORER, "http://static-scorer.dynamic-scoring.svc:8000/config", "/config"),
        SCORER,
        8,
        "spec.configURL",
        "http:// or https://",
    ),
    Case(
        "url-without-host",
        _edit(SCORER, "http://static-scorer.dynamic-scoring.svc:8000/config", "http:///config"),
        SCORER,
        8,
        "spec.configURL",
        "must name a host",
    ),
    Case(
        "url-with-credentials",
        _edit(SCORER, "http://static-scorer", "http://user:pass@static-scorer"),
        SCORER,
        8,
        "spec.configURL",
        "credentials",
    ),
    Case(
        "url-port-out-of-range",
        _edit(SCORER, ":8000/config", ":99999/config"),
        SCORER,
        8,
        "spec.configURL",
        "not a valid URL",
    ),
    Case(
        "url-with-space",
        _edit(SCORER, "static-scorer.dynamic", "static scorer.dynamic"),
        SCORER,
        8,
        "spec.configURL",
        "white space",
    ),
    Case(
        "scoring-host-ftp",
        _edit(
            SCORER, "    path: /scoring", "    host: ftp://static-scorer:8000\n    path: /scoring"
        ),
        SCORER,
        14,
        "spec.scoring.host",
        "http:// or https://",
    ),
    Case(
        "config-url-with-secret-query",
        _edit(
            SCORER,
            "configURL: http://static-scorer.dynamic-scoring.svc:8000/config",
            "configURL: http://static-scorer.dynamic-scoring.svc:8000/config?access_token=abc",
        ),
        SCORER,
        8,
        "spec.configURL",
        "secret query parameter",
    ),
    Case(
        "settings-url-with-credentials",
        _edit(SETTINGS, "https://github.com", "https://bot:ghp_x@github.com"),
        SETTINGS,
        4,
        "repository.url",
        "URL carries credentials",
    ),
    Case(
        "settings-repository-url-not-a-url",
        _edit(SETTINGS, "url: https://github.com/acme/dsf-fleet.git", 'url: "not a url"'),
        SETTINGS,
        4,
        "repository.url",
        r"must be an https://, http:// or ssh:// URL",
    ),
    Case(
        "settings-repository-url-scp-form",
        _edit(SETTINGS, "https://github.com/acme/dsf-fleet.git", "git@github.com:example/x.git"),
        SETTINGS,
        4,
        "repository.url",
        r"no scp-style host:path address; write it with ssh://",
    ),
    # -- names
    Case(
        "name-upper-case",
        _edit(SCORER, "name: static-scorer", "name: Static-Scorer"),
        SCORER,
        5,
        "metadata.name",
        "DNS-1123 subdomain",
    ),
    Case(
        "name-path-traversal",
        _edit(SCORER, "name: static-scorer", "name: ../x"),
        SCORER,
        5,
        "metadata.name",
        "DNS-1123 subdomain",
    ),
    Case(
        "name-with-trailing-line-break",
        _edit(SCORER, "name: static-scorer", 'name: "static-scorer\\n"'),
        SCORER,
        5,
        "metadata.name",
        "DNS-1123 subdomain",
    ),
    Case(
        "name-300-characters",
        _edit(SCORER, "name: static-scorer", "name: " + "s" * 300),
        SCORER,
        5,
        "metadata.name",
        "at most 253",
    ),
    Case(
        "cluster-name-64-characters",
        _edit(INVENTORY, "name: edge01", "name: " + "e" * 64),
        INVENTORY,
        11,
        "metadata.name",
        "at most 63",
    ),
    Case(
        "cluster-name-with-dot",
        _edit(INVENTORY, "name: edge01", "name: edge.01"),
        INVENTORY,
        11,
        "metadata.name",
        "DNS-1123 label",
    ),
    Case(
        "secret-name-not-dns",
        _edit(FULL, "name: api-auth-secret", "name: API_Secret"),
        FULL,
        19,
        "spec.scoring.auth.tokenSecretRef.name",
        "DNS-1123 subdomain",
    ),
    Case(
        "namespace-not-hub",
        _edit(SCORER, "spec:\n", "  namespace: elsewhere\nspec:\n"),
        SCORER,
        6,
        "metadata.namespace",
        "hub namespace",
    ),
    Case(
        "unsafe-file-name",
        {"scorers/my scorer.yaml": _base(SCORER)},
        "scorers/my scorer.yaml",
        0,
        "",
        "file name must be",
    ),
    Case(
        "symlink",
        {"scorers/link.yaml": Symlink("static-scorer.yaml")},
        "scorers/link.yaml",
        0,
        "",
        "not a link",
    ),
    Case(
        "label-value-yes",
        _edit(INVENTORY, 'gpu: "true"', "gpu: yes"),
        INVENTORY,
        6,
        "metadata.labels.gpu",
        'quote it: "yes"',
    ),
    # -- files that would be left out
    Case(
        "scorer-in-a-sub-folder",
        {"scorers/team-a/x.yaml": _base(SCORER).replace("interval: 60", "interval: 0")},
        "scorers/team-a/x.yaml",
        17,
        "spec.scoring.params.interval",
        "must be > 0",
    ),
    Case(
        "scorer-with-upper-case-extension",
        {"scorers/x.YAML": _base(SCORER).replace("interval: 60", "interval: 0")},
        "scorers/x.YAML",
        17,
        "spec.scoring.params.interval",
        "must be > 0",
    ),
    Case(
        "scorer-copy-in-a-sub-folder",
        {"scorers/team-a/copy.yml": _base(SCORER)},
        "scorers/team-a/copy.yml",
        5,
        "metadata.name",
        "duplicate scorer name 'static-scorer'",
    ),
    Case(
        "file-that-is-not-read",
        {"scorers/x.json": '{"kind": "DynamicScorer"}'},
        "scorers/x.json",
        0,
        "",
        r"is not read: only \*\.yaml and \*\.yml files are",
    ),
    Case(
        "file-that-is-not-read-in-clusters",
        {"clusters/team-a/more.yaml.bak": _base(INVENTORY)},
        "clusters/team-a/more.yaml.bak",
        0,
        "",
        "is not read",
    ),
    Case(
        "scorers-folder-is-a-link",
        {"elsewhere/static-scorer.yaml": _base(SCORER), "scorers": Symlink("elsewhere")},
        "scorers",
        0,
        "",
        "^must be a folder$",
    ),
    Case(
        "linked-folder",
        {"scorers/elsewhere": Symlink("../clusters")},
        "scorers/elsewhere",
        0,
        "",
        "not a link",
    ),
    # -- duplicates and collisions
    Case(
        "duplicate-scorer-name",
        {"scorers/zz-copy.yaml": _base(SCORER)},
        "scorers/zz-copy.yaml",
        5,
        "metadata.name",
        "duplicate scorer name 'static-scorer'",
    ),
    Case(
        "duplicate-cluster-name",
        _edit(INVENTORY, "name: edge01", "name: worker01"),
        INVENTORY,
        11,
        "metadata.name",
        "duplicate cluster name 'worker01'",
    ),
    Case(
        "duplicate-score-name",
        _edit(SCORER, "name: static_score", "name: cpu_score"),
        SCORER,
        16,
        "spec.scoring.params.name",
        "also the score of scorer 'cpu-scorer'",
        validate=False,
    ),
    Case(
        "sanitized-score-collision",
        _edit(SCORER, "name: static_score", "name: cpu-score"),
        SCORER,
        16,
        "spec.scoring.params.name",
        "both become AddOnPlacementScore 'cpu-score'",
        validate=False,
    ),
    Case(
        "empty-score-name",
        _edit(SCORER, "name: static_score", 'name: ""'),
        SCORER,
        16,
        "spec.scoring.params.name",
        "must not be empty",
    ),
    # -- masks
    Case(
        "mask-matches-no-cluster",
        _edit(
            MASKS,
            '    - clusterSelector:\n        matchLabels:\n          gpu: "false"',
            "    - clusterName: worker99",
        ),
        MASKS,
        7,
        "spec.masks[0].clusterName",
        "matches no cluster",
    ),
    Case(
        "mask-selector-matches-no-cluster",
        _edit(MASKS, 'gpu: "false"', 'gpu: "maybe"'),
        MASKS,
        7,
        "spec.masks[0].clusterSelector",
        "matches no cluster",
    ),
    Case(
        "mask-matches-no-score",
        _edit(MASKS, "scoreName: cpu_score", "scoreName: cpu_scroe"),
        MASKS,
        10,
        "spec.masks[0].scoreName",
        "matches no score",
        validate=False,
    ),
    Case(
        "mask-without-cluster-part",
        _edit(
            MASKS,
            '    - clusterSelector:\n        matchLabels:\n          gpu: "false"\n      scoreName',
            "    - scoreName",
        ),
        MASKS,
        7,
        "spec.masks[0]",
        "needs clusterName",
    ),
    Case(
        "mask-expression-without-values",
        _edit(
            MASKS,
            'matchLabels:\n          gpu: "false"',
            "matchExpressions:\n          - {key: gpu, operator: In}",
        ),
        MASKS,
        9,
        "spec.masks[0].clusterSelector.matchExpressions[0]",
        "needs a non-empty values list",
    ),
    Case(
        "second-dynamic-scoring-config",
        {"clusters/more-config.yaml": _base(MASKS)},
        "clusters/more-config.yaml",
        4,
        "metadata.name",
        "a second DynamicScoringConfig",
    ),
    Case(
        "config-with-another-name",
        _edit(MASKS, "name: dynamic-scoring-config", "name: my-config"),
        MASKS,
        4,
        "metadata.name",
        "must be dynamic-scoring-config",
    ),
    # -- placeholders, ranges, steps, intervals
    Case(
        "unknown-placeholder",
        _edit(SCORER, "  source:\n", '  scoreDimensionFormat: "${app};${host}"\n  source:\n'),
        SCORER,
        11,
        "spec.scoreDimensionFormat",
        r"unknown placeholder \$\{host\}",
    ),
    Case(
        "interval-zero",
        _edit(SCORER, "interval: 60", "interval: 0"),
        SCORER,
        17,
        "spec.scoring.params.interval",
        "must be > 0",
    ),
    Case(
        "interval-negative",
        _edit(SCORER, "interval: 60", "interval: -30"),
        SCORER,
        17,
        "spec.scoring.params.interval",
        "must be > 0",
    ),
    Case(
        "range-zero",
        _edit(
            FULL,
            "    path: /api/v1/query_range\n",
            "    path: /api/v1/query_range\n    params: {range: 0}\n",
        ),
        FULL,
        16,
        "spec.source.params.range",
        "must be > 0",
    ),
    Case(
        "step-longer-than-range",
        _edit(SCORER, "    type: None", PROMETHEUS_SOURCE % (60, 120)),
        SCORER,
        15,
        "spec.source.params.step",
        "step 120 s is longer than range 60 s",
        validate=False,
    ),
    Case(
        "too-many-points",
        _edit(SCORER, "    type: None", PROMETHEUS_SOURCE % (86_400, 1)),
        SCORER,
        15,
        "spec.source.params.range",
        "86400 points; Prometheus allows 11000",
        validate=False,
    ),
    # -- credentials
    Case(
        "plaintext-token",
        _edit(FULL, "        key: token\n", "        key: token\n      token: s3cr3t\n"),
        FULL,
        21,
        "spec.scoring.auth.token",
        "credentials must not be written in Git",
    ),
    Case(
        "plaintext-password-in-settings",
        _edit(SETTINGS, "  path: rendered\n", "  path: rendered\n  password: hunter2\n"),
        SETTINGS,
        7,
        "repository.password",
        "credentials must not be written in Git",
    ),
    # -- labels and annotations, by the Kubernetes rules
    Case(
        "scorer-label-key-with-space",
        _edit(SCORER, "spec:\n", '  labels: {"team a": x}\nspec:\n'),
        SCORER,
        6,
        "metadata.labels.team a",
        "key 'team a': the name must be at most 63 letters",
    ),
    Case(
        "scorer-label-key-bad-prefix",
        _edit(SCORER, "spec:\n", "  labels: {Example.COM/team: a}\nspec:\n"),
        SCORER,
        6,
        "metadata.labels.Example.COM/team",
        "the prefix before '/' must be a DNS-1123 subdomain",
    ),
    Case(
        "scorer-label-value-too-long",
        _edit(SCORER, "spec:\n", "  labels: {team: " + "a" * 64 + "}\nspec:\n"),
        SCORER,
        6,
        "metadata.labels.team",
        "must be a label value",
    ),
    Case(
        "scorer-label-value-bad-start",
        _edit(SCORER, "spec:\n", '  labels: {tier: "-gold"}\nspec:\n'),
        SCORER,
        6,
        "metadata.labels.tier",
        "must be a label value",
    ),
    Case(
        "scorer-annotation-key-invalid",
        _edit(SCORER, "spec:\n", '  annotations: {"owner:team": a}\nspec:\n'),
        SCORER,
        6,
        "metadata.annotations.owner:team",
        "key 'owner:team'",
    ),
    Case(
        "scorer-annotations-too-large",
        _edit(SCORER, "spec:\n", "  annotations: {notes: " + "n" * 70_000 + "}\nspec:\n"),
        SCORER,
        6,
        "metadata.annotations",
        "annotations total 70005 bytes, more than 65536",
    ),
    Case(
        "inventory-label-key-empty-name",
        _edit(INVENTORY, 'gpu: "true"', '"gpu/": "true"'),
        INVENTORY,
        6,
        "metadata.labels.gpu/",
        "the name after / must be",
    ),
    Case(
        "inventory-label-value-with-space",
        _edit(INVENTORY, 'gpu: "true"', 'gpu: "very much"'),
        INVENTORY,
        6,
        "metadata.labels.gpu",
        "must be a label value",
    ),
    Case(
        "mask-match-labels-value-invalid",
        _edit(MASKS, 'gpu: "false"', 'gpu: "no way"'),
        MASKS,
        9,
        "spec.masks[0].clusterSelector.matchLabels.gpu",
        "must be a label value",
    ),
    Case(
        "mask-expression-key-invalid",
        _edit(
            MASKS,
            'matchLabels:\n          gpu: "false"',
            "matchExpressions:\n          - {key: gpu!, operator: Exists}",
        ),
        MASKS,
        9,
        "spec.masks[0].clusterSelector.matchExpressions[0].key",
        "key 'gpu!'",
    ),
    Case(
        "override-node-selector-key-invalid",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: edge01\n      nodeSelector: {node role: edge}\n"
        },
        SETTINGS,
        10,
        "agent.overrides[0].nodeSelector.node role",
        "key 'node role'",
    ),
    # -- cluster labels
    Case(
        "label-value-bool",
        _edit(INVENTORY, 'gpu: "true"', "gpu: true"),
        INVENTORY,
        6,
        "metadata.labels.gpu",
        'quote it: "true"',
    ),
    Case(
        "label-value-int",
        _edit(INVENTORY, '    gpu: "true"\n', '    gpu: "true"\n    rack: 12\n'),
        INVENTORY,
        7,
        "metadata.labels.rack",
        'quote it: "12"',
    ),
    Case(
        "label-key-not-string",
        _edit(INVENTORY, '    gpu: "true"\n', '    gpu: "true"\n    7: seven\n'),
        INVENTORY,
        7,
        "metadata.labels",
        "key '7' must be a string",
    ),
    # -- settings
    Case(
        "settings-unknown-key",
        _edit(SETTINGS, "hubNamespace:", "hubNamespce:"),
        SETTINGS,
        1,
        "hubNamespce",
        "did you mean 'hubNamespace'",
    ),
    Case(
        "settings-bad-value",
        {SETTINGS: _base(SETTINGS) + "sync:\n  concurrency: 0\n"},
        SETTINGS,
        8,
        "sync.concurrency",
        "must be >= 1",
    ),
    Case(
        "settings-bad-enum",
        {SETTINGS: _base(SETTINGS) + "agent:\n  imagePullPolicy: Sometimes\n"},
        SETTINGS,
        8,
        "agent.imagePullPolicy",
        "Always, IfNotPresent, Never",
    ),
    Case(
        "settings-bad-namespace",
        _edit(SETTINGS, "agentNamespace: dynamic-scoring", "agentNamespace: Dynamic_Scoring"),
        SETTINGS,
        2,
        "agentNamespace",
        "DNS-1123 label",
    ),
    Case(
        "settings-timeout-nan",
        {SETTINGS: _base(SETTINGS) + "sync:\n  timeoutSeconds: .nan\n"},
        SETTINGS,
        8,
        "sync.timeoutSeconds",
        "^must be a finite number$",
    ),
    Case(
        "settings-timeout-infinite",
        {SETTINGS: _base(SETTINGS) + "sync:\n  timeoutSeconds: .inf\n"},
        SETTINGS,
        8,
        "sync.timeoutSeconds",
        "^must be a finite number$",
    ),
    Case(
        "settings-timeout-beyond-float",
        {SETTINGS: _base(SETTINGS) + "sync:\n  timeoutSeconds: 1" + "0" * 400 + "\n"},
        SETTINGS,
        8,
        "sync.timeoutSeconds",
        "^must be a finite number",
    ),
    Case(
        "settings-unreachable-fraction-above-one",
        {SETTINGS: _base(SETTINGS) + "sync:\n  maxUnreachableFraction: 1.5\n"},
        SETTINGS,
        8,
        "sync.maxUnreachableFraction",
        "must be <= 1",
    ),
    Case(
        "settings-unreachable-fraction-nan",
        {SETTINGS: _base(SETTINGS) + "sync:\n  maxUnreachableFraction: .nan\n"},
        SETTINGS,
        8,
        "sync.maxUnreachableFraction",
        "^must be a finite number$",
    ),
    Case(
        "settings-hub-timeout-zero",
        {SETTINGS: _base(SETTINGS) + "hub:\n  timeoutSeconds: 0\n"},
        SETTINGS,
        8,
        "hub.timeoutSeconds",
        "must be > 0",
    ),
    Case(
        "settings-hub-timeout-infinite",
        {SETTINGS: _base(SETTINGS) + "hub:\n  timeoutSeconds: .inf\n"},
        SETTINGS,
        8,
        "hub.timeoutSeconds",
        "^must be a finite number$",
    ),
    Case(
        "settings-hub-max-bytes-unbounded",
        {SETTINGS: _base(SETTINGS) + "hub:\n  maxBytes: 99999999999999\n"},
        SETTINGS,
        8,
        "hub.maxBytes",
        "must be <= 4294967296",
    ),
    Case(
        "settings-hub-page-size-string",
        {SETTINGS: _base(SETTINGS) + "hub:\n  pageSize: lots\n"},
        SETTINGS,
        8,
        "hub.pageSize",
        "integer",
    ),
    Case(
        "settings-resource-not-a-quantity",
        {SETTINGS: _base(SETTINGS) + "agent:\n  resources:\n    requests: {cpu: lots}\n"},
        SETTINGS,
        9,
        "agent.resources.requests.cpu",
        "'lots' is not a quantity",
    ),
    Case(
        "settings-resource-negative",
        {SETTINGS: _base(SETTINGS) + "agent:\n  resources:\n    limits: {memory: -5Gi}\n"},
        SETTINGS,
        9,
        "agent.resources.limits.memory",
        "'-5Gi' is negative",
    ),
    Case(
        "override-resource-with-space",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: edge01\n"
            + "      resources: {limits: {memory: 2 Gi}}\n"
        },
        SETTINGS,
        10,
        "agent.overrides[0].resources.limits.memory",
        "'2 Gi' is not a quantity",
    ),
    Case(
        "override-toleration-seconds-beyond-int64",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: edge01\n      tolerations:\n"
            + "        - {key: dedicated, operator: Exists, tolerationSeconds: 99999999999999999999}\n"
        },
        SETTINGS,
        11,
        "agent.overrides[0].tolerations[0].tolerationSeconds",
        "a 64-bit integer",
    ),
    Case(
        "settings-resolve-key-without-port",
        {
            SETTINGS: _base(SETTINGS)
            + 'sync:\n  resolve:\n    "cpu-scorer.svc": "127.0.0.1:18000"\n'
        },
        SETTINGS,
        9,
        "sync.resolve.cpu-scorer.svc",
        "the key must be HOST:PORT",
    ),
    Case(
        "settings-resolve-value-with-line-break",
        {SETTINGS: _base(SETTINGS) + 'sync:\n  resolve:\n    "svc:8000": "127.0.0.1\\n"\n'},
        SETTINGS,
        9,
        "sync.resolve.svc:8000",
        "the value must be ADDR",
    ),
    Case(
        "settings-resolve-port-out-of-range",
        {SETTINGS: _base(SETTINGS) + 'sync:\n  resolve:\n    "svc:8000": "127.0.0.1:99999"\n'},
        SETTINGS,
        9,
        "sync.resolve.svc:8000",
        "port 99999 is not between 1 and 65535",
    ),
    Case(
        "settings-resolve-mapped-twice",
        {
            SETTINGS: _base(SETTINGS)
            + 'sync:\n  resolve:\n    "svc:8000": "127.0.0.1"\n    "SVC:8000": "127.0.0.2"\n'
        },
        SETTINGS,
        9,
        "sync.resolve.svc:8000",
        "svc:8000 is mapped twice",
    ),
    Case("settings-list", {SETTINGS: "- hubNamespace: a\n"}, SETTINGS, 1, "", "must be a mapping"),
    Case(
        "settings-two-documents",
        {SETTINGS: "hubNamespace: a\n---\nagentNamespace: b\n"},
        SETTINGS,
        1,
        "",
        "one YAML document",
    ),
    # -- the lockfile
    Case(
        "full-scorer-without-lock-entry",
        {"scorers/new-scorer.yaml": NEW_FULL_SCORER},
        "scorers/new-scorer.yaml",
        4,
        "metadata.name",
        "run 'dsf-compile sync new-scorer'",
        validate=False,
    ),
    Case(
        "config-url-changed-since-sync",
        _edit(FULL, "cpu-scorer.dynamic-scoring.svc:8000", "cpu.dynamic-scoring.svc:8000"),
        FULL,
        8,
        "spec.configURL",
        "changed since the last sync",
        validate=False,
    ),
    Case(
        "sync-mode-changed-since-sync",
        _edit(SCORER, "configSyncMode: None", "configSyncMode: Full"),
        SCORER,
        9,
        "spec.configSyncMode",
        "changed since the last sync",
        validate=False,
    ),
    Case(
        "lockfile-not-json",
        {LOCK: "{not json"},
        LOCK,
        1,
        "",
        "cannot read lockfile",
        validate=False,
    ),
    Case(
        "lockfile-wrong-shape",
        {LOCK: '{"version": 1, "scorers": {"cpu-scorer": {"mode": "Full"}}}'},
        LOCK,
        0,
        "scorers.cpu-scorer.configURL",
        "sync",
        validate=False,
    ),
    Case(
        "lock-config-without-interval",
        _lock_with_config("cpu-scorer", {"scoring.params.interval": None}),
        FULL,
        16,
        "spec.scoring.params.interval",
        r"scoring interval is missing .*scorer's /config",
        validate=False,
    ),
    Case(
        "lock-config-without-query",
        _lock_with_config("cpu-scorer", {"source.params.query": None}),
        FULL,
        12,
        "spec.source.params.query",
        "PromQL query is missing",
        validate=False,
    ),
    Case(
        "lock-config-bad-scoring-host",
        _lock_with_config("cpu-scorer", {"scoring.host": "ftp://cpu-scorer"}),
        FULL,
        8,
        "spec.configURL",
        "/config scoring.host",
        validate=False,
    ),
    # -- rendered/ is input too: a pull request can commit links and odd files there
    Case(
        "rendered-file-is-a-link",
        {"rendered/kustomization.yaml": Symlink("../dsf.yaml")},
        "rendered/kustomization.yaml",
        0,
        "",
        "is a symbolic link; dsf-compile never follows links",
        validate=False,
    ),
    Case(
        "rendered-folder-is-a-link",
        {"rendered/clusters": Symlink("../clusters")},
        "rendered/clusters",
        0,
        "",
        "is a symbolic link",
        validate=False,
    ),
    Case(
        "rendered-record-is-a-link",
        {"rendered/.dsf-files": Symlink("../dsf.yaml")},
        "rendered/.dsf-files",
        0,
        "",
        "is a symbolic link",
        validate=False,
    ),
    Case(
        "rendered-record-names-a-file-through-a-link",
        {"rendered/x": Symlink(".."), "rendered/.dsf-files": "x/dsf.yaml\n"},
        "rendered/x",
        0,
        "",
        "is a symbolic link",
        validate=False,
    ),
    Case(
        "rendered-record-escapes",
        {"rendered/.dsf-files": "# header\n../dsf.yaml\n"},
        "rendered/.dsf-files",
        2,
        "",
        "'../dsf.yaml' is not a file dsf-compile writes",
        validate=False,
    ),
    Case(
        "rendered-record-not-utf8",
        {"rendered/.dsf-files": b"kustomization.yaml\nhub/\xff.yaml\n"},
        "rendered/.dsf-files",
        2,
        "",
        r"'hub/\\xff.yaml' is not a file dsf-compile writes",
        validate=False,
    ),
    Case(
        "rendered-file-is-a-fifo",
        {"rendered/kustomization.yaml": Fifo()},
        "rendered/kustomization.yaml",
        0,
        "",
        "is a FIFO, not a regular file",
        validate=False,
    ),
    Case(
        "rendered-file-is-a-folder",
        {"rendered/kustomization.yaml": Folder()},
        "rendered/kustomization.yaml",
        0,
        "",
        "is a directory, not a regular file",
        validate=False,
    ),
    Case(
        "rendered-folder-is-a-file",
        {"rendered/clusters": "not a folder\n"},
        "rendered/clusters",
        0,
        "",
        "is a regular file, not a directory",
        validate=False,
    ),
    Case(
        "lockfile-nested-100000-deep",
        {LOCK: "[" * 100_000},
        LOCK,
        1,
        "",
        "cannot read lockfile: nested deeper than 64 levels",
        validate=False,
    ),
    Case(
        "lockfile-5000-digit-number",
        {LOCK: '{"version": ' + "7" * 5000 + "}"},
        LOCK,
        1,
        "",
        "cannot read lockfile: a number of 5000 digits",
        validate=False,
    ),
    Case(
        "lock-config-host-with-credentials",
        _lock_with_config("cpu-scorer", {"scoring.host": "http://user:hunter2@cpu-scorer"}),
        LOCK,
        0,
        "scorers.cpu-scorer.config.scoring.host",
        r"carries credentials",
        validate=False,
    ),
    Case(
        "lock-config-lone-surrogate",
        # as a JSON escape: the one way a lone surrogate gets into a file
        {
            LOCK: str(_lock_with_config("cpu-scorer", {"name": "SURROGATE"})[LOCK]).replace(
                "SURROGATE", "sur\\ud800"
            )
        },
        LOCK,
        0,
        "scorers.cpu-scorer.config.name",
        r"not valid Unicode \(lone surrogate U\+D800\)",
        validate=False,
    ),
    Case(
        "lock-config-interval-beyond-int64",
        _lock_with_raw_config("cpu-scorer", "scoring.params.interval", 10**30),
        LOCK,
        0,
        "scorers.cpu-scorer.config.scoring.params.interval",
        "9223372036854775807",
        validate=False,
    ),
    Case(
        "lock-config-step-longer-than-range",
        _lock_with_config("cpu-scorer", {"source.params.step": 7200}),
        FULL,
        8,
        "spec.configURL",
        "/config source.params.step: step 7200 s",
        validate=False,
    ),
    Case(
        "scorer-named-kustomization",
        _edit(SCORER, "name: static-scorer", "name: kustomization"),
        SCORER,
        5,
        "metadata.name",
        "rendered/hub/dynamicscorers/kustomization.yaml, the kustomization of its folder",
    ),
    Case(
        "scorer-name-too-long-for-its-file",
        _edit(SCORER, "name: static-scorer", f"name: {LONG_SCORER}"),
        SCORER,
        5,
        "metadata.name",
        "is 251 characters: DynamicScorer .* a file name of 256 bytes, and its temporary "
        "copy adds up to 22 where file systems allow 255; at most 228 characters here",
    ),
    Case(
        "optimization-plan-files-collide",
        {
            "placements/optimizations.yaml": _optimization("default", "gpu-apps")
            + "---\n"
            + _optimization("default-gpu", "apps")
        },
        "placements/optimizations.yaml",
        18,
        "metadata.name",
        r"the plan of PlacementOptimization default-gpu/apps would be written to "
        r"placements/optimized/default-gpu-apps.yaml, like the plan of PlacementOptimization "
        r"default/gpu-apps \(placements/optimizations.yaml:4\)",
    ),
    Case(
        "placement-name-over-a-label-value",
        {"placements/p.yaml": _placement("p" * 64)},
        "placements/p.yaml",
        4,
        "metadata.name",
        "is 64 characters: OCM labels the Placement's PlacementDecisions",
    ),
    Case(
        "policy-name-too-long-for-its-file",
        {"placements/policy.yaml": POLICY % LONG_POLICY},
        "placements/policy.yaml",
        4,
        "metadata.name",
        "Policy name is 253 characters: the governance framework refuses a Policy whose "
        "namespace and name exceed 62 together .*; at most 55 characters here",
    ),
    # issue 25's regression: render exited 2 on the name of the file it stages
    Case(
        "policy-name-of-240-characters",
        {"placements/policy.yaml": POLICY % POLICY_240},
        "placements/policy.yaml",
        4,
        "metadata.name",
        "Policy name is 240 characters",
    ),
    Case(
        "binding-name-fits-its-file-but-not-the-staged-copy",
        {"placements/binding.yaml": BINDING % BINDING_218},
        "placements/binding.yaml",
        3,
        "metadata.name",
        "is 218 characters: PlacementBinding default/b+.* a file name of 240 bytes, and its "
        "temporary copy adds up to 22 where file systems allow 255; at most 211 characters",
    ),
    Case(
        "workload-placement-ref-not-dns",
        {"placements/workload.yaml": WORKLOAD % "Placement_A"},
        "placements/workload.yaml",
        8,
        "spec.placementRefs[0].name",
        "must be a DNS-1123 subdomain",
    ),
    Case(
        "optimization-generated-name-over-a-label-value",
        {"placements/optimization.yaml": _optimization("default", "o" * 56)},
        "placements/optimization.yaml",
        11,
        "spec.clusters[0].name",
        "would write a Placement and PlacementBinding 'o+-worker01' for this cluster",
    ),
    Case(
        "score-name-with-an-escape-sequence",
        _edit(SCORER, "name: static_score", r'name: "static\e[2J_score"'),
        SCORER,
        16,
        "spec.scoring.params.name",
        "holds the control character U\\+001B at position 6",
    ),
    Case(
        "mask-score-name-with-a-line-break",
        _edit(MASKS, "scoreName: cpu_score", r'scoreName: "cpu_score\n# Approved"'),
        MASKS,
        10,
        "spec.masks[0].scoreName",
        "holds the control character U\\+000A",
    ),
    Case(
        "placement-score-name-with-a-line-break",
        {"placements/p.yaml": _placement("p", r'"app;gpu\n| x | y |"')},
        "placements/p.yaml",
        13,
        "spec.prioritizerPolicy.configurations[0].scoreCoordinate.addOn.scoreName",
        "holds the control character U\\+000A",
    ),
    Case(
        "addon-install-placement-name-over-a-label-value",
        {
            SETTINGS: _base(SETTINGS)
            + f"addonName: {'a' * 54}\naddon:\n  installStrategy: Placements\n"
            + "render:\n  shards: 128\n"
        },
        SETTINGS,
        7,
        "addonName",
        # the shards' names are the longest: fixing them fixes the install Placement's
        "a shard's Argo CD Application and Flux Kustomization would be named "
        "'a+-shard-000', 64 characters: .*; at most 53 characters here",
    ),
    # settings the API server or the kubelet would refuse on every cluster
    Case(
        "agent-toleration-exists-with-a-value",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: '*'\n      tolerations:\n"
            + "        - {key: a, operator: Exists, value: x}\n"
        },
        SETTINGS,
        11,
        "agent.overrides[0].tolerations[0]",
        "a toleration with operator: Exists has no value",
    ),
    Case(
        "agent-toleration-seconds-without-no-execute",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: '*'\n      tolerations:\n"
            + "        - {key: a, tolerationSeconds: 30}\n"
        },
        SETTINGS,
        11,
        "agent.overrides[0].tolerations[0]",
        "tolerationSeconds needs effect: NoExecute",
    ),
    Case(
        "agent-image-not-a-reference",
        {SETTINGS: _base(SETTINGS) + "agent:\n  image: ghcr.io/Acme/agent:0.1\n"},
        SETTINGS,
        8,
        "agent.image",
        "'ghcr.io/Acme/agent:0.1' is not an image reference the kubelet can pull",
    ),
    Case(
        "agent-proxy-with-a-scheme-the-agent-refuses",
        {
            SETTINGS: _base(SETTINGS)
            + "agent:\n  overrides:\n    - clusterName: '*'\n      proxy:\n"
            + "        httpsProxy: socks5://proxy.example:1080\n"
        },
        SETTINGS,
        11,
        "agent.overrides[0].proxy.httpsProxy",
        "must be an http:// or https:// proxy URL",
    ),
    Case(
        "repository-branch-git-refuses",
        _edit(SETTINGS, "  branch: main\n", "  branch: main branch\n"),
        SETTINGS,
        5,
        "repository.branch",
        "'main branch' is not a name git allows for a branch",
    ),
    Case(
        "repository-path-outside-the-repository",
        _edit(SETTINGS, "  path: rendered\n", "  path: ../rendered\n"),
        SETTINGS,
        6,
        "repository.path",
        "must be a folder inside the repository",
    ),
    # issue 25 row 9: a valid addonName whose derived names Flux and Argo CD cannot apply
    Case(
        "addon-name-makes-shard-application-names-over-a-label-value",
        {SETTINGS: _base(SETTINGS) + f"addonName: {'b' * 55}\n"},
        SETTINGS,
        7,
        "addonName",
        "'b+-shard-00', 64 characters: Argo CD labels every object it applies "
        "app.kubernetes.io/instance=<name>.*; at most 54 characters here",
    ),
    Case(
        "addon-name-of-a-whole-dns-label",
        {SETTINGS: _base(SETTINGS) + f"addonName: {'c' * 63}\n"},
        SETTINGS,
        7,
        "addonName",
        "'c+-shard-00', 72 characters",
    ),
]


# ------------------------------------------------------------------- the test


def _run(root: Path, *command: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run(["--root", str(root), *command], out, err)
    return code, out.getvalue(), err.getvalue()


def _digest(folder: Path) -> dict[str, str]:
    """Every entry under ``folder``: a file's hash, a link's target, or another entry's kind.

    Links are not followed and FIFOs not opened.
    """
    found = {}
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            path = Path(parent, name)
            relative = path.relative_to(folder).as_posix()
            if path.is_symlink():
                found[relative] = "-> " + os.readlink(path)
            elif path.is_file():
                found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
            else:
                found[relative] = "dir" if path.is_dir() else "special"
    return found


@pytest.fixture
def rendered_base(tmp_path: Path) -> Path:
    """The base fleet with its lockfile, rendered once successfully."""
    root = tmp_path / "repo"
    shutil.copytree(BASE, root)
    write_lockfile(root, base_lock(BASE_CONFIGS))
    code, _, err = _run(root, "render")
    assert code == 0, err
    return root


def test_the_base_is_valid(rendered_base: Path) -> None:
    code, _, err = _run(rendered_base, "validate")
    assert code == 0, err
    assert _digest(rendered_base / "rendered")


def test_the_longest_derived_file_name_validate_accepts_is_written(rendered_base: Path) -> None:
    """Issue 25's regression, from the other side: what validate lets through, the real
    writer stages and renames (its temporary names included) without ENAMETOOLONG."""
    _write(rendered_base, "placements/binding.yaml", BINDING % BINDING_211)
    code, _, err = _run(rendered_base, "validate")
    assert code == 0, err
    code, _, err = _run(rendered_base, "render")
    assert code == 0, err
    written = rendered_base / "rendered" / "hub" / "placements" / "default"
    name = f"placementbinding-{BINDING_211}.yaml"
    assert len(name.encode()) == MAX_DERIVED_FILE_NAME_BYTES
    assert (written / name).is_file()
    # and render replaces it in place (a staged copy and a kept old copy beside it)
    changed = (BINDING % BINDING_211).replace("name: policy-a", "name: policy-b")
    _write(rendered_base, "placements/binding.yaml", changed)
    code, _, err = _run(rendered_base, "render")
    assert code == 0, err


def test_the_corpus_is_large_and_distinct() -> None:
    assert len(CASES) >= 45
    assert len({case.id for case in CASES}) == len(CASES)


def _check_first_problem(case: Case, code: int, out: str, err: str) -> str:
    assert code == 1, err
    assert "Traceback" not in err and "Traceback" not in out
    first = err.splitlines()[0]
    found = PROBLEM_LINE.match(first)
    assert found, first
    assert found["path"] == case.path, first
    assert int(found["line"]) == case.line, first
    assert int(found["column"]) > 0 or case.line == 0, first
    rest = found["rest"]
    if case.field:
        field, _, rest = rest.partition(": ")
        assert field == case.field, first
    assert re.search(case.message, rest), first
    return first


@pytest.mark.timeout(60)  # a FIFO opened for reading would block forever
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input_fails_cleanly(case: Case, rendered_base: Path) -> None:
    for relative, content in case.files.items():
        _write(rendered_base, relative, content)
    before = _digest(rendered_base / "rendered")

    code, out, err = _run(rendered_base, "render")
    assert "hunter2" not in out + err  # credentials are never printed
    first = _check_first_problem(case, code, out, err)
    assert _digest(rendered_base / "rendered") == before

    if case.validate:
        assert _check_first_problem(case, *_run(rendered_base, "validate")) == first
    assert _digest(rendered_base / "rendered") == before
