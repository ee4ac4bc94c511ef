"""A small regex syntax tree for the built-in patterns.

Each built-in is written once as a tree and used twice: rendered to RE2 syntax for
scanning (``render``), and compiled to an NFA that tells the streaming redactor whether
the text so far could still grow into a match (``autorag.dlp.nfa``). One definition
keeps the two in step: the NFA accepts exactly the language RE2 searches for.

Only what the built-ins need is here: character sets over code points, literal text
(optionally ASCII case-insensitive, rendered as explicit ``[Aa]`` sets so RE2's Unicode
case folding cannot make the two disagree), sequences, alternatives, counted
repetition, one named capture (``value``: the part to redact) and two assertions, RE2's
ASCII ``\\b`` and the end of the text ``\\z``.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Literal

Range = tuple[int, int]  # inclusive code points
WORD_CHARS = frozenset(string.ascii_letters + string.digits + "_")  # RE2's \b is ASCII


@dataclass(frozen=True)
class Chars:
    """One character out of a set of ranges, or out of its complement."""

    ranges: tuple[Range, ...]
    negated: bool = False

    def accepts(self, char: str) -> bool:
        point = ord(char)
        inside = any(low <= point <= high for low, high in self.ranges)
        return inside is not self.negated


@dataclass(frozen=True)
class Text:
    text: str
    ignore_case: bool = False  # ASCII letters only


@dataclass(frozen=True)
class Seq:
    parts: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    node: Node
    low: int
    high: int | None  # None: unbounded


@dataclass(frozen=True)
class Capture:
    name: str
    node: Node


@dataclass(frozen=True)
class Assertion:
    kind: Literal["word_boundary", "end_of_text"]


Node = Chars | Text | Seq | Alt | Repeat | Capture | Assertion

WORD_BOUNDARY = Assertion("word_boundary")
END_OF_TEXT = Assertion("end_of_text")


# -- building -------------------------------------------------------------------------
def chars(spec: str, *, negated: bool = False) -> Chars:
    """A set written as in a regex class body: ``"A-Za-z0-9._%+-"`` (a '-' at an end is
    itself)."""
    ranges: list[Range] = []
    index = 0
    while index < len(spec):
        if index + 2 < len(spec) and spec[index + 1] == "-":
            ranges.append((ord(spec[index]), ord(spec[index + 2])))
            index += 3
        else:
            ranges.append((ord(spec[index]), ord(spec[index])))
            index += 1
    return Chars(tuple(ranges), negated)


def text(value: str, *, ignore_case: bool = False) -> Text:
    return Text(value, ignore_case)


def seq(*parts: Node) -> Seq:
    return Seq(parts)


def alt(*options: Node) -> Alt:
    return Alt(options)


def repeat(node: Node, low: int, high: int | None) -> Repeat:
    return Repeat(node, low, high)


def optional(node: Node) -> Repeat:
    return Repeat(node, 0, 1)


def some(node: Node) -> Repeat:
    """One or more."""
    return Repeat(node, 1, None)


def any_number(node: Node) -> Repeat:
    """Zero or more."""
    return Repeat(node, 0, None)


def capture(name: str, node: Node) -> Capture:
    return Capture(name, node)


def letter_chars(char: str, ignore_case: bool) -> Chars:
    """The set one character of a literal stands for."""
    if ignore_case and char.isascii() and char.isalpha():
        lower, upper = ord(char.lower()), ord(char.upper())
        return Chars(((upper, upper), (lower, lower)))
    return Chars(((ord(char), ord(char)),))


# -- rendering to RE2 syntax ----------------------------------------------------------
_CONTROL = {"\t": r"\t", "\n": r"\n", "\r": r"\r", "\f": r"\f", "\v": r"\v"}
_SPECIAL = frozenset("\\.+*?()|[]{}^$")  # RE2 metacharacters
_SPECIAL_IN_SET = frozenset("\\[]^-")


def render(node: Node) -> str:
    """The node in RE2 syntax."""
    match node:
        case Chars():
            return _render_chars(node)
        case Text():
            return "".join(_render_text_char(c, node.ignore_case) for c in node.text)
        case Seq():
            return "".join(_atom(p) if isinstance(p, Alt) else render(p) for p in node.parts)
        case Alt():
            return "|".join(render(option) for option in node.options)
        case Repeat():
            return _atom(node.node) + _quantifier(node.low, node.high)
        case Capture():
            return f"(?P<{node.name}>{render(node.node)})"
        case Assertion():
            return r"\b" if node.kind == "word_boundary" else r"\z"


def _atom(node: Node) -> str:
    """The node as one unit a quantifier can follow."""
    if isinstance(node, Chars | Capture) or (isinstance(node, Text) and len(node.text) == 1):
        return render(node)
    return f"(?:{render(node)})"


def _quantifier(low: int, high: int | None) -> str:
    if high is None:
        return {0: "*", 1: "+"}.get(low, f"{{{low},}}")
    if (low, high) == (0, 1):
        return "?"
    return f"{{{low}}}" if low == high else f"{{{low},{high}}}"


def _render_chars(node: Chars) -> str:
    body = "".join(
        _escape(chr(low), _SPECIAL_IN_SET)
        if low == high
        else f"{_escape(chr(low), _SPECIAL_IN_SET)}-{_escape(chr(high), _SPECIAL_IN_SET)}"
        for low, high in node.ranges
    )
    return f"[{'^' if node.negated else ''}{body}]"


def _render_text_char(char: str, ignore_case: bool) -> str:
    if ignore_case and char.isascii() and char.isalpha() and char.lower() != char.upper():
        return f"[{char.upper()}{char.lower()}]"
    return _escape(char, _SPECIAL)


def _escape(char: str, special: frozenset[str]) -> str:
    if char in special:
        return "\\" + char
    if char in _CONTROL:
        return _CONTROL[char]
    if char.isascii() and char.isprintable():
        return char
    return f"\\x{{{ord(char):X}}}"
