"""The parser for each file extension, and ``parse_file``: guards, parser, one error type."""

from __future__ import annotations

from pathlib import Path

from autorag.ingest.parsers import guards
from autorag.ingest.parsers.base import ParseError, Parser
from autorag.ingest.parsers.docx import DocxParser
from autorag.ingest.parsers.html import HtmlParser
from autorag.ingest.parsers.image import ImageParser
from autorag.ingest.parsers.pdf import PdfParser
from autorag.ingest.parsers.pptx import PptxParser
from autorag.ingest.parsers.tabular import CsvParser, XlsxParser
from autorag.ingest.parsers.text import MarkdownParser, TextParser
from autorag.models import ParsedDocument

__all__ = ["PARSERS", "ParseError", "Parser", "parse_file", "parser_for"]

_ALL_PARSERS: tuple[Parser, ...] = (
    PdfParser(),
    DocxParser(),
    PptxParser(),
    XlsxParser(),
    CsvParser(),
    TextParser(),
    MarkdownParser(),
    HtmlParser(),
    ImageParser(),
)

PARSERS: dict[str, Parser] = {
    extension: parser for parser in _ALL_PARSERS for extension in parser.extensions
}


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
