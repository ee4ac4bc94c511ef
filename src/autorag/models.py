"""Plain data shared across layers. No I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

DocumentStatus = Literal[
    "pending", "indexing", "ready", "failed", "skipped", "needs_ocr", "deleting"
]
Leg = Literal["vector", "fts", "both"]


@dataclass(frozen=True)
class Segment:
    """A run of extracted text with where it came from (page or slide, sheet)."""

    text: str
    page: int | None = None  # 1-based page of a PDF, slide of a PPTX
    section: str | None = None  # sheet name of a workbook, heading, ...


@dataclass
class ParsedDocument:
    """What a parser returns: text segments in reading order plus metadata.

    ``pre_chunked`` segments (tabular rows grouped with their header) are kept as
    chunks of their own instead of being merged by the text splitter.
    """

    segments: list[Segment]
    title: str | None = None
    doc_type: str = "txt"
    pages: int | None = None
    pre_chunked: bool = False
    needs_ocr: bool = False
    metadata: dict[str, str] = field(default_factory=dict)
    # 1-based pages with no usable text layer (scanned or blank): OCR reads these.
    ocr_pages: tuple[int, ...] = ()
    # The document's own date from its metadata (None: the file's modification time).
    date: datetime | None = None

    @property
    def text(self) -> str:
        return SEGMENT_JOINER.join(s.text for s in self.segments)


SEGMENT_JOINER = "\n\n"


@dataclass(frozen=True)
class Chunk:
    """One retrievable piece of a document; ``char_start`` is its true offset."""

    index: int
    text: str
    char_start: int
    paragraph: int
    page: int | None
    content_hash: str


@dataclass(frozen=True)
class SearchFilters:
    """documentTypes and a date window; ``date_to`` is exclusive (callers widen days)."""

    document_types: tuple[str, ...] = ()
    date_from: datetime | None = None
    date_to: datetime | None = None

    @property
    def active(self) -> bool:
        return bool(self.document_types or self.date_from or self.date_to)


@dataclass
class SearchHit:
    chunk_id: int
    document_id: int
    chunk_index: int
    source: str  # OS-absolute real path for local files, slash identity for datasources
    source_id: str  # canonical virtual id (seed 000)
    title: str
    doc_type: str
    text: str
    page: int | None
    paragraph: int
    char_start: int
    score: float
    legs: Leg
    vector_rank: int | None = None
    fts_rank: int | None = None


@dataclass(frozen=True)
class Diagnostic:
    code: str
    message: str
    severity: Literal["info", "warning", "error"] = "info"


@dataclass
class SearchResponse:
    hits: list[SearchHit]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Citation:
    """A numbered source sent alongside an answer; ``[n]`` in the text refers to it."""

    number: int
    source: str
    source_id: str
    title: str
    text: str
    page: int | None
    paragraph: int
    score: float
    legs: Leg
    chunk_id: int
    document_id: int
    peer: str | None = None  # the trusted peer it came from (peer_search); None: here
    section: str | None = None  # the heading it sits under (Markdown), when known
    # Whether the answer's text cites it ([n]); uncited sources come after the cited.
    cited: bool = True

    @classmethod
    def external(
        cls,
        number: int,
        source: str,
        *,
        title: str,
        text: str,
        score: float,
        page: int | None,
        key: int,
        peer: str | None = None,
    ) -> Citation:
        """A passage that is no chunk of this workspace (a peer's result, a source that
        may leave): ``key`` > 0 stands in for its ids, as negatives that no chunk has."""
        return cls(number, source, source, title, text, page, 0, score, "both", -key, -key, peer)
