"""Reading a source: a document's text page by page, the passage a citation points to,
the heading a passage sits under, and the original file.

The text is the one the index holds, rebuilt from the document's chunks: each carries
its true offset into the parsed text (chunker.py), so overlapping chunks line up, and
the blank space the chunker stripped between two chunks comes back as blank space of
the same length. Offsets therefore stay the index's, and a citation's passage is found
by its chunk id. PDFs (and slide decks) are read page by page, as their chunks never
straddle two pages; other documents in sections of about ``SECTION_CHARS``.

DLP applies as it does to search results: a page is redacted for a caller DLP applies
to, and the passage's offsets follow the redaction. The original file cannot carry a
redaction, so it is withheld from such a caller when its text holds anything DLP
redacts (or was redacted at ingest), and when its text is not known (not processed).
"""

from __future__ import annotations

import hashlib
import io
import re
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from sqlalchemy.engine import Engine

from autorag.dlp.scanner import REDACTED, Match
from autorag.dlp.service import DlpSession
from autorag.errors import Conflict, Forbidden, NotFound
from autorag.ingest.documents import get_document
from autorag.ingest.reading_store import Passage, passages, passages_before
from autorag.ingest.uploads import stored_path
from autorag.sources import SourceRoot, to_real_path
from autorag.sources.ids import unescape_name
from autorag.store.catalog.models import DocumentRow
from autorag.store.catalog.repository import Catalog, WorkspaceInfo

SECTION_CHARS = 20_000  # an unpaged document is read in sections of about this size
HEADING_CHARS = 80  # a heading longer than this is shortened for a citation chip
_HEADING_BATCH = 8  # chunks read at a time while looking back for a heading
_HEADING_LOOKBACK = 64  # chunks looked through at most
# An ATX heading line of Markdown: "## 5.1 Leave", "### Title ###".
_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_READ_BLOCK = 1 << 20


@dataclass(frozen=True)
class Highlight:
    """The cited passage on the page: ``text[start:end]`` of the page's text."""

    chunk_id: int
    start: int
    end: int


@dataclass(frozen=True)
class PageText:
    document: DocumentRow
    paged: bool  # pages of a PDF or slides of a deck; else sections
    page_count: int  # 0: no text (not processed yet, failed, or empty)
    number: int  # 1-based; 0 when there is no page
    text: str
    highlight: Highlight | None
    redacted: bool  # DLP replaced something on this page


@dataclass(frozen=True)
class _Page:
    number: int
    start: int
    end: int


def read_page(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    document_id: int,
    *,
    page: int | None = None,
    chunk_id: int | None = None,
    dlp: DlpSession | None = None,
) -> PageText:
    """One page (or section) of the document's text; with ``chunk_id`` the passage is
    highlighted, on its own page unless ``page`` says which."""
    document = get_document(catalog, workspace, document_id)
    chunks = passages(catalog.engine, document.id)
    cited = _cited(chunks, chunk_id)
    text = _rebuild(chunks)
    paged = any(c.page is not None for c in chunks)
    pages = _pages(document, chunks) if paged else _sections(chunks, len(text))
    if not pages:
        return PageText(document, paged, 0, 0, "", None, False)
    chosen = _choose(pages, page, cited, paged)
    body = text[chosen.start : chosen.end]
    highlight = None
    if cited is not None and chosen.start <= cited.start and cited.end <= chosen.end:
        highlight = Highlight(cited.id, cited.start - chosen.start, cited.end - chosen.start)
    redacted = False
    if dlp is not None:
        scanned = dlp.scan(body, channel="documents")
        if scanned.has_match:
            redacted = True
            highlight = _shifted(highlight, scanned.matches)
            body = scanned.redacted_text
    return PageText(document, paged, len(pages), chosen.number, body, highlight, redacted)


def read_pages(catalog: Catalog, workspace: WorkspaceInfo, document_id: int) -> list[str]:
    """The text of every page (or section) of the document, in order: the passages are
    read and the text rebuilt once (``read_page`` does both for each page). No DLP."""
    document = get_document(catalog, workspace, document_id)
    chunks = passages(catalog.engine, document.id)
    text = _rebuild(chunks)
    paged = any(c.page is not None for c in chunks)
    pages = _pages(document, chunks) if paged else _sections(chunks, len(text))
    return [text[page.start : page.end] for page in pages]


