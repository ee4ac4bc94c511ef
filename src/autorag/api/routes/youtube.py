"""``POST /api/workspaces/{workspace}/documents/youtube``: a YouTube video's transcript
added as a document of the workspace."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Response
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import PoolDep, WorkspaceDep
from autorag.ingest import documents as docs
from autorag.store.catalog.models import DocumentRow
from autorag.times import as_utc, as_utc_or_none
from autorag.youtube.service import AddedVideo, Outcome, add_video
from autorag.youtube.transcripts import SessionFactory

router = APIRouter(prefix="/api/workspaces/{workspace}", tags=["documents"])


class YoutubeBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        min_length=1,
        max_length=2000,
        description="The video: https://www.youtube.com/watch?v=ID, https://youtu.be/ID, "
        "…/shorts/ID, …/embed/ID, m.youtube.com, or the bare 11-character id",
    )
    languages: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=20,
        description="Transcript languages in order of preference (default: youtube.languages)",
    )


class YoutubeDocumentOut(BaseModel):
    id: int
    sourceId: str  # /youtube/videos/<videoId>
    title: str  # the video's title, else its id
    type: str
    origin: str
    status: docs.ApiStatus
    reason: str | None
    message: str | None
    chunks: int
    createdAt: datetime
    indexedAt: datetime | None
    documentDate: datetime
    videoId: str
    link: str  # the video on YouTube
    languageCode: str  # the transcript indexed
    language: str
    generated: bool  # YouTube's speech recognition, not captions someone wrote
    outcome: Outcome  # created (201), updated or unchanged (200)
    paragraphs: int  # of the transcript, each headed with the second it starts at


_ERRORS: dict[int | str, dict[str, Any]] = {
    200: {"model": YoutubeDocumentOut, "description": "Added before: updated, or unchanged"},
    400: {"description": "Not a YouTube video URL or id, or not a language code"},
    409: {"description": "A search path already uses the /youtube/ namespace"},
    422: {
        "description": "No transcript to read: captions turned off, none in the languages"
        " asked for (the answer names those there are), the video unavailable, unplayable"
        " or age-restricted, or YouTube blocked the request"
    },
    503: {"description": "YouTube could not be reached, or answered what cannot be read"},
}


def transcript_session() -> SessionFactory | None:
    """How the transcript library's HTTP session is made; None: a session with the
    configured time limit. (Tests answer YouTube's requests from recorded files.)"""
    return None


@router.post(
    "/documents/youtube",
    status_code=201,
    response_model=YoutubeDocumentOut,
    responses=_ERRORS,
)
def add_youtube_video(
    principal: Annotated[Principal, Depends(require("documents:write"))],
    body: YoutubeBody,
    response: Response,
    context: WorkspaceDep,
    pool: PoolDep,
    session: Annotated[SessionFactory | None, Depends(transcript_session)],
) -> YoutubeDocumentOut:
    """Fetch the video's transcript and index it as a document, timestamps kept: each
    passage opens with the second it starts at, and its citations link to the video
    there. 201 when new; 200 when the video was added before (its document updated, or
    unchanged)."""
    added = add_video(
        context,
        body.url,
        languages=body.languages,
        session=session,
        # Exclusive: the pool's workers write this workspace's vectors through their own
        # handle, as a delete does.
        guard=pool.locks(context.info.id).exclusive,
    )
    if added.outcome != "created":
        response.status_code = 200
    return _out(added, docs.get_document(context.catalog, context.info, added.document_id))


def _out(added: AddedVideo, row: DocumentRow) -> YoutubeDocumentOut:
    status = docs.api_status(row.status)
    return YoutubeDocumentOut(
        id=row.id,
        sourceId=row.source_id,
        title=row.title,
        type=row.doc_type,
        origin=row.origin,
        status=status,
        reason=row.error_code if status in ("failed", "skipped") else None,
        message=row.error if status in ("failed", "skipped") else None,
        chunks=row.chunk_count,
        createdAt=as_utc(row.created_at),
        indexedAt=as_utc_or_none(row.indexed_at),
        documentDate=as_utc(row.doc_date),
        videoId=added.video_id,
        link=added.url,
        languageCode=added.track.language_code,
        language=added.track.language,
        generated=added.track.generated,
        outcome=added.outcome,
        paragraphs=added.paragraphs,
    )
