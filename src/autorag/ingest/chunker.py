"""Recursive character splitting into chunks (seed 003).

LangChain's RecursiveCharacterTextSplitter (chunkSize=1000, overlap=200, separators
"\\n\\n", "\\n", ". ", " ", "" kept at the start of the following piece), reimplemented
on (start, end) spans into the original text instead of copied strings: every chunk's
``char_start`` is then its true offset, and large texts split in linear time.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Sequence

from autorag.errors import InvalidInput
from autorag.models import SEGMENT_JOINER, Chunk, ParsedDocument, Segment

Span = tuple[int, int]

DEFAULT_SEPARATORS = ("\n\n", "\n", ". ", " ", "")

# A run of blank lines is one paragraph break, however many segments or newlines made it.
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def split_spans(
    text: str,
    *,
    chunk_size: int = 1000,
    overlap: int = 200,
    separators: Sequence[str] = DEFAULT_SEPARATORS,
) -> list[Span]:
    """Chunk spans of ``text``: each at most ``chunk_size`` long, stripped, never blank.

    Consecutive spans share at most ``overlap`` characters.
    """
    _check_sizes(chunk_size, overlap)
    spans = _split(text, 0, len(text), tuple(separators), chunk_size, overlap)
    return _tidy(text, spans)


def chunk_document(
    doc: ParsedDocument, *, chunk_size: int = 1000, overlap: int = 200
) -> list[Chunk]:
    """Split ``doc.text`` into chunks carrying their offset, paragraph and page.

    Pre-chunked documents keep one chunk per segment; only a segment longer than
    ``chunk_size`` is split further. Paged documents (PDF pages, slides) are split page
    by page, so a chunk never straddles two pages and its citation names one page.
    """
    _check_sizes(chunk_size, overlap)
    text = doc.text
    segment_starts = _segment_starts(doc.segments)
    if doc.pre_chunked:
        regions = [
            (start, start + len(seg.text))
            for seg, start in zip(doc.segments, segment_starts, strict=True)
        ]
    else:
        regions = _page_regions(doc.segments, segment_starts)
    spans = [
        (region_start + start, region_start + end)
        for region_start, region_end in regions
        for start, end in split_spans(
            text[region_start:region_end], chunk_size=chunk_size, overlap=overlap
        )
    ]
    break_ends = [match.end() for match in _PARAGRAPH_BREAK.finditer(text)]
    chunks = []
    for index, (start, end) in enumerate(spans):
        chunk_text = text[start:end]
        segment = doc.segments[bisect_right(segment_starts, start) - 1]
        chunks.append(
            Chunk(
                index=index,
                text=chunk_text,
                char_start=start,
                paragraph=bisect_right(break_ends, start),
                page=segment.page,
                content_hash=content_hash(chunk_text),
            )
        )
    return chunks


def content_hash(text: str) -> str:
    """SHA-256 hex digest of the UTF-8 text."""
    # surrogatepass: text decoded with surrogateescape still hashes instead of raising.
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _check_sizes(chunk_size: int, overlap: int) -> None:
    if chunk_size <= 0:
        raise InvalidInput(f"chunk_size must be positive, got {chunk_size}")
    if not 0 <= overlap < chunk_size:
        raise InvalidInput(f"overlap must be in [0, chunk_size), got {overlap}")


def _page_regions(segments: Sequence[Segment], starts: Sequence[int]) -> list[Span]:
    """Text ranges of runs of consecutive segments that share a page (or have none)."""
    regions: list[Span] = []
    for index, (segment, start) in enumerate(zip(segments, starts, strict=True)):
        end = start + len(segment.text)
        if index and segments[index - 1].page == segment.page:
            regions[-1] = (regions[-1][0], end)
        else:
            regions.append((start, end))
    return regions


def _segment_starts(segments: Sequence[Segment]) -> list[int]:
    """Offset of each segment in the joined document text."""
    starts = []
    offset = 0
    for segment in segments:
        starts.append(offset)
        offset += len(segment.text) + len(SEGMENT_JOINER)
    return starts


def _split(
    text: str, start: int, end: int, separators: tuple[str, ...], size: int, overlap: int
) -> list[Span]:
    """Raw (unstripped) chunk spans of ``text[start:end]``."""
    separator, finer = _pick_separator(text, start, end, separators)
    if not separator:
        return _windows(start, end, size, overlap)
    spans: list[Span] = []
    short: list[Span] = []
    for piece in _pieces(text, start, end, separator):
        if piece[1] - piece[0] <= size:
            short.append(piece)
            continue
        # Overlap is not carried across a long piece, as in LangChain.
        spans.extend(_merge(short, size, overlap))
        short = []
        spans.extend(_split(text, *piece, finer, size, overlap))
    spans.extend(_merge(short, size, overlap))
    return spans


def _pick_separator(
    text: str, start: int, end: int, separators: tuple[str, ...]
) -> tuple[str, tuple[str, ...]]:
    """The first separator present in the span, and the finer ones after it."""
    for position, separator in enumerate(separators):
        if not separator or text.find(separator, start, end) >= 0:
            return separator, separators[position + 1 :]
    # None occurs: fall back to characters, so that no span outgrows the chunk size.
    return "", ()


def _pieces(text: str, start: int, end: int, separator: str) -> list[Span]:
    """Split at each separator, which stays at the start of the following piece."""
    pieces = []
    piece_start = start
    hit = text.find(separator, start, end)
    while hit >= 0:
        if hit > piece_start:
            pieces.append((piece_start, hit))
        piece_start = hit
        hit = text.find(separator, hit + len(separator), end)
    pieces.append((piece_start, end))
    return pieces


def _merge(pieces: Sequence[Span], size: int, overlap: int) -> list[Span]:
    """Merge consecutive pieces up to ``size``, carrying up to ``overlap`` into the next."""
    spans: list[Span] = []
    first = 0  # index of the first piece of the chunk being built
    total = 0
    for index, (start, end) in enumerate(pieces):
        length = end - start
        if index > first and total + length > size:
            spans.append((pieces[first][0], pieces[index - 1][1]))
            while first < index and (total > overlap or total + length > size):
                total -= pieces[first][1] - pieces[first][0]
                first += 1
        total += length
    if pieces:
        spans.append((pieces[first][0], pieces[-1][1]))
    return spans


def _windows(start: int, end: int, size: int, overlap: int) -> list[Span]:
    """What merging single characters yields, computed without one span per character."""
    spans: list[Span] = []
    step = size - overlap
    for window_start in range(start, end, step):
        spans.append((window_start, min(window_start + size, end)))
        if window_start + size >= end:
            break
    return spans


def _tidy(text: str, spans: Sequence[Span]) -> list[Span]:
    """Strip whitespace by moving the bounds; drop blank spans and ones adding nothing."""
    tidy: list[Span] = []
    for start, end in spans:
        raw = text[start:end]
        stripped = raw.strip()
        if not stripped:
            continue
        start += len(raw) - len(raw.lstrip())
        end = start + len(stripped)
        # After stripping, a span can lie inside the previous one (its new text was blank).
        if tidy and end <= tidy[-1][1]:
            continue
        tidy.append((start, end))
    return tidy
