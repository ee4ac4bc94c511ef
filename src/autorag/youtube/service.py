"""Adding a YouTube video: its transcript becomes a document of the workspace.

The transcript is rendered as paragraphs, each opening with the second it starts at
(``[01:15] …``), and indexed by the normal pipeline as a datasource document
``/youtube/videos/<id>`` (seed 000). Every paragraph is shorter than a chunk, and the
chunker splits at paragraph breaks first, so every chunk opens with a paragraph's
heading: a citation of it opens the video at that second (``urls.citation_link``).
Adding the same video again updates its document (or leaves it as it is when the
transcript and title are unchanged), never a second one.
"""

from __future__ import annotations

import hashlib
import math
import textwrap
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from autorag.errors import Conflict, PayloadTooLarge
from autorag.ingest.minsync import refresh_lock
from autorag.ingest.parsers.guards import human_size
from autorag.ingest.pipeline import IngestItem, IngestOutcome
from autorag.models import ParsedDocument, Segment
from autorag.store.catalog.repository import DocumentMeta
from autorag.youtube import urls
from autorag.youtube.transcripts import (
    NoTranscript,
    SessionFactory,
    Snippet,
    Track,
    Transcript,
    check_languages,
    clean,
    fetch_transcript,
    youtube_session,
)

if TYPE_CHECKING:
    from autorag.context import AppContext

Guard = Callable[[], AbstractContextManager[None]]
Outcome = Literal["created", "updated", "unchanged"]

# Documents that are no files (chat exports, videos) share this origin (seed 000's
# datasource identities); datasources.sync names it too, a sibling this may not import.
ORIGIN = "datasource"

# A paragraph holds about a third of a chunk: a citation then points within ~20 s of
# speech, and a chunk of several paragraphs still carries enough context to embed.
_PARAGRAPH_SHARE = 3
_MIN_PARAGRAPH = 40
_SNIPPET_CHARS = 2000  # one caption line, at most (longer ones are YouTube's oddities)
_LAST_SECOND = 86_400 * 10  # a start past ten days is no time in a video


@dataclass(frozen=True)
class _Record:
    source_id: str
    title: str
    text: str
    doc_date: datetime

    @property
    def content_hash(self) -> str:
        # The title is embedded with every chunk: a renamed video is indexed again.
        return hashlib.sha256(f"{self.title}\n{self.text}".encode()).hexdigest()


@dataclass(frozen=True)
class AddedVideo:
    document_id: int
    video_id: str
    source_id: str
    title: str
    url: str  # the video's page on YouTube
    track: Track  # the transcript indexed
    outcome: Outcome
    paragraphs: int
    status: str  # the document's: ready, or failed with ``error``
    error: str | None = None


def add_video(
    context: AppContext,
    url: str,
    *,
    languages: Sequence[str] | None = None,
    session: SessionFactory | None = None,
    guard: Guard | None = None,
) -> AddedVideo:
    """Fetch the video's transcript and index it as a document of the workspace.

    ``languages``: preferred transcript languages (default: ``youtube.languages``);
    ``session``: makes the HTTP session the transcript library uses; ``guard``: held
    while the catalog and vectors are written (default: the workspace's refresh lock).
    """
    video = urls.video_id(url)
    check_namespace_free(context)
    codes = check_languages(languages or context.settings.youtube.languages)
    timeout_s = context.settings.youtube.timeout_s
    with (session or (lambda: youtube_session(timeout_s)))() as http:
        transcript = fetch_transcript(http, video, codes)
    max_bytes = int(context.settings.ingest.max_file_mb * 1024**2)
    paragraphs = render(transcript.snippets, _paragraph_chars(context.settings.ingest.chunk_size))
    record = _record(transcript, paragraphs, max_bytes)
    with (guard or (lambda: refresh_lock(context.workspace.refresh_lock_file)))():
        outcome, indexed = _index(context, record)
    return AddedVideo(
        document_id=indexed.document_id or 0,
        video_id=video,
        source_id=record.source_id,
        title=record.title,
        url=urls.watch_url(video),
        track=transcript.track,
        outcome=outcome,
        paragraphs=len(paragraphs),
        status="ready" if indexed.status in ("ready", "unchanged") else indexed.status,
        error=indexed.error,
    )


