"""One escaping function per output format, for text the compiler did not write itself.

Names, score names, hub conditions and rendered files come from pull requests and hubs.
Whatever of them reaches an output goes through the function of that output's format:

- :func:`terminal` — a terminal, a log: every character a terminal would act on or that
  would start a new line (C0 and C1 controls, line and paragraph separators, bidi
  overrides, lone surrogates) is shown escaped (``\\x1b``, ``\\u202e``), so one value
  stays on its line and cannot clear the screen or fake a hyperlink.
- :func:`markdown` — inline Markdown, a table cell included (GitHub's flavour): the value
  cannot end its row, open a heading, list, link, image, autolink, HTML tag, entity,
  mention, reference, emphasis, code or math; it shows as the text it is.
- :func:`code_fence` — a fenced code block (a diff in a pull-request comment) that no line
  of the content can close.
- :func:`github_message` and :func:`github_property` — a workflow command
  (``::error file=…,line=…::message``), encoded as GitHub's runner decodes it.

- :func:`json_text` — JSON: ``json.dumps`` escapes C0 controls but, without
  ``ensure_ascii``, leaves C1 controls, bidi overrides and lone surrogates raw; this
  escapes them the JSON way (``\\u009b``).
"""

from __future__ import annotations

import re

__all__ = [
    "code_fence",
    "github_message",
    "github_property",
    "json_text",
    "markdown",
    "terminal",
    "terminal_lines",
]


def terminal(text: str) -> str:
    """``text`` as one printable line: every non-printable character escaped (``\\x1b``).

    Line breaks are escaped too (``\\n``): a value never starts a line of its own.
    """
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else _escape(ch) for ch in text)


def terminal_lines(text: str) -> str:
    """``text`` whose ``\\n`` separate the lines the compiler wrote: each line escaped alone."""
    return "\n".join(terminal(line) for line in text.split("\n"))


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


# Every ASCII character Markdown (CommonMark, GitHub's extensions) gives a meaning to
# inline: emphasis, code, links and images, autolinks and HTML, entities, math, table
# cells, mentions and references. A backslash before ASCII punctuation always means the
# character itself.
_MARKDOWN_SPECIAL = frozenset("\\`*_~[]<>!&|$#@:")
# GitHub links a bare www.example.com: the escaped dot breaks the match.
_WWW = re.compile(r"(?i)(www)\.")


def markdown(text: str) -> str:
    """``text`` as inline Markdown that shows as itself, safe inside a table cell.

    Non-printable characters (line breaks included) are escaped first, as
    :func:`terminal` does, then the backslashes of those escapes and every character
    Markdown acts on get a backslash.
    """
    shown = "".join(f"\\{ch}" if ch in _MARKDOWN_SPECIAL else ch for ch in terminal(text))
    return _WWW.sub(r"\1\\.", shown)


_BACKTICKS = re.compile(r"`+")


def code_fence(content: str, info: str = "") -> str:
    """``content`` as a fenced code block whose fence no line of ``content`` can close.

    The fence is one backtick longer than the longest run of backticks in ``content``;
    each line is escaped as :func:`terminal` does (a carriage return or an ESC inside
    the block would still reach a reader's terminal or confuse a renderer).
    """
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    body = terminal_lines(content.removesuffix("\n"))
    return f"{fence}{info}\n{body}\n{fence}\n"


def github_message(text: str) -> str:
    """The message of a workflow command: ``%``, CR and LF percent-encoded, the rest printable."""
    encoded = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return terminal(encoded)


def github_property(text: str) -> str:
    """A property value of a workflow command (``file=…``): also ``:`` and ``,`` encoded."""
    return github_message(text).replace(":", "%3A").replace(",", "%2C")


def json_text(encoded: str) -> str:
    """The text of ``json.dumps(..., ensure_ascii=False)`` with every non-printable character
    left in it written as a JSON escape (``\\u202e``); the same JSON value, printable."""
    if encoded.isprintable() or encoded.replace("\n", "").isprintable():  # at C speed
        return encoded
    # json.dumps escaped every C0 control inside strings: a raw "\n" is its own indentation
    return "".join(ch if ch.isprintable() or ch == "\n" else _json_escape(ch) for ch in encoded)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
