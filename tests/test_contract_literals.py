"""The contract's names are written once: in ``dsf_contract/``, and imported everywhere else.

A second copy of a name the compiler writes and the agent reads (the ConfigMap's name,
an API group, a condition reason, a metric, a flag) drifts apart from the first without
a test noticing; so every string literal of the compiler, the agent and the samples is
compared with the contract's values. And ``exactly``, which lets a model field check a
contract constant where ``Literal[...]`` cannot name one, behaves as ``Literal`` does.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ValidationError

from dsf_compile.inputs.schema import validate_model
from dsf_contract import agent_cli, fields, metrics, scores, summary
from dsf_contract.bounded_yaml import Document
from dsf_contract.fields import exactly
from tests.fleet_repo import REPO_ROOT

FOLDERS = ("dsf_compile", "dsf_transport", "agent", "samples")

#: Literals equal to a contract value that name something else: the compiler's own
#: options of the same name, the schema file of the summaries, a sample scorer's option,
#: the dashboard's uid and tag.
SAME_TEXT_OTHER_THING = {
    ("dsf_compile/commands/table.py", "--resolve"),
    ("dsf_compile/commands/table.py", "--hub-kubeconfig"),
    ("dsf_compile/commands/parser.py", "--hub-kubeconfig"),
    ("dsf_compile/commands/mcp_server.py", "--hub-kubeconfig"),
    ("dsf_compile/pipeline/schemas.py", "summaries"),
    ("samples/llm_forecast_scorer.py", "--max-response-bytes"),
    ("dsf_compile/render/dashboard.py", "dsf-agent"),
    ("dsf_compile/render/dashboard.py", "dynamic-scoring"),
}


def contract_values() -> set[str]:
    """Every string the contract names: constants, reasons, options, metric and label names."""
    values = {
        value
        for module in (agent_cli, fields, metrics, scores, summary)
        for name, value in vars(module).items()
        if name.isupper() and isinstance(value, str)
    }
    values |= {reason.value for reason in scores.ScoresReason}
    values |= {text for option in agent_cli.OPTIONS for text in (option.flag, option.env)}
    values |= set(metrics.STAGE_SECONDS.values())
    values |= {text for item in scores.AGENT_MANAGED_BY.items() for text in item}
    return values


def string_literals(path: Path) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of every string literal of a module but its docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    documented = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, documented)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or id(node) in docstrings:
            continue
        if isinstance(node.value, str):
            yield node.lineno, node.value


def copies_of(value: str, text: str) -> bool:
    # a dotted or slashed name (an API group, a label key) counts inside a longer text too
    return text == value or (("." in value or "/" in value) and value in text)


def test_each_contract_literal_is_written_once() -> None:
    values = {v for v in contract_values() if len(v) >= 4}  # "None", "v1": too common to tell
    found = []
    for folder in FOLDERS:
        for path in sorted((REPO_ROOT / folder).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT).as_posix()
            for line, text in string_literals(path):
                for value in values:
                    if copies_of(value, text) and (relative, text) not in SAME_TEXT_OTHER_THING:
                        found.append(f"{relative}:{line}: {text!r} (the contract's {value!r})")
    assert not found, "import the contract's constant instead:\n" + "\n".join(found)


def test_the_scan_finds_a_second_copy(tmp_path: Path) -> None:
    module = tmp_path / "copy.py"
    module.write_text(
        '"""A docstring may say ScoresAvailable."""\n'
        'REASON = "ScoresPublished"\n'
        'LABEL = "cluster.open-cluster-management.io/placement"\n',
        encoding="utf-8",
    )
    values = contract_values()
    hits = [
        (line, text)
        for line, text in string_literals(module)
        if any(copies_of(v, text) for v in values if len(v) >= 4)
    ]
    assert hits == [(2, "ScoresPublished"), (3, "cluster.open-cluster-management.io/placement")]


NAME = "dynamic-scoring-config"


class _AsLiteral(BaseModel):
    name: Literal["dynamic-scoring-config"]


class _AsConstant(BaseModel):
    name: Annotated[str, *exactly(NAME)]


@pytest.mark.parametrize("value", [NAME, "my-config", "", 3, None, ["x"], {"name": NAME}])
def test_exactly_checks_as_literal_does(value: Any) -> None:
    def outcome(model: type[BaseModel]) -> Any:
        try:
            return model(name=value).model_dump()
        except ValidationError as error:
            return [(e["type"], e["msg"], e.get("ctx")) for e in error.errors()]

    assert outcome(_AsConstant) == outcome(_AsLiteral)


def test_exactly_gives_the_same_located_message_and_schema_as_literal() -> None:
    document = Document(path="x.yaml", index=0, data={"name": "other"}, positions={})
    messages = [
        [p.format() for p in validate_model(model, document, document.data)[1]]
        for model in (_AsLiteral, _AsConstant)
    ]
    assert messages[0] == messages[1]
    assert messages[0]  # the wrong name is refused
    assert _AsConstant.model_json_schema() == {
        **_AsLiteral.model_json_schema(),
        "title": "_AsConstant",
    }
