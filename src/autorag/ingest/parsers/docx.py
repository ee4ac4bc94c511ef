"""Word documents via python-docx, with mammoth's raw text as the fallback reader."""

from __future__ import annotations

from pathlib import Path

import docx
import mammoth
from docx.document import Document
from docx.table import Table, _Cell, _Row
from docx.text.paragraph import Paragraph

from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.dates import office_date
from autorag.models import ParsedDocument, Segment

_CELL_SEPARATOR = " | "


class DocxParser:
    doc_type = "docx"
    extensions: tuple[str, ...] = (".docx",)

    def parse(self, path: Path) -> ParsedDocument:
        try:
            return self._parse_structured(path)
        except Exception as docx_error:  # python-docx rejects some files Word opens fine
            return self._parse_raw(path, docx_error)

    def _parse_structured(self, path: Path) -> ParsedDocument:
        document = docx.Document(str(path))
        return ParsedDocument(
            segments=[Segment(_body_text(document))],
            title=_title(document),
            doc_type=self.doc_type,
            date=office_date(document.core_properties),
        )

    def _parse_raw(self, path: Path, docx_error: Exception) -> ParsedDocument:
        try:
            with path.open("rb") as file:
                raw = mammoth.extract_raw_text(file).value
        except Exception as exc:
            raise ParseError(
                f"DOCX is damaged: {docx_error}; the fallback reader failed too: {exc}",
                reason="corrupt",
            ) from exc
        text = str(raw).replace("\r\n", "\n").strip()
        return ParsedDocument(segments=[Segment(text)], doc_type=self.doc_type)


def _body_text(document: Document) -> str:
    blocks = (_block_text(block) for block in document.iter_inner_content())
    return "\n\n".join(block for block in blocks if block)


def _block_text(block: Paragraph | Table) -> str:
    if isinstance(block, Table):
        return _table_text(block)
    return block.text.strip()


def _table_text(table: Table) -> str:
    rows = (_CELL_SEPARATOR.join(_row_cells(row)) for row in table.rows)
    return "\n".join(row for row in rows if row.replace("|", "").strip())


def _row_cells(row: _Row) -> list[str]:
    # A cell spanning several grid columns comes back once per column, as the same object.
    cells: list[_Cell] = []
    for cell in row.cells:
        if not cells or cell is not cells[-1]:
            cells.append(cell)
    return [" ".join(cell.text.split()) for cell in cells]


def _title(document: Document) -> str | None:
    title = (document.core_properties.title or "").strip()
    return title or _first_heading(document)


def _first_heading(document: Document) -> str | None:
    for paragraph in document.paragraphs:
        style = paragraph.style.name if paragraph.style is not None else None
        if style and (style == "Title" or style.startswith("Heading")) and paragraph.text.strip():
            return paragraph.text.strip()
    return None