def _cited(chunks: Sequence[Passage], chunk_id: int | None) -> Passage | None:
    if chunk_id is None:
        return None
    for chunk in chunks:
        if chunk.id == chunk_id:
            return chunk
    raise NotFound(f"no passage {chunk_id} in this document")


def _rebuild(chunks: Sequence[Passage]) -> str:
    """The document's text from its chunks (in document order), offsets kept."""
    pieces: list[str] = []
    done = 0
    for chunk in chunks:
        if chunk.end <= done:
            continue
        if chunk.start > done:
            pieces.append(_blank(chunk.start - done))
            done = chunk.start
        pieces.append(chunk.text[done - chunk.start :])
        done = chunk.end
    return "".join(pieces)


def _blank(length: int) -> str:
    """Stripped whitespace of ``length`` characters: a space, else a paragraph break."""
    return " " if length == 1 else " " * (length - 2) + "\n\n"


def _pages(document: DocumentRow, chunks: Sequence[Passage]) -> list[_Page]:
    """Each page of a paged document; a page without text (a blank or unread scan)
    is empty, so the numbers run 1..pages."""
    spans: dict[int, tuple[int, int]] = {}
    for chunk in chunks:
        if chunk.page is None:
            continue
        start, end = spans.get(chunk.page, (chunk.start, chunk.end))
        spans[chunk.page] = (min(start, chunk.start), max(end, chunk.end))
    count = max([document.pages or 0, *spans])
    pages = []
    for number in range(1, count + 1):
        start, end = spans.get(number, (0, 0))
        pages.append(_Page(number, start, end))
    return pages


def _sections(chunks: Sequence[Passage], length: int) -> list[_Page]:
    """Sections of about ``SECTION_CHARS``, each starting where a chunk starts."""
    if not length:
        return []
    starts = [0]
    for chunk in chunks:
        if chunk.start - starts[-1] >= SECTION_CHARS:
            starts.append(chunk.start)
    ends = [*starts[1:], length]
    return [_Page(i + 1, s, e) for i, (s, e) in enumerate(zip(starts, ends, strict=True))]


def _choose(pages: Sequence[_Page], page: int | None, cited: Passage | None, paged: bool) -> _Page:
    if page is not None:
        if not 1 <= page <= len(pages):
            kind = "page" if paged else "section"
            raise NotFound(f"no {kind} {page} in this document (it has {len(pages)})")
        return pages[page - 1]
    if cited is None:
        return pages[0]
    if paged and cited.page is not None:
        return pages[cited.page - 1]
    index = bisect_right([p.start for p in pages], cited.start) - 1
    return pages[max(index, 0)]


def _shifted(highlight: Highlight | None, matches: Sequence[Match]) -> Highlight | None:
    """The highlight's offsets in the redacted text: each run of overlapping matches
    became one ``[REDACTED]`` (scanner.redact); a bound inside a run moves to its edge."""
    if highlight is None:
        return None
    runs: list[tuple[int, int]] = []
    for match in sorted(matches, key=lambda m: (m.start, m.end)):
        if runs and match.start < runs[-1][1]:
            runs[-1] = (runs[-1][0], max(runs[-1][1], match.end))
        else:
            runs.append((match.start, match.end))

    def moved(offset: int, *, end: bool) -> int:
        shift = 0
        for start, stop in runs:
            if offset <= start:
                break
            if offset < stop:  # inside a redacted run
                return start + shift + (len(REDACTED) if end else 0)
            shift += len(REDACTED) - (stop - start)
        return offset + shift

    start = moved(highlight.start, end=False)
    return Highlight(highlight.chunk_id, start, max(start, moved(highlight.end, end=True)))


# -- the heading a passage sits under ----------------------------------------------------------
def section_heading(
    engine: Engine, document_id: int, doc_type: str, offset: int, passage: str
) -> str | None:
    """The Markdown heading ``passage`` (starting at ``offset``) sits under: the last of
    the headings it opens with, else the nearest heading before it, else the first one
    inside it. None for other documents, and for a passage under no heading."""
    if doc_type != "md":
        return None
    opening = _opening_heading(passage)
    if opening:
        return opening
    for skip in range(0, _HEADING_LOOKBACK, _HEADING_BATCH):
        chunks = passages_before(engine, document_id, offset, skip=skip, limit=_HEADING_BATCH)
        for chunk in chunks:
            found = _last_heading(chunk.text[: max(0, offset - chunk.start)])
            if found:
                return found
        if len(chunks) < _HEADING_BATCH:
            break
    inside = _HEADING.search(passage)
    return _clean_heading(inside.group(1)) if inside else None


