"""CEL's grammar, read into a small tree so that an evaluation can be metered.

The interpreter (:mod:`.cel_engine`) parses and evaluates, but keeps its tree to itself;
OCM bounds every evaluation by cel-go's cost model, which counts the steps of that
tree (:mod:`.cel_cost`). This parser reads what the interpreter has already accepted:
anything it cannot read makes the expression *not evaluated*, never guessed.

Nodes are tuples whose first item names the kind: ``("lit", v)``, ``("ident", name)``,
``("select", operand, field)``, ``("has", operand, field)``, ``("index", operand, key)``,
``("call", name, target or None, args)``, ``("list", items)``, ``("map", pairs)``,
``("and", a, b)``, ``("or", a, b)``, ``("cond", c, t, f)`` and
``("fold", macro, var, range, first, second)`` for the comprehension macros.
"""

from __future__ import annotations

import itertools
import re
from typing import Any

Node = tuple[Any, ...]


class CelSyntaxError(ValueError):
    """What this parser does not read (the interpreter may still accept it)."""


_TOKEN_RE = re.compile(
    r"""
    (?P<space>\s+|//[^\n]*)
    |(?P<string>(?:[rR][bB]?|[bB][rR]?)?(?:'''|\"\"\"|'|\"))
    |(?P<number>0[xX][0-9a-fA-F]+[uU]?|\d*\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+[uU]?)
    |(?P<name>[A-Za-z_][A-Za-z0-9_]*)
    |(?P<op>\|\||&&|==|!=|<=|>=|[-+*/%!<>?:.,()\[\]{}])
    """,
    re.VERBOSE,
)
_ESCAPES = {
    "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
    "\\": "\\", "'": "'", '"': '"', "`": "`", "?": "?",
}  # fmt: skip
_ESCAPE_RE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.S)
_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
#: Binary operators by precedence level (lowest first) and the function each calls.
_RELATIONS = {"==": "_==_", "!=": "_!=_", "<": "_<_", "<=": "_<=_", ">": "_>_", ">=": "_>=_"}
_ADDITIVE = {"+": "_+_", "-": "_-_"}
_MULTIPLICATIVE = {"*": "_*_", "/": "_/_", "%": "_%_"}
#: Deeper nesting than this is refused (the interpreter refuses it well before).
_MAX_DEPTH = 250


def tokens(source: str) -> list[tuple[str, str, int]]:
    """``(kind, text, offset)`` for every token; strings hold their decoded value."""
    out: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(source):
        found = _TOKEN_RE.match(source, pos)
        if found is None:
            raise CelSyntaxError(f"unexpected character at {pos}")
        kind = found.lastgroup or ""
        if kind == "string":
            text, pos = _string(source, found.start(), found.end(), found.group())
            out.append(("string", text, found.start()))
            continue
        if kind != "space":
            out.append((kind, found.group(), found.start()))
        pos = found.end()
    return out


def _string(source: str, start: int, body: int, opener: str) -> tuple[str, int]:
    quote = opener.lstrip("rRbB")
    raw = "r" in opener.lower().replace(quote, "")
    end = body
    while True:
        end = source.find(quote, end)
        if end < 0:
            raise CelSyntaxError(f"unterminated string at {start}")
        backslashes = len(source[body:end]) - len(source[body:end].rstrip("\\"))
        if raw or backslashes % 2 == 0:
            break
        end += 1
    text = source[body:end]
    if len(quote) == 1 and "\n" in text:
        raise CelSyntaxError(f"newline in string at {start}")
    return (text if raw else _ESCAPE_RE.sub(_unescape, text)), end + len(quote)


def _unescape(found: re.Match[str]) -> str:
    code = found.group(1)
    if code[0] in "xuU" and len(code) > 1:
        return chr(int(code[1:], 16))
    if code[0] in "01234567" and len(code) == 3:
        return chr(int(code, 8))
    if code in _ESCAPES:
        return _ESCAPES[code]
    raise CelSyntaxError(f"invalid escape \\{code}")


def parse(source: str) -> Node:
    """The tree of ``source``; :class:`CelSyntaxError` when it cannot be read here."""
    parser = _Parser(tokens(source))
    node = parser.expression()
    if parser.pos != len(parser.items):
        raise CelSyntaxError("unexpected token after the expression")
    if _depth(node) > _MAX_DEPTH:
        raise CelSyntaxError("nested too deeply")
    return node


def _depth(tree: Node) -> int:
    # iterative: a chain of 3,000 ``+`` is one tree 3,000 levels deep
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


def children(node: Node) -> list[Node]:
    """The nodes directly under ``node``."""
    out: list[Node] = []
    for part in node[1:]:
        if isinstance(part, tuple) and part and isinstance(part[0], str):
            out.append(part)
        elif isinstance(part, tuple):
            for item in part:
                if isinstance(item, tuple) and item and isinstance(item[0], str):
                    out.append(item)
                elif isinstance(item, tuple):
                    out.extend(item)  # a map entry: (key, value)
    return out


