"""Spreadsheets and CSV: rows grouped into chunks, each starting with the header row."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import datetime, time
from pathlib import Path
from typing import Any

import openpyxl

from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.dates import office_date
from autorag.ingest.parsers.text import decode_text
from autorag.models import ParsedDocument, Segment

DEFAULT_MAX_CHARS = 1000
_CELL_SEPARATOR = " | "
_SNIFF_CHARS = 64 * 1024
_SNIFF_DELIMITERS = ",;\t|"


class XlsxParser:
    """``.xlsx``: every sheet on its own, its first non-empty row as its header."""

    doc_type = "xlsx"
    extensions: tuple[str, ...] = (".xlsx",)

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_chars = _positive(max_chars)

    def parse(self, path: Path) -> ParsedDocument:
        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
        try:
            segments = [
                segment
                for sheet in workbook.worksheets
                for segment in _sheet_segments(sheet, self.max_chars)
            ]
            title = (workbook.properties.title or "").strip() or None
            created = office_date(workbook.properties)
        finally:
            workbook.close()  # read-only mode keeps the file open until told otherwise
        return ParsedDocument(
            segments=segments, title=title, doc_type=self.doc_type, pre_chunked=True, date=created
        )


class CsvParser:
    """``.csv``: encoding detected like plain text, delimiter and quoting sniffed."""

    doc_type = "csv"
    extensions: tuple[str, ...] = (".csv",)

    def __init__(self, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        self.max_chars = _positive(max_chars)

    def parse(self, path: Path) -> ParsedDocument:
        text = decode_text(path.read_bytes())
        rows = csv.reader(io.StringIO(text), _sniff_dialect(text))
        try:
            segments = group_rows(rows, self.max_chars)
        except csv.Error as exc:
            raise ParseError(f"CSV is malformed: {exc}", reason="corrupt") from exc
        return ParsedDocument(segments=segments, doc_type=self.doc_type, pre_chunked=True)


def group_rows(
    rows: Iterable[Iterable[Any]], max_chars: int, section: str | None = None
) -> list[Segment]:
    """Pack rendered rows into segments of at most ``max_chars``, header on top of each.

    A row too long to share a segment gets one of its own (header included), over the limit.
    """
    lines = (line for line in map(_row_text, rows) if line)
    header = next(lines, None)
    if header is None:
        return []
    segments: list[Segment] = []
    current = [header]
    size = len(header)
    for line in lines:
        if len(current) > 1 and size + 1 + len(line) > max_chars:
            segments.append(Segment("\n".join(current), section=section))
            current, size = [header], len(header)
        current.append(line)
        size += 1 + len(line)
    segments.append(Segment("\n".join(current), section=section))
    return segments


def _sheet_segments(sheet: Any, max_chars: int) -> list[Segment]:
    # Read-only mode trusts the sheet's stored dimensions, which some writers get wrong
    # (e.g. "A1"), cutting rows short; forgetting them makes openpyxl read every cell.
    sheet.reset_dimensions()
    return group_rows(sheet.iter_rows(values_only=True), max_chars, section=sheet.title)


def _sniff_dialect(text: str) -> type[csv.Dialect]:
    sample = text[:_SNIFF_CHARS]
    if len(text) > _SNIFF_CHARS:
        sample = sample[: sample.rfind("\n") + 1] or sample  # a cut-off last row misleads
    try:
        return csv.Sniffer().sniff(sample, delimiters=_SNIFF_DELIMITERS)
    except csv.Error:  # one column, or too few rows to tell
        return csv.excel


def _row_text(values: Iterable[Any]) -> str:
    cells = [_cell_text(value) for value in values]
    while cells and not cells[-1]:
        cells.pop()
    return _CELL_SEPARATOR.join(cells)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime) and value.time() == time():
        return value.date().isoformat()  # a date cell: midnight is Excel's way of saying none
    return " ".join(str(value).split())


def _positive(max_chars: int) -> int:
    if max_chars < 1:
        raise ValueError(f"max_chars must be positive, got {max_chars}")
    return max_chars
