"""YAML text → plain documents that remember where every field was written, bounded.

The compiler reads every input file through :func:`parse_yaml`, and the agent a
configuration it is handed as YAML. It uses PyYAML's safe composer (the C one when
available), builds the Python values itself so that it can refuse what a plain
``yaml.safe_load`` would silently accept — duplicate keys, non-string keys, merge keys,
aliases that expand without bound, nesting deep enough to exhaust the stack — and
records the line and column of every field so that later stages can point at it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import field
from typing import Any, cast

import yaml

from dsf_contract.problem import Problem
from dsf_contract.records import frozen

try:  # the C composer is several times faster; both behave the same here
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _Loader = yaml.SafeLoader

MAX_ALIAS_NODES = 10_000
MAX_DEPTH = 64
#: The tags a plain YAML document resolves to; any other tag (``!!python/object:…``,
#: ``!!binary``, ``!!set``, ``!custom``) was written on purpose and is refused by name.
_YAML_CORE = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(
    _YAML_CORE + name for name in ("str", "int", "float", "bool", "null", "timestamp")
)
_SEQUENCE_TAGS = frozenset({_YAML_CORE + "seq"})
_MAPPING_TAGS = frozenset({_YAML_CORE + "map"})
_PLAIN_TAGS = _SCALAR_TAGS | _SEQUENCE_TAGS | _MAPPING_TAGS
_STR_TAG = _YAML_CORE + "str"
#: Nesting libyaml's composer takes safely: it recurses in C per level and crashes the
#: interpreter (SIGSEGV) on tens of thousands of levels, before MAX_DEPTH is checked.
_COMPOSE_SAFE_DEPTH = 5_000

Pointer = tuple[str | int, ...]


@frozen
class Document:
    """One YAML document of one file, as plain Python values plus positions."""

    path: str
    index: int
    data: Any
    positions: Mapping[Pointer, tuple[int, int]] = field(repr=False)
    #: The source text of each unquoted scalar YAML read as something other than a
    #: string (``yes``, ``12``, ``1e3``, ``null``), to say what to quote.
    plain_text: Mapping[Pointer, str] = field(default_factory=dict, repr=False)
    #: Where loading already reported a problem (a refused tag): validation adds nothing
    #: at or below these, since the value there is not what was written.
    reported: frozenset[Pointer] = field(default=frozenset(), repr=False)

    def locate(self, pointer: Pointer) -> tuple[int, int]:
        """Line and column of ``pointer``, or of its nearest written ancestor."""
        for end in range(len(pointer), -1, -1):
            where = self.positions.get(pointer[:end])
            if where is not None:
                return where
        return (1, 1)

    def problem(self, pointer: Pointer, message: str) -> Problem:
        line, column = self.locate(pointer)
        return Problem(self.path, line, column, format_pointer(pointer), message)


def format_tag(tag: str) -> str:
    """``tag:yaml.org,2002:python/name:os.system`` → ``!!python/name:os.system``."""
    return "!!" + tag[len(_YAML_CORE) :] if tag.startswith(_YAML_CORE) else tag


def format_pointer(pointer: Pointer) -> str:
    """``("spec", "masks", 1, "scoreName")`` → ``spec.masks[1].scoreName``."""
    out = ""
    for part in pointer:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not part.isprintable() or not part:
            out += f"[{json.dumps(part)}]"  # a line break in a key must not split the problem line
        else:
            out += f".{part}" if out else part
    return out


class _Builder:
    """Turns one composed node graph into values, collecting problems."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.positions: dict[Pointer, tuple[int, int]] = {}
        self.problems: list[Problem] = []
        self.plain_text: dict[Pointer, str] = {}
        self.reported: set[Pointer] = set()
        self._constructor = yaml.constructor.SafeConstructor()
        self._seen: set[int] = set()
        self._alias_nodes = 0
        self._alias_site: Pointer = ()

    def build(self, node: yaml.Node, pointer: Pointer, depth: int, via_alias: bool) -> Any:
        if depth > MAX_DEPTH:
            raise _TooDeepError(node)
        if not via_alias and id(node) in self._seen and not isinstance(node, yaml.ScalarNode):
            via_alias = True
            self._alias_site = pointer
        self._seen.add(id(node))
        if via_alias:
            self._alias_nodes += 1
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise _AliasBombError(self._alias_site)
        allowed = (
            _MAPPING_TAGS
            if isinstance(node, yaml.MappingNode)
            else _SEQUENCE_TAGS
            if isinstance(node, yaml.SequenceNode)
            else _SCALAR_TAGS
        )
        if node.tag not in allowed:
            # what the tag would construct is not read; neither is the value under it
            self._report(*_mark(node), pointer, _unsupported_tag(node))
            self.reported.add(pointer)
            return node.value if isinstance(node, yaml.ScalarNode) else None
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, pointer, depth, via_alias)
        if isinstance(node, yaml.SequenceNode):
            out = []
            for index, item in enumerate(node.value):
                child = (*pointer, index)
                self.positions.setdefault(child, _mark(item))
                out.append(self.build(item, child, depth + 1, via_alias))
            return out
        return self._scalar(cast(yaml.ScalarNode, node), pointer)  # the composer's third kind

    def _mapping(
        self, node: yaml.MappingNode, pointer: Pointer, depth: int, via_alias: bool
    ) -> Any:
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line, column = _mark(key_node)
            if key_node.tag == "tag:yaml.org,2002:merge":
                self._report(line, column, pointer, "YAML merge keys (<<) are not supported")
                continue
            if key_node.tag not in _PLAIN_TAGS:
                self._report(line, column, pointer, _unsupported_tag(key_node, " on a key"))
                if isinstance(key_node, yaml.ScalarNode):  # not "missing" as well
                    self.reported.add((*pointer, key_node.value))
                continue
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
                text = key_node.value if isinstance(key_node, yaml.ScalarNode) else "a collection"
                self._report(line, column, pointer, f"key {text!r} must be a string (quote it)")
                continue
            key = key_node.value
            child = (*pointer, key)
            if key in out:
                self._report(line, column, child, "duplicate key")
                continue
            self.positions.setdefault(child, (line, column))
            out[key] = self.build(value_node, child, depth + 1, via_alias)
        return out

    def _scalar(self, node: yaml.ScalarNode, pointer: Pointer) -> Any:
        if node.tag == _STR_TAG:
            return node.value  # what the constructor makes of a string, without its bookkeeping
        try:
            value = self._constructor.construct_object(node, deep=True)
            if not isinstance(value, str) and not node.style:  # plain: None, or "" from libyaml
                self.plain_text[pointer] = node.value
            return value
        except (yaml.YAMLError, ValueError, OverflowError) as err:
            line, column = _mark(node)
            # a MarkedYAMLError's str() spans lines and names "<unicode string>"
            reason = str(err)
            if isinstance(err, yaml.MarkedYAMLError) and err.problem:
                reason = err.problem
            self._report(line, column, pointer, f"cannot read value: {reason}")
            # its text, so that validation adds no misleading "must be a string (null)"
            return node.value

    def key_position(self, pointer: Pointer) -> tuple[int, int]:
        """Where the innermost key on ``pointer`` is written (an alias in a list has no mark of its own)."""
        for end in range(len(pointer), 0, -1):
            if isinstance(pointer[end - 1], str):
                return self.positions[pointer[:end]]
        return self.positions.get((), (1, 1))

    def _report(self, line: int, column: int, pointer: Pointer, message: str) -> None:
        self.problems.append(Problem(self.path, line, column, format_pointer(pointer), message))