class _Parser:
    def __init__(self, items: list[tuple[str, str, int]]) -> None:
        self.items = items
        self.pos = 0
        self.depth = 0

    def peek(self, text: str) -> bool:
        return (
            self.pos < len(self.items)
            and self.items[self.pos][1] == text
            and (self.items[self.pos][0] in ("op", "name"))
        )

    def take(self, text: str) -> None:
        if not self.peek(text):
            raise CelSyntaxError(f"expected {text!r}")
        self.pos += 1

    def next(self) -> tuple[str, str, int]:
        if self.pos >= len(self.items):
            raise CelSyntaxError("unexpected end")
        self.pos += 1
        return self.items[self.pos - 1]

    def expression(self) -> Node:
        self.depth += 1
        if self.depth > _MAX_DEPTH:
            raise CelSyntaxError("nested too deeply")
        node = self.logical("||")
        if self.peek("?"):
            self.take("?")
            truthy = self.logical("||")
            self.take(":")
            node = ("cond", node, truthy, self.expression())
        self.depth -= 1
        return node

    def logical(self, op: str) -> Node:
        node = self.logical("&&") if op == "||" else self.relation()
        while self.peek(op):
            self.take(op)
            right = self.logical("&&") if op == "||" else self.relation()
            node = ("or" if op == "||" else "and", node, right)
        return node

    def relation(self) -> Node:
        node = self.binary(_ADDITIVE, self.multiplicative)
        while self.pos < len(self.items):
            kind, text, _ = self.items[self.pos]
            name = _RELATIONS.get(text) if kind == "op" else ("@in" if text == "in" else None)
            if name is None:
                break
            self.pos += 1
            node = ("call", name, None, (node, self.binary(_ADDITIVE, self.multiplicative)))
        return node

    def multiplicative(self) -> Node:
        return self.binary(_MULTIPLICATIVE, self.unary)

    def binary(self, table: dict[str, str], operand: Any) -> Node:
        node: Node = operand()
        while self.pos < len(self.items) and self.items[self.pos][0] == "op":
            name = table.get(self.items[self.pos][1])
            if name is None:
                break
            self.pos += 1
            node = ("call", name, None, (node, operand()))
        return node

    def unary(self) -> Node:
        for op, name in (("!", "!_"), ("-", "-_")):
            if self.peek(op):
                self.take(op)
                operand = self.unary()
                if op == "-" and operand[0] == "lit" and type(operand[1]) in (int, float):
                    return ("lit", -operand[1])
                return ("call", name, None, (operand,))
        return self.member(self.primary())

    def member(self, node: Node) -> Node:
        while True:
            if self.peek("."):
                self.take(".")
                kind, name, _ = self.next()
                if kind != "name":
                    raise CelSyntaxError("expected a field name")
                node = self.member_call(node, name) if self.peek("(") else ("select", node, name)
            elif self.peek("["):
                self.take("[")
                key = self.expression()
                self.take("]")
                node = ("index", node, key)
            elif self.peek("{"):
                raise CelSyntaxError("message construction is not read")
            else:
                return node

    def member_call(self, target: Node, name: str) -> Node:
        args = self.arguments()
        if name in _MACROS and len(args) in (2, 3) and args[0][0] == "ident":
            if len(args) == 3 and name != "map":
                raise CelSyntaxError(f"{name} takes two arguments")
            second = args[2] if len(args) == 3 else None
            return ("fold", name, args[0][1], target, args[1], second)
        return ("call", name, target, tuple(args))

    def arguments(self) -> list[Node]:
        self.take("(")
        args = self.sequence(")")
        return args

    def sequence(self, close: str) -> list[Node]:
        items: list[Node] = []
        while not self.peek(close):
            items.append(self.expression())
            if not self.peek(close):
                self.take(",")
        self.take(close)
        return items

    def primary(self) -> Node:
        kind, text, _ = self.next()
        if kind == "string":
            return ("lit", text)
        if kind == "number":
            return ("lit", _number(text))
        if kind == "name":
            return self.name(text)
        if text == "(":
            node = self.expression()
            self.take(")")
            return node
        if text == "[":
            return ("list", tuple(self.sequence("]")))
        if text == "{":
            return ("map", tuple(self.pairs()))
        raise CelSyntaxError(f"unexpected {text!r}")

    def name(self, text: str) -> Node:
        constants = {"true": True, "false": False, "null": None}
        if text in constants:
            return ("lit", constants[text])
        if not self.peek("("):
            return ("ident", text)
        args = self.arguments()
        if text == "has":
            if len(args) != 1 or args[0][0] != "select":
                raise CelSyntaxError("has() takes a field selection")
            return ("has", args[0][1], args[0][2])
        return ("call", text, None, tuple(args))

    def pairs(self) -> list[tuple[Node, Node]]:
        out: list[tuple[Node, Node]] = []
        while not self.peek("}"):
            key = self.expression()
            self.take(":")
            out.append((key, self.expression()))
            if not self.peek("}"):
                self.take(",")
        self.take("}")
        return out


def _number(text: str) -> int | float:
    unsigned = text[-1] in "uU"
    body = text[:-1] if unsigned else text
    if body[:2].lower() == "0x":
        return int(body, 16)
    if any(c in body for c in ".eE"):
        return float(body)
    return int(body)


def call_names(source: str) -> list[tuple[int, str]]:
    """``(offset, name)`` of every name called as a function (``name(`` or ``.name(``)."""
    items = tokens(source)
    return [
        (offset, text)
        for (kind, text, offset), after in itertools.pairwise(items)
        if kind == "name" and after[0] == "op" and after[1] == "("
    ]


def closed_nodes(tree: Node) -> frozenset[int]:
    """The ``id`` of every call and comprehension that reads no variable from outside it.

    Such a part has the same value and cost on every cluster, so a run computes it once.
    """
    found: set[int] = set()
    _free(tree, found)
    return frozenset(found)


def _free(node: Node, found: set[int]) -> frozenset[str]:
    kind = node[0]
    if kind == "ident":
        return frozenset({node[1]})
    if kind == "fold":
        _, _, var, source, first, second = node
        inner = _free(first, found) | (_free(second, found) if second is not None else frozenset())
        names = _free(source, found) | (inner - {var})
    else:
        names = frozenset().union(*(_free(child, found) for child in children(node)))
    if not names and kind in ("call", "fold"):
        found.add(id(node))
    return names
