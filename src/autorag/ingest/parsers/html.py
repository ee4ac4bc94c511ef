"""HTML via BeautifulSoup (stdlib parser): visible text with the block structure kept."""

from __future__ import annotations

import re
from pathlib import Path

from bs4 import BeautifulSoup, Tag
from bs4.element import CData, NavigableString

from autorag.models import ParsedDocument, Segment

# Never shown to a reader; <title> goes too once read. Not all of <head>: with a missing
# </head> the stdlib parser nests the whole body inside it.
_INVISIBLE = ("script", "style", "noscript", "template", "title")
# Blocks that stand apart as paragraphs (blank line) or merely start a new line.
_PARAGRAPH_TAGS = frozenset(
    {"p", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "table", "ul", "ol", "dl"}
    | {"figure", "hr", "section", "article", "aside", "header", "footer", "main", "nav"}
)
_LINE_TAGS = frozenset(
    {"div", "li", "tr", "dt", "dd", "caption", "figcaption", "address", "details", "summary"}
    | {"fieldset", "form", "legend", "hgroup", "dialog", "br"}
)
_CELL_TAGS = frozenset({"td", "th"})
_CELL_SEPARATOR = " | "
_HTML_SPACE = re.compile(r"[ \t\n\r\f]+")  # what HTML collapses; a no-break space stays


class _Verbatim(str):
    """Text from <pre>: its spaces and newlines are content."""


_Part = str | int  # a run of text, or a break of that many newlines


class HtmlParser:
    doc_type = "html"
    extensions: tuple[str, ...] = (".html", ".htm")

    def parse(self, path: Path) -> ParsedDocument:
        # Bytes, not str: BeautifulSoup honours <meta charset> and detects the rest.
        soup = BeautifulSoup(path.read_bytes(), "html.parser")
        title = _title(soup)
        for tag in soup.find_all(_INVISIBLE):
            tag.decompose()
        parts: list[_Part] = []
        _collect(soup, parts)
        return ParsedDocument(
            segments=[Segment(_assemble(parts))], title=title, doc_type=self.doc_type
        )


def _title(soup: BeautifulSoup) -> str | None:
    for tag in (soup.title, soup.find("h1")):
        text = " ".join(tag.get_text().split()) if tag is not None else ""
        if text:
            return text
    return None


def _collect(node: Tag, parts: list[_Part]) -> None:
    for child in node.children:
        if isinstance(child, Tag):
            _collect_tag(child, parts)
        elif type(child) in (NavigableString, CData):  # not comments, doctypes, ...
            parts.append(_HTML_SPACE.sub(" ", str(child)))


def _collect_tag(tag: Tag, parts: list[_Part]) -> None:
    newlines = 2 if tag.name in _PARAGRAPH_TAGS else 1 if tag.name in _LINE_TAGS else 0
    parts.append(newlines)
    if tag.name == "pre":
        parts.append(_Verbatim(tag.get_text()))
    elif tag.name == "tr":
        parts.append(_row_text(tag))
    else:
        _collect(tag, parts)
    parts.append(newlines)


def _row_text(row: Tag) -> str:
    cells = row.find_all(_CELL_TAGS, recursive=False)
    return _CELL_SEPARATOR.join(" ".join(cell.get_text(" ").split()) for cell in cells)


def _assemble(parts: list[_Part]) -> str:
    """Join text runs, turning the pending breaks between them into newlines."""
    out: list[str] = []
    pending = 0
    for part in parts:
        if isinstance(part, int):
            pending = max(pending, part)
        elif part.strip() or isinstance(part, _Verbatim):
            _append(out, part, pending)
            pending = 0
        elif out and not pending:  # whitespace between inline elements
            _append(out, " ", 0)
    return "".join(out).strip()


def _append(out: list[str], part: str, newlines: int) -> None:
    if newlines and out:
        out[-1] = out[-1].rstrip(" ")
        out.append("\n" * newlines)
    at_line_start = not out or out[-1].endswith(("\n", " "))
    if at_line_start and not isinstance(part, _Verbatim):
        part = part.lstrip(" ")
    if part:
        out.append(part)