def _unsupported_tag(node: yaml.Node, where: str = "") -> str:
    return (
        f"YAML tag {format_tag(node.tag)}{where} is not supported (only plain YAML values are read)"
    )


class _AliasBombError(Exception):
    def __init__(self, pointer: Pointer) -> None:
        self.pointer = pointer


class _TooDeepError(Exception):
    def __init__(self, node: yaml.Node) -> None:
        self.node = node


def _mark(node: yaml.Node) -> tuple[int, int]:
    return (node.start_mark.line + 1, node.start_mark.column + 1)


def _nesting_bound(text: str) -> int:
    """An upper bound of the nesting depth of ``text``: flow brackets plus block indentation."""
    longest = max((len(line) for line in text.splitlines()), default=0)
    return text.count("[") + text.count("{") + 2 * longest + 2


def _mark_of(err: yaml.MarkedYAMLError) -> tuple[int, int]:
    mark = err.problem_mark or err.context_mark
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def _library_nesting_limit(err: yaml.YAMLError) -> tuple[int, int] | None:
    """Where the YAML library refused to nest further, if that is why it stopped.

    libyaml 0.2.5 (PyYAML >= 6.0.2's wheels) refuses 1,000 levels with its own error,
    scanning ahead of the events we count; a limit that high is past MAX_DEPTH, so the
    problem is ours to name, at the place the library stopped."""
    if isinstance(err, yaml.MarkedYAMLError) and "nesting depth" in str(err.problem):
        return _mark_of(err)
    return None


