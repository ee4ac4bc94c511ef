"""A document's text with its OCR pages: the text layer where it has one, OCR's text
for the pages it read, in page order."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from autorag.ingest.parsers import parse_file
from autorag.ingest.parsers.guards import IngestLimits
from autorag.models import ParsedDocument, Segment
from autorag.ocr.quality import visible_chars
from autorag.ocr.store import OcrPage

_READ = ("done", "low")  # page statuses that carry OCR text


def merged_document(path: Path, pages: Sequence[OcrPage], limits: IngestLimits) -> ParsedDocument:
    """The parsed file with each OCR'd page's text in place of its thin text layer.

    A page keeps its text layer when that holds more than OCR read (a short page of
    real text, where OCR can only add misreadings).
    """
    base = parse_file(path, limits=limits)
    layer = _text_by_page(base.segments)
    ocr = {
        p.page: p.text
        for p in pages
        if p.status in _READ and visible_chars(p.text) > visible_chars(layer.get(p.page, ""))
    }
    kept = [s for s in base.segments if s.page not in ocr]
    read = [Segment(text, page=page) for page, text in ocr.items()]
    segments = sorted(kept + read, key=lambda s: (s.page is None, s.page or 0))
    return ParsedDocument(
        segments=segments,
        title=base.title,
        doc_type=base.doc_type,
        pages=base.pages,
        metadata=base.metadata,
    )


def _text_by_page(segments: Sequence[Segment]) -> dict[int, str]:
    texts: dict[int, str] = {}
    for segment in segments:
        if segment.page is not None:
            texts[segment.page] = texts.get(segment.page, "") + segment.text
    return texts
