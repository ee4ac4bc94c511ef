"""PDF via pypdf: one segment per page that has text."""

from __future__ import annotations

from pathlib import Path

from pypdf import PageObject, PasswordType, PdfReader
from pypdf.errors import DependencyError, PyPdfError

from autorag.ingest.parsers.base import ParseError
from autorag.ingest.parsers.dates import pdf_date
from autorag.models import ParsedDocument, Segment

# Fewer visible characters than this across the whole file means the pages are images
# (a scan): the text layer, if any, is noise and OCR has to read it instead.
_MIN_TEXT_CHARS = 100


class PdfParser:
    doc_type = "pdf"
    extensions: tuple[str, ...] = (".pdf",)

    def parse(self, path: Path) -> ParsedDocument:
        try:
            return self._parse(path)
        except DependencyError as exc:
            # pypdf decrypts AES only with the optional `cryptography` package.
            message = f"PDF is encrypted and cannot be opened: {exc}"
            raise ParseError(message, reason="encrypted") from exc
        except PyPdfError as exc:
            raise ParseError(f"PDF is damaged or not a PDF: {exc}", reason="corrupt") from exc

    def _parse(self, path: Path) -> ParsedDocument:
        reader = PdfReader(path)
        _unlock(reader)
        if not reader.pages:
            raise ParseError("PDF has no pages", reason="empty")
        texts = [_page_text(page) for page in reader.pages]
        return ParsedDocument(
            segments=[Segment(text, page=n) for n, text in enumerate(texts, start=1) if text],
            title=_title(reader),
            doc_type=self.doc_type,
            pages=len(texts),
            needs_ocr=_visible_chars(texts) < _MIN_TEXT_CHARS,
            ocr_pages=_pages_without_text(texts),
            date=pdf_date(reader),
        )


def _unlock(reader: PdfReader) -> None:
    # Many PDFs are "encrypted" only to restrict printing or copying, with an empty
    # password for opening; those read fine.
    if reader.is_encrypted and reader.decrypt("") == PasswordType.NOT_DECRYPTED:
        raise ParseError("PDF is encrypted with a password", reason="encrypted")


def _page_text(page: PageObject) -> str:
    return page.extract_text().strip()


# Placeholders PDF writers put in /Title when the author set none; the file name says more.
_PLACEHOLDER_TITLES = frozenset({"untitled", "anonymous", "document", "microsoft word"})


def _title(reader: PdfReader) -> str | None:
    title = ((reader.metadata.title if reader.metadata else None) or "").strip()
    return None if title.lower() in _PLACEHOLDER_TITLES else title or None


def _visible_chars(texts: list[str]) -> int:
    return sum(len("".join(text.split())) for text in texts)


def _pages_without_text(texts: list[str]) -> tuple[int, ...]:
    # The document's bar, page by page: a mixed PDF has scanned pages between text ones.
    return tuple(
        n for n, text in enumerate(texts, start=1) if _visible_chars([text]) < _MIN_TEXT_CHARS
    )