def check_namespace_free(context: AppContext) -> None:
    """Refuse when a search path's files are ``/youtube/...``: they would share ids and
    policy rules with the videos."""
    for root in context.roots:
        if root.prefix == urls.KIND:
            raise Conflict(
                f"the search path {root.path} uses the /{urls.KIND}/ namespace of YouTube"
                " videos; rename that folder or remove it from the search paths first"
            )


# -- the document's text -------------------------------------------------------------------
def render(snippets: Sequence[Snippet], max_chars: int) -> list[str]:
    """Paragraphs of consecutive caption lines, each headed with its start, each at most
    ``max_chars`` long (a caption line longer than that is cut into several)."""
    paragraphs: list[str] = []
    head: str | None = None
    words: list[str] = []
    size = 0
    for start, text in _lines(snippets, max_chars):
        if head is not None and size + 1 + len(text) > max_chars:
            paragraphs.append(" ".join([head, *words]))
            head = None
        if head is None:
            head, words, size = urls.stamp(start), [], len(urls.stamp(start))
        words.append(text)
        size += 1 + len(text)
    if head is not None:
        paragraphs.append(" ".join([head, *words]))
    return paragraphs


def _lines(snippets: Sequence[Snippet], max_chars: int) -> Iterator[tuple[float, str]]:
    """Each caption line as one clean line, cut to fit a paragraph under its heading."""
    room = max_chars - len(urls.stamp(_LAST_SECOND)) - 1  # the widest heading
    previous = 0.0
    for snippet in snippets:
        text = clean(snippet.text, _SNIPPET_CHARS)
        if not text:
            continue  # YouTube sends blank lines between some captions
        # A start that is no time (NaN, infinite, negative, past ten days) is data from
        # outside gone wrong: the line keeps the previous one's.
        start = snippet.start
        if not (math.isfinite(start) and 0 <= start <= _LAST_SECOND):
            start = previous
        previous = start
        for piece in textwrap.wrap(text, room, break_on_hyphens=False):
            yield start, piece


def _paragraph_chars(chunk_size: int) -> int:
    return max(_MIN_PARAGRAPH, chunk_size // _PARAGRAPH_SHARE)


def _record(transcript: Transcript, paragraphs: list[str], max_bytes: int) -> _Record:
    if not paragraphs:
        raise NoTranscript(
            f"the transcript of video {transcript.video_id} holds no text", code="empty_transcript"
        )
    text = "\n\n".join(paragraphs)
    size = len(text.encode())
    if size > max_bytes:
        raise PayloadTooLarge(
            f"the transcript of video {transcript.video_id} is {human_size(size)}, over the"
            f" {human_size(max_bytes)} limit (ingest.max_file_mb)"
        )
    return _Record(
        source_id=urls.source_id(transcript.video_id),
        title=transcript.title or transcript.video_id,
        text=text,
        doc_date=datetime.now(UTC),
    )


# -- indexing ------------------------------------------------------------------------------
def _index(context: AppContext, record: _Record) -> tuple[Outcome, IngestOutcome]:
    """Index the record as its video's one document: created, updated or unchanged."""
    known = context.catalog.file_states(context.info.id, origin=ORIGIN).get(record.source_id)
    if known is not None and known.status == "ready" and known.content_hash == record.content_hash:
        return "unchanged", IngestOutcome(record.source_id, "unchanged", known.document_id)
    outcomes: list[IngestOutcome] = []
    context.indexer.index([_item(record)], outcomes.append)
    context.indexer.vectors.optimize()
    (indexed,) = outcomes
    return ("created" if known is None else "updated"), indexed


def _item(record: _Record) -> IngestItem:
    meta = DocumentMeta(
        source_id=record.source_id,
        doc_type="txt",
        title=record.title,
        size=len(record.text.encode()),
        mtime_ns=0,  # a transcript has no file time; its content hash decides what changed
        content_hash=record.content_hash,
        doc_date=record.doc_date,
        origin=ORIGIN,
    )
    parsed = ParsedDocument([Segment(record.text)], title=record.title, doc_type="txt")
    return IngestItem(meta, parsed=parsed)
