"""PowerPoint via python-pptx: one segment per slide, speaker notes included."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pptx
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.group import GroupShape
from pptx.slide import Slide
from pptx.table import Table

from autorag.ingest.parsers.dates import office_date
from autorag.models import ParsedDocument, Segment

_CELL_SEPARATOR = " | "


class PptxParser:
    doc_type = "pptx"
    extensions: tuple[str, ...] = (".pptx",)

    def parse(self, path: Path) -> ParsedDocument:
        presentation = pptx.Presentation(str(path))
        slides = list(presentation.slides)
        texts = [_slide_text(slide) for slide in slides]
        return ParsedDocument(
            segments=[Segment(text, page=n) for n, text in enumerate(texts, start=1) if text],
            title=_title(slides[0]) if slides else None,
            doc_type=self.doc_type,
            pages=len(slides),
            date=office_date(presentation.core_properties),
        )


def _slide_text(slide: Slide) -> str:
    parts = [text for shape in slide.shapes for text in _shape_texts(shape)]
    parts.append(_notes_text(slide))
    return "\n\n".join(part for part in parts if part)


def _shape_texts(shape: BaseShape) -> Iterator[str]:
    if isinstance(shape, GroupShape):
        for child in shape.shapes:
            yield from _shape_texts(child)
    elif isinstance(shape, GraphicFrame) and shape.has_table:
        yield _table_text(shape.table)
    elif isinstance(shape, Shape) and shape.has_text_frame:
        yield _clean(shape.text_frame.text)


def _table_text(table: Table) -> str:
    rows = (
        _CELL_SEPARATOR.join(
            " ".join(cell.text.split()) for cell in row.cells if not cell.is_spanned
        )
        for row in table.rows
    )
    return "\n".join(row for row in rows if row.replace("|", "").strip())


def _notes_text(slide: Slide) -> str:
    if not slide.has_notes_slide:
        return ""
    frame = slide.notes_slide.notes_text_frame
    return _clean(frame.text) if frame is not None else ""


def _title(slide: Slide) -> str | None:
    shape = slide.shapes.title
    return (_clean(shape.text_frame.text) or None) if shape is not None else None


def _clean(text: str) -> str:
    # python-pptx renders a soft line break (Shift+Enter) as a vertical tab.
    return text.replace("\v", "\n").strip()
