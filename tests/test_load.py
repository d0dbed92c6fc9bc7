"""load: YAML → documents with positions; what a plain safe_load would let through is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsf_compile.inputs.load import list_input_files, read_yaml_file
from dsf_contract.bounded_yaml import format_pointer, parse_yaml


def test_positions_point_at_keys_and_items() -> None:
    text = "a:\n  b: 1\n  list:\n    - x\n    - y: 2\n"
    (document,), problems = parse_yaml(text, "f.yaml")
    assert problems == []
    assert document.data == {"a": {"b": 1, "list": ["x", {"y": 2}]}}
    assert document.locate(("a", "b")) == (2, 3)
    assert document.locate(("a", "list", 1)) == (5, 7)
    assert document.locate(("a", "list", 1, "y")) == (5, 7)
    # a field that is not written is located at its nearest written ancestor
    assert document.locate(("a", "missing", "deeper")) == (1, 1)


def test_several_documents_keep_their_own_positions() -> None:
    documents, problems = parse_yaml("a: 1\n---\nb: 2\n---\n", "f.yaml")
    assert problems == []
    assert [d.data for d in documents] == [{"a": 1}, {"b": 2}]
    assert documents[1].locate(("b",)) == (3, 1)


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("a: 1\na: 2\n", 2, "a", "duplicate key"),
        ("a:\n  1: x\n", 2, "a", "key '1' must be a string"),
        ("base: &b {x: 1}\nc:\n  <<: *b\n", 3, "c", "merge keys"),
        ("a: [1, 2\n", 2, "", "invalid YAML"),
        ("a: b: c\n", 1, "", "invalid YAML"),
    ],
    ids=["duplicate-key", "int-key", "merge-key", "unclosed-flow", "bad-mapping"],
)
def test_refused_yaml(text: str, line: int, field: str, message: str) -> None:
    _, problems = parse_yaml(text, "f.yaml")
    assert problems, "expected a problem"
    problem = problems[0]
    assert (problem.path, problem.line, problem.field) == ("f.yaml", line, field)
    assert message in problem.message


def test_alias_bomb_is_refused_quickly() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for level in range(1, 9):
        previous = chr(ord("a") + level - 1)
        name = chr(ord("a") + level)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 10) + "]")
    documents, problems = parse_yaml("\n".join(lines) + "\n", "bomb.yaml")
    assert documents == []
    assert "aliases expand" in problems[0].message


def test_small_aliases_are_fine() -> None:
    (document,), problems = parse_yaml("a: &x {k: v}\nb: *x\n", "f.yaml")
    assert problems == []
    assert document.data == {"a": {"k": "v"}, "b": {"k": "v"}}


@pytest.mark.parametrize(
    "text",
    [
        "[" * 200 + "]" * 200,
        # past libyaml's own limit of 1,000 levels (PyYAML >= 6.0.2): still dsf's message
        "[" * 1500 + "]" * 1500,
        "[" * 100_000,
        "a:\n" + "".join(" " * i + "- \n" for i in range(1, 1200)),
    ],
    ids=["200-flow", "1500-flow", "100000-unclosed", "1200-block"],
)
def test_deep_nesting_is_refused(text: str) -> None:
    _, problems = parse_yaml(text, "deep.yaml")
    assert [p.message for p in problems] == ["nested deeper than 64 levels"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "file is empty"),
        (b"  \n\n", "file is empty"),
        (b"a: \xff\xfe\n", "not UTF-8"),
        (b"a: 1\x00", "NUL"),
    ],
    ids=["empty", "blank", "latin1", "nul"],
)
def test_unreadable_files(tmp_path: Path, content: bytes, message: str) -> None:
    (tmp_path / "f.yaml").write_bytes(content)
    documents, problems = read_yaml_file(tmp_path, "f.yaml")
    assert documents == []
    assert message in problems[0].message


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    with (tmp_path / "big.yaml").open("wb") as out:
        out.truncate(10 * 1024 * 1024 + 1)
    _, problems = read_yaml_file(tmp_path, "big.yaml")
    assert "larger than 10 MiB" in problems[0].message


def test_listing_skips_hidden_and_markdown_and_refuses_links(tmp_path: Path) -> None:
    folder = tmp_path / "scorers"
    folder.mkdir()
    for name in ("b.yaml", "a.yml", ".hidden.yaml", ".gitkeep", "README.md"):
        (folder / name).write_text("a: 1\n")
    (folder / "link.yaml").symlink_to(folder / "b.yaml")
    files, problems = list_input_files(tmp_path, "scorers")
    assert files == ["scorers/a.yml", "scorers/b.yaml"]
    assert [p.path for p in problems] == ["scorers/link.yaml"]


def test_listing_reads_sub_folders_and_any_case_and_reports_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "scorers"
    for name in ("team-b/z.yaml", "team-a/deeper/y.yml", "x.YAML", "a.Yml", "notes.txt"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("a: 1\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "config.yaml").write_text("a: 1\n")
    (folder / "outside").symlink_to(tmp_path)
    files, problems = list_input_files(tmp_path, "scorers")
    assert files == [
        "scorers/a.Yml",
        "scorers/team-a/deeper/y.yml",
        "scorers/team-b/z.yaml",
        "scorers/x.YAML",
    ]
    assert [(p.path, p.message.split(":")[0]) for p in problems] == [
        ("scorers/notes.txt", "is not read"),
        ("scorers/outside", "must be a regular file or folder, not a link"),
    ]


@pytest.mark.parametrize(
    ("text", "field", "tag"),
    [
        ("a: !!python/name:os.system x\n", "a", "!!python/name:os.system"),
        ("a: !!python/object/apply:os.system [ls]\n", "a", "!!python/object/apply:os.system"),
        ("a:\n  b: !local {c: 1}\n", "a.b", "!local"),
        ("a: !!binary aGk=\n", "a", "!!binary"),
        ("a: [1, !!omap [{b: 1}]]\n", "a[1]", "!!omap"),
    ],
    ids=["scalar", "sequence", "mapping", "binary", "in-a-list"],
)
def test_tags_are_named_and_nothing_else_is_said_there(text: str, field: str, tag: str) -> None:
    (document,), problems = parse_yaml(text, "f.yaml")
    assert [(p.field, p.message) for p in problems] == [
        (field, f"YAML tag {tag} is not supported (only plain YAML values are read)")
    ]
    assert len(document.reported) == 1


def test_standard_tags_are_plain_values() -> None:
    (document,), problems = parse_yaml("a: !!str 12\nb: !!int '7'\nc: 2024-01-01\n", "f.yaml")
    assert problems == []
    assert document.data["a"] == "12" and document.data["b"] == 7


def test_plain_text_remembers_unquoted_non_strings_only() -> None:
    (document,), _ = parse_yaml("a: yes\nb: '12'\nc: 0x1F\nd: text\ne: 1.5e+3\n", "f.yaml")
    assert dict(document.plain_text) == {("a",): "yes", ("c",): "0x1F", ("e",): "1.5e+3"}


def test_format_pointer() -> None:
    assert format_pointer(("spec", "masks", 1, "scoreName")) == "spec.masks[1].scoreName"
    assert format_pointer(()) == ""