def _opening_heading(text: str) -> str | None:
    """The last heading of the heading (and blank) lines ``text`` starts with."""
    found = None
    for line in text.splitlines():
        if not line.strip():
            continue
        heading = _HEADING.fullmatch(line)
        if heading is None:
            break
        found = _clean_heading(heading.group(1)) or found
    return found


def _last_heading(text: str) -> str | None:
    last = None
    for match in _HEADING.finditer(text):
        last = match
    return _clean_heading(last.group(1)) if last else None


def _clean_heading(raw: str) -> str | None:
    text = " ".join(raw.replace("**", "").replace("__", "").split())
    if not text:
        return None
    return text if len(text) <= HEADING_CHARS else text[: HEADING_CHARS - 1].rstrip() + "…"


# -- the original file ----------------------------------------------------------------------------
@dataclass
class Original:
    """The original file of a document, open and checked to be what was indexed."""

    name: str  # the file's own name, for Content-Disposition
    size: int
    handle: BinaryIO

    def blocks(self) -> Iterator[bytes]:
        """The file's bytes, closing it at the end."""
        try:
            while block := self.handle.read(_READ_BLOCK):
                yield block
        finally:
            self.handle.close()


def open_original(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    document_id: int,
    *,
    data_dir: Path,
    roots: Sequence[SourceRoot],
    dlp: DlpSession | None = None,
) -> Original:
    """The document's original file, for a download: an upload from the upload store, a
    file from its search path, either only when its content is what was indexed.

    ``NotFound`` when there is none (a datasource record) or it is gone; ``Conflict``
    when it changed since it was indexed; ``Forbidden`` when DLP withholds it."""
    document = get_document(catalog, workspace, document_id)
    path = _original_path(document, workspace, data_dir, roots)
    _check_dlp(catalog.engine, document, dlp)
    try:
        handle = path.open("rb")
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        raise NotFound("the original file is no longer there") from None
    try:
        if not _same_content(handle, document.content_hash):
            raise Conflict(
                "the original file changed since it was indexed: refresh the workspace, "
                "then download it again"
            )
        size = handle.seek(0, 2)
        handle.seek(0)
    except BaseException:
        handle.close()
        raise
    return Original(_file_name(document), size, handle)


def _original_path(
    document: DocumentRow, workspace: WorkspaceInfo, data_dir: Path, roots: Sequence[SourceRoot]
) -> Path:
    if document.origin == "upload" and document.content_hash:
        return stored_path(data_dir, workspace, document.content_hash, document.doc_type)
    if document.origin == "file":
        real = to_real_path(document.source_id, roots)
        if real is not None:
            return Path(real)
        raise NotFound("the original file is not under a search path any more")
    raise NotFound("this document has no original file: it was imported from a data source")


def _check_dlp(engine: Engine, document: DocumentRow, dlp: DlpSession | None) -> None:
    if dlp is None or not dlp.active:
        return
    texts = [p.text for p in passages(engine, document.id)]
    if document.status != "ready" or not texts:
        raise Forbidden(
            "data-loss prevention applies to you and this document's text has not been "
            "checked (it is not processed): its original file cannot be downloaded yet"
        )
    found = sorted({t for text in texts for t in dlp.service.scan(text).types})
    if found or any(REDACTED in text for text in texts):
        kinds = f" ({', '.join(found)})" if found else ""
        raise Forbidden(
            f"this document holds text that data-loss prevention redacts{kinds}: its "
            "original file cannot be downloaded while DLP applies to you; read it in the "
            "document view, where that text is redacted"
        )


def _same_content(handle: io.BufferedReader, content_hash: str | None) -> bool:
    if not content_hash:
        return False
    # SHA-256 of the file, as the index computed it (pipeline.file_hash).
    return hashlib.file_digest(handle, "sha256").hexdigest() == content_hash


def _file_name(document: DocumentRow) -> str:
    """The original name: the last segment of the source id."""
    segment = document.source_id.rstrip("/").rsplit("/", 1)[-1]
    return unescape_name(segment) or segment or f"document-{document.id}.{document.doc_type}"
