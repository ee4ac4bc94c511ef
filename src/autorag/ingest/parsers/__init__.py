"""The parser for each file extension, and ``parse_file``: guards, parser, one error type."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from autorag.ingest.parsers import guards
from autorag.ingest.parsers.base import ParseError, Parser
from autorag.models import ParsedDocument

__all__ = ["PARSERS", "ParseError", "Parser", "parse_file", "parser_for"]

# Each extension's parser as "module:Class" under this package. A parser module, and the
# library it wraps (pypdf, python-docx, openpyxl, BeautifulSoup...), is imported when the
# first file of its type is read: a refresh that finds nothing new imports none of them.
# tests/unit/test_parsers.py keeps this table equal to the parsers' own ``extensions``.
_WHERE: dict[str, str] = {
    ".pdf": "pdf:PdfParser",
    ".docx": "docx:DocxParser",
    ".pptx": "pptx:PptxParser",
    ".xlsx": "tabular:XlsxParser",
    ".csv": "tabular:CsvParser",
    ".txt": "text:TextParser",
    ".md": "text:MarkdownParser",
    ".markdown": "text:MarkdownParser",
    ".html": "html:HtmlParser",
    ".htm": "html:HtmlParser",
    **dict.fromkeys((".png", ".jpg", ".jpeg", ".tif", ".tiff"), "image:ImageParser"),
}


class _Parsers(Mapping[str, Parser]):
    """Extension → parser; each parser is built (its module imported) on first use."""

    def __init__(self) -> None:
        self._built: dict[str, Parser] = {}

    def __getitem__(self, extension: str) -> Parser:
        where = _WHERE[extension]
        if where not in self._built:
            module, name = where.split(":")
            parser_class = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            self._built[where] = parser_class()
        return self._built[where]

    def __iter__(self) -> Iterator[str]:
        return iter(_WHERE)

    def __len__(self) -> int:
        return len(_WHERE)


PARSERS: Mapping[str, Parser] = _Parsers()


def parser_for(path: Path) -> Parser:
    """The parser for ``path``'s extension (case-insensitive)."""
    suffix = path.suffix.lower()
    parser = PARSERS.get(suffix)
    if parser is None:
        what = f"'{suffix}'" if suffix else f"of '{path.name}' (no extension)"
        raise ParseError(f"unsupported file type {what}", reason="unsupported_type")
    return parser


def parse_file(path: Path, *, limits: guards.IngestLimits) -> ParsedDocument:
    """Check ``path`` against ``limits`` and parse it; every failure is a ``ParseError``."""
    parser = parser_for(path)
    guards.check_file(path, limits)
    document = _run(parser, path)
    if not document.needs_ocr and not any(s.text.strip() for s in document.segments):
        raise ParseError(f"{path.name} contains no text", reason="empty")
    return document


def _run(parser: Parser, path: Path) -> ParsedDocument:
    try:
        return parser.parse(path)
    except ParseError:
        raise
    except Exception as exc:  # hostile or broken input must not crash ingestion
        raise ParseError(
            f"{path.name} is not a readable {parser.doc_type} file: {type(exc).__name__}: {exc}",
            reason="corrupt",
        ) from exc
