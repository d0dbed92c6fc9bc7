"""Property tests of loading and resolution.

Any input gives either a result or one of the project's own errors (:class:`DsfError`),
never another exception; and every problem points at one of the inputs, at a line >= 0.
The generated inputs are tallied by outcome, and each test asserts its tally: both
outcomes were reached, so a strategy that only ever made refused input fails.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from dsf_compile.errors import DsfError, InputError
from dsf_compile.inputs.scorer import DynamicScorer
from dsf_compile.inputs.settings import Settings
from dsf_compile.inputs.validate import validate_documents
from dsf_compile.resolve.summaries import resolve_fleet
from dsf_compile.sync.lock import LOCKFILE, Lockfile, make_entry
from dsf_contract.bounded_yaml import Document, Pointer, parse_yaml
from dsf_contract.fields import API_VERSION
from dsf_contract.problem import Problem
from dsf_contract.scoring_api import ScorerConfig

DATA = Path(__file__).parent / "bad_inputs"
BASE = DATA / "base"
BASE_CONFIGS: dict[str, Any] = json.loads((DATA / "base-configs.json").read_text(encoding="utf-8"))
MODEST = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def _base_documents() -> list[Document]:
    documents = []
    for folder in ("scorers", "clusters"):
        for file in sorted((BASE / folder).glob("*.yaml")):
            relative = f"{folder}/{file.name}"
            found, problems = parse_yaml(file.read_text(encoding="utf-8"), relative)
            assert not problems
            documents += found
    return documents


BASE_DOCUMENTS = _base_documents()
PATHS = sorted({d.path for d in BASE_DOCUMENTS} | {"scorers/extra.yaml", "clusters/extra.yaml"})


def _lock(configs: dict[str, Any]) -> Lockfile:
    entries = {}
    for document in BASE_DOCUMENTS:
        if document.path.startswith("scorers/"):
            scorer = DynamicScorer.model_validate(document.data)
            name = scorer.metadata.name
            config = ScorerConfig.model_validate(configs[name]) if name in configs else None
            entries[name] = make_entry(scorer.spec, healthy=True, config=config)
    return Lockfile(scorers=entries)


BASE_LOCK = _lock(BASE_CONFIGS)

# ------------------------------------------------------------------ strategies

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
    | st.sampled_from(["", "Full", "none", "Prometheus", "http://h:1/p", "ftp://h", "${x}", "*"])
)
keys = st.text(max_size=12) | st.sampled_from(["<<", "=", "~", "null", "1", "token", "kind"])
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=25,
)
names = st.sampled_from(["cpu-scorer", "static-scorer", "worker01", "dynamic-scoring-config", "x"])
kinds = st.sampled_from(["DynamicScorer", "DynamicScoringConfig", "ManagedCluster", "List", "Pod"])
shaped = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from([API_VERSION, "cluster.open-cluster-management.io/v1", "v1"]),
        "kind": kinds,
        "metadata": st.fixed_dictionaries({"name": names}, optional={"labels": json_values}),
    },
    optional={"spec": json_values, "items": json_values},
)


def _pointers(value: Any, pointer: Pointer = ()) -> Iterator[Pointer]:
    yield pointer
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _pointers(child, (*pointer, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _pointers(child, (*pointer, index))


@st.composite
def perturbed(draw: st.DrawFn, value: Any) -> Any:
    """``value`` with a few keys dropped, values retyped, and random keys inserted."""
    value = copy.deepcopy(value)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        pointer = draw(st.sampled_from(list(_pointers(value))))
        action = draw(st.sampled_from(["drop", "retype", "insert"]))
        if not pointer:
            if action == "retype":
                value = draw(json_values)
            continue
        parent = value
        for part in pointer[:-1]:
            parent = parent[part]
        last = pointer[-1]
        if action == "drop":
            del parent[last]
        elif action == "retype":
            parent[last] = draw(json_values)
        elif isinstance(parent[last], dict):
            parent[last][draw(keys)] = draw(json_values)
    return value


def _documents_from(data: list[tuple[str, Any]]) -> list[Document]:
    """Documents as the loader makes them (with positions), through YAML text."""
    documents = []
    for path, value in data:
        found, _ = parse_yaml(yaml.safe_dump(value), path)
        documents += found
    return documents


def _assert_located(problems: tuple[Problem, ...] | list[Problem], paths: set[str]) -> None:
    for problem in problems:
        assert problem.line >= 0 and problem.column >= 0, problem
        assert problem.path in paths, problem
        assert "\n" not in problem.format(), problem


def _compile(documents: list[Document], lock: Lockfile) -> str:
    """validate + resolve; only the project's errors may escape, and they must be located.
    The outcome: ``resolved``, ``refused`` (located problems) or ``error`` (another DsfError)."""
    paths = {d.path for d in documents} | {LOCKFILE}
    try:
        inputs = validate_documents(documents, Settings())
        _assert_located(inputs.warnings, paths)
        plan = resolve_fleet(inputs, lock)
        _assert_located(plan.warnings, paths)
    except InputError as error:
        assert error.problems
        _assert_located(error.problems, paths)
        return "refused"
    except DsfError:
        return "error"
    return "resolved"


# --------------------------------------------------------------------- loading


@MODEST
@given(st.text())
def test_parse_yaml_never_raises_on_text(text: str) -> None:
    documents, problems = parse_yaml(text, "x.yaml")
    _assert_located(problems, {"x.yaml"})
    assert all(d.path == "x.yaml" for d in documents)


@MODEST
@given(json_values)
def test_parse_yaml_reads_back_dumped_values(value: Any) -> None:
    documents, problems = parse_yaml(yaml.safe_dump(value), "x.yaml")
    _assert_located(problems, {"x.yaml"})
    if value is not None:  # a null document is an empty one
        assert not problems
        assert [d.data for d in documents] == [value]


@MODEST
@given(st.text(alphabet="[]{}-:?&*!|>'\"#,\n ab1", max_size=200))
def test_parse_yaml_never_raises_on_yaml_punctuation(text: str) -> None:
    _, problems = parse_yaml(text, "x.yaml")
    _assert_located(problems, {"x.yaml"})


# ------------------------------------------------------------------ resolution


def test_arbitrary_documents_give_a_result_or_our_error() -> None:
    tally: Counter[str] = Counter()

    @MODEST
    @given(st.lists(st.tuples(st.sampled_from(PATHS), json_values | shaped), max_size=6))
    def one(data: list[tuple[str, Any]]) -> None:
        tally[_compile(_documents_from(data), BASE_LOCK)] += 1

    one()
    assert tally["resolved"] and tally["refused"], tally


def test_perturbed_fleet_gives_a_result_or_our_error() -> None:
    tally: Counter[str] = Counter()

    @MODEST
    @given(st.data())
    def one(data: st.DataObject) -> None:
        index = data.draw(st.integers(min_value=0, max_value=len(BASE_DOCUMENTS) - 1))
        documents = list(BASE_DOCUMENTS)
        changed = data.draw(perturbed(documents[index].data))
        documents[index : index + 1] = _documents_from([(documents[index].path, changed)])
        tally[_compile(documents, BASE_LOCK)] += 1

    one()
    assert tally["resolved"] and tally["refused"], tally


def test_perturbed_scorer_config_gives_a_result_or_our_error() -> None:
    tally: Counter[str] = Counter()

    @MODEST
    @given(perturbed(BASE_CONFIGS["cpu-scorer"]))
    def one(config: Any) -> None:
        try:
            lock = _lock({"cpu-scorer": config})
        except ValidationError:
            tally["not a config"] += 1
            reject()  # not a /config document: reading the lockfile refuses it before resolution
        tally[_compile(BASE_DOCUMENTS, lock)] += 1

    one()
    assert tally["resolved"] and tally["refused"], tally


def test_the_base_fleet_resolves() -> None:
    plan = resolve_fleet(validate_documents(BASE_DOCUMENTS, Settings()), BASE_LOCK)
    assert {c.name: c.scorers for c in plan.clusters} == {
        "edge01": ("static-scorer",),
        "worker01": ("cpu-scorer", "static-scorer"),
    }