def _too_deep(text: str) -> tuple[int, int] | None:
    """Where ``text`` first nests deeper than MAX_DEPTH, read from the (iterative) event stream."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    return (mark.line + 1, mark.column + 1) if mark else (1, 1)
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
    except yaml.YAMLError as err:
        # otherwise composing stops at the same error, no deeper than MAX_DEPTH, and reports it
        return _library_nesting_limit(err)
    return None


def parse_yaml(text: str, path: str) -> tuple[list[Document], list[Problem]]:
    """Parse every document of ``text``; never raises for bad YAML."""
    documents: list[Document] = []
    problems: list[Problem] = []
    if "\x00" in text:
        return [], [Problem(path, 1, 1, "", "file is not text (it contains a NUL byte)")]
    if _nesting_bound(text) > _COMPOSE_SAFE_DEPTH:
        where = _too_deep(text)
        if where is not None:
            return [], [Problem(path, *where, "", f"nested deeper than {MAX_DEPTH} levels")]
    try:
        for index, node in enumerate(_compose_all(text)):
            if node is None or (
                isinstance(node, yaml.ScalarNode) and node.tag == "tag:yaml.org,2002:null"
            ):
                continue  # an empty document between two '---'
            builder = _Builder(path)
            builder.positions[()] = _mark(node)
            try:
                data = builder.build(node, (), 0, False)
            except _AliasBombError as err:
                line, column = builder.key_position(err.pointer)
                message = f"YAML aliases expand to more than {MAX_ALIAS_NODES} nodes"
                problems.append(Problem(path, line, column, format_pointer(err.pointer), message))
                continue
            except _TooDeepError as err:
                line, column = _mark(err.node)
                problems.append(
                    Problem(path, line, column, "", f"nested deeper than {MAX_DEPTH} levels")
                )
                continue
            problems.extend(builder.problems)
            documents.append(
                Document(
                    path,
                    index,
                    data,
                    builder.positions,
                    builder.plain_text,
                    frozenset(builder.reported),
                )
            )
    except yaml.MarkedYAMLError as err:
        line, column = _mark_of(err)
        reason = err.problem or err.context or "invalid YAML"
        if _library_nesting_limit(err) is not None:
            message = f"nested deeper than {MAX_DEPTH} levels"
        else:
            message = f"invalid YAML: {reason}"
        problems.append(Problem(path, line, column, "", message))
    except (yaml.YAMLError, RecursionError) as err:
        problems.append(Problem(path, 1, 1, "", f"invalid YAML: {type(err).__name__}"))
    return documents, problems


def _compose_all(text: str) -> Iterator[yaml.Node | None]:
    loader = _Loader(text)
    try:
        while loader.check_node():
            yield loader.get_node()
    finally:
        loader.dispose()
