"""``POST /api/workspaces/{workspace}/search``: the core hybrid search over HTTP."""

from __future__ import annotations

from typing import Annotated, Literal

from anyio import to_thread
from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field

from autorag.api.auth import Principal, require
from autorag.api.deps import SearchSlots, WorkspaceDep
from autorag.api.redaction import workspace_dlp
from autorag.context import AppContext
from autorag.dlp.scanner import ScanResult
from autorag.dlp.service import DlpSession
from autorag.ingest.duplicates import display_name
from autorag.models import SearchHit
from autorag.retrieval.filters import build_filters
from autorag.retrieval.hybrid import SearchRequest
from autorag.text import one_line
from autorag.youtube.urls import citation_link

router = APIRouter(prefix="/api/workspaces/{workspace}", tags=["search"])
SNIPPET_CHARS = 300


class SearchBody(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    query: str = Field(min_length=1, max_length=2000)
    k: int = Field(default=10, ge=1, le=200)
    document_types: list[str] = Field(default_factory=list, alias="documentTypes", max_length=8)
    date_from: str | None = Field(default=None, alias="dateFrom", max_length=40)
    date_to: str | None = Field(default=None, alias="dateTo", max_length=40)
    mode: Literal["hybrid", "vector", "fts"] = "hybrid"
    per_document: bool = Field(default=False, alias="perDocument")


class HitOut(BaseModel):
    source: str
    sourceId: str
    name: str  # what people call the file: an upload's original name, else the source id
    documentId: int
    chunkIndex: int
    title: str
    type: str
    snippet: str
    page: int | None
    paragraph: int
    score: float
    legs: Literal["vector", "fts", "both"]
    redacted: bool  # DLP replaced something in the snippet with [REDACTED]
    # Where the passage is outside AutoRAG: a YouTube video at the passage's second.
    link: str | None = None


class DiagnosticOut(BaseModel):
    code: str
    message: str
    severity: str


class SearchOut(BaseModel):
    hits: list[HitOut]
    diagnostics: list[DiagnosticOut]
    timingsMs: dict[str, float]


def _hit(hit: SearchHit, scanned: ScanResult) -> HitOut:
    # Redacted before it is cut: a secret cut in half would no longer be recognised.
    snippet = one_line(scanned.redacted_text, SNIPPET_CHARS)
    return HitOut(
        source=hit.source,
        sourceId=hit.source_id,
        name=display_name(hit.source_id),
        documentId=hit.document_id,
        chunkIndex=hit.chunk_index,
        title=hit.title,
        type=hit.doc_type,
        snippet=snippet,
        page=hit.page,
        paragraph=hit.paragraph,
        score=hit.score,
        legs=hit.legs,
        redacted=scanned.has_match,
        link=citation_link(hit.source_id, hit.text),
    )


@router.post("/search", response_model=SearchOut)
async def search(
    principal: Annotated[Principal, Depends(require("search:read"))],
    body: SearchBody,
    context: WorkspaceDep,
    dlp: Annotated[DlpSession, Depends(workspace_dlp("search"))],
    slots: SearchSlots,
) -> SearchOut:
    """Hybrid search with documentTypes and dateFrom/dateTo filters. The dates filter on
    each document's own date (PDF, Office or front-matter metadata; else when the file was
    last modified, or uploaded); when filters leave nothing, a diagnostic
    ``outside_filters`` says how many matches they excluded."""
    # At most ``server.search_threads`` at once: the rest wait here, holding no thread.
    return await to_thread.run_sync(_search, context, body, dlp, limiter=slots)


def _search(context: AppContext, body: SearchBody, dlp: DlpSession) -> SearchOut:
    filters = build_filters(body.document_types, body.date_from, body.date_to)
    request = SearchRequest(
        body.query, k=body.k, filters=filters, mode=body.mode, per_document=body.per_document
    )
    response = context.searcher.search(request)
    return SearchOut(
        hits=[
            _hit(h, scanned)
            for h, scanned in zip(
                response.hits, dlp.scan_many([h.text for h in response.hits]), strict=True
            )
        ],
        diagnostics=[DiagnosticOut(**vars(d)) for d in response.diagnostics],
        timingsMs=response.timings_ms,
    )
