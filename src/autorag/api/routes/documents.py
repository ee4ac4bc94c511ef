"""A workspace's documents: upload, list, status, read, download, delete; and
re-embedding its vectors."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel
from starlette.concurrency import run_in_threadpool

from autorag.api.auth import Principal, require
from autorag.api.deps import PoolDep, WorkspaceDep
from autorag.api.multipart import receive_upload
from autorag.api.redaction import workspace_dlp
from autorag.context import AppContext
from autorag.dlp.service import DlpSession
from autorag.ingest import documents as docs
from autorag.ingest import reading
from autorag.ingest.duplicates import display_name
from autorag.ingest.reembed import REEMBED_JOB
from autorag.ingest.uploads import (
    UPLOAD_TYPES,
    ReceivedFile,
    StoredUpload,
    store_upload,
)
from autorag.jobs.worker import WorkerPool
from autorag.ocr.service import UploadOcrMode
from autorag.ops.workspaces import workspace_by_id
from autorag.store.catalog import queue
from autorag.store.catalog.models import DocumentRow, JobRow
from autorag.times import as_utc, as_utc_or_none

router = APIRouter(prefix="/api/workspaces/{workspace}", tags=["documents"])

MAX_ID = 2**62

DocumentId = Annotated[int, Path(ge=1, le=MAX_ID, description="Document id")]


class DocumentOut(BaseModel):
    id: int
    sourceId: str
    name: str  # what people call the file: an upload's original name, else the source id
    title: str
    type: str
    origin: str
    status: docs.ApiStatus
    reason: str | None  # stable code when failed or skipped: corrupt, empty, duplicate, …
    message: str | None
    pages: int | None
    chunks: int
    size: int
    createdAt: datetime
    indexedAt: datetime | None
    # What the search's date filter uses: the document's own date from its metadata,
    # else when the file was last modified (an upload: when it arrived).
    documentDate: datetime


class UploadOut(DocumentOut):
    duplicate: bool


class DocumentListOut(BaseModel):
    items: list[DocumentOut]
    total: int
    limit: int
    offset: int


class HighlightOut(BaseModel):
    chunkId: int
    start: int  # offsets into ``text`` of the page
    end: int


class DocumentTextOut(BaseModel):
    documentId: int
    title: str
    type: str
    paged: bool  # pages of a PDF or slides; else sections of the text
    pageCount: int  # 0: no text (not processed, failed, or empty)
    page: int  # this page's number, 1-based (0 without text)
    text: str
    highlight: HighlightOut | None  # the passage asked for, when it is on this page
    redacted: bool  # data-loss prevention replaced part of this page with [REDACTED]


class JobOut(BaseModel):
    id: int
    kind: str
    status: str  # queued | running | done | failed
    documentId: int | None
    attempts: int
    error: str | None
    createdAt: datetime
    startedAt: datetime | None
    finishedAt: datetime | None


def _document(row: DocumentRow) -> DocumentOut:
    status = docs.api_status(row.status)
    return DocumentOut(
        id=row.id,
        sourceId=row.source_id,
        name=display_name(row.source_id, row.origin),
        title=row.title,
        type=row.doc_type,
        origin=row.origin,
        status=status,
        reason=row.error_code if status in ("failed", "skipped") else None,
        message=row.error if status in ("failed", "skipped") else None,
        pages=row.pages,
        chunks=row.chunk_count,
        size=row.size,
        createdAt=as_utc(row.created_at),
        indexedAt=as_utc_or_none(row.indexed_at),
        documentDate=as_utc(row.doc_date),
    )


def _job(row: JobRow) -> JobOut:
    return JobOut(
        id=row.id,
        kind=row.kind,
        status=row.status,
        documentId=row.document_id,
        attempts=row.attempts,
        error=row.error,
        createdAt=as_utc(row.created_at),
        startedAt=as_utc_or_none(row.started_at),
        finishedAt=as_utc_or_none(row.finished_at),
    )


_UPLOAD_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "One file: "
                            + ", ".join(sorted(UPLOAD_TYPES))
                            + ". Its content must match its extension.",
                        }
                    },
                }
            }
        },
    }
}
_UPLOAD_ERRORS: dict[int | str, dict[str, Any]] = {
    200: {"model": UploadOut, "description": "Already uploaded: the existing document"},
    400: {"description": "Malformed multipart body, no file, or a hostile container"},
    413: {"description": "Over the upload size limit"},
    415: {"description": "Not an accepted type, or content that contradicts the extension"},
}


@router.post(
    "/documents",
    status_code=202,
    response_model=UploadOut,
    responses=_UPLOAD_ERRORS,
    openapi_extra=_UPLOAD_BODY,
)
async def upload_document(
    principal: Annotated[Principal, Depends(require("documents:write"))],
    request: Request,
    response: Response,
    context: WorkspaceDep,
    pool: PoolDep,
    ocr_mode: Annotated[
        UploadOcrMode,
        Query(
            alias="ocrMode",
            description="Pages without a text layer (scans, images): auto (local OCR, "
            "vision if configured and the local read is poor), vision, or skip",
        ),
    ] = "auto",
) -> UploadOut:
    """Upload one file (``multipart/form-data``, field ``file``); processing runs in the
    background. 202 with the new document (``pending``), or 200 with ``duplicate: true``
    and the existing document when the workspace already holds the same content."""
    limit = int(context.settings.server.max_upload_mb * 1024**2)
    incoming = context.workspace.incoming_uploads_dir
    received = await receive_upload(request, incoming, limit)
    stored = await run_in_threadpool(_store, context, pool, received, ocr_mode, principal.username)
    row = docs.get_document(context.catalog, context.info, stored.document_id)
    document = _document(row)
    if stored.duplicate:
        response.status_code = 200
    else:
        pool.notify()
        # The document as accepted: a worker may have claimed it already (a polling one
        # needs no notice), and its progress is GET …/documents/{id}'s to tell.
        accepted = {"status": "pending", "reason": None, "message": None}
        document = document.model_copy(update=accepted)
    return UploadOut(**document.model_dump(), duplicate=stored.duplicate)


def _store(
    context: AppContext,
    pool: WorkerPool,
    received: ReceivedFile,
    ocr_mode: str = "auto",
    uploaded_by: str | None = None,
) -> StoredUpload:
    limits = context.indexer.limits  # cached; builds nothing heavy
    workspace_id = context.info.id
    # Shared: a rename or delete of the workspace waits for this upload, and vice versa.
    with pool.locks(workspace_id).shared():
        info = workspace_by_id(context.catalog, workspace_id)  # renamed meanwhile?
        return store_upload(
            context.catalog.engine,
            info,
            context.workspace.data_dir,
            received,
            limits,
            ocr_mode=ocr_mode,
            uploaded_by=uploaded_by,
        )


@router.get("/documents", response_model=DocumentListOut)
def list_documents(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
    status: Annotated[docs.ApiStatus | None, Query(description="Only this status")] = None,
    doc_type: Annotated[
        str | None,
        Query(alias="type", max_length=16, description="Only this type: pdf, docx, …"),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
) -> DocumentListOut:
    """The workspace's documents, newest first, with the total count before paging."""
    page = docs.list_documents(
        context.catalog, context.info, status=status, doc_type=doc_type, limit=limit, offset=offset
    )
    return DocumentListOut(
        items=[_document(d) for d in page.items], total=page.total, limit=limit, offset=offset
    )


@router.get("/documents/{document_id}", response_model=DocumentOut)
def get_document(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
    document_id: DocumentId,
) -> DocumentOut:
    """One document: status (``pending|processing|ready|failed`` with reason), pages,
    chunks."""
    return _document(docs.get_document(context.catalog, context.info, document_id))


DocumentDlp = Annotated[DlpSession, Depends(workspace_dlp("documents"))]


@router.get(
    "/documents/{document_id}/text",
    response_model=DocumentTextOut,
    responses={404: {"description": "No such document, page, or passage"}},
)
def document_text(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
    dlp: DocumentDlp,
    document_id: DocumentId,
    page: Annotated[
        int | None, Query(ge=1, le=1_000_000, description="Page (or section) number, 1-based")
    ] = None,
    chunk: Annotated[
        int | None,
        Query(ge=1, le=MAX_ID, description="A passage to highlight (a source's chunkId)"),
    ] = None,
) -> DocumentTextOut:
    """The document's extracted text, one page (PDF, slides) or section at a time. With
    ``chunk`` the cited passage is located: its page is answered unless ``page`` says
    otherwise, and ``highlight`` gives its offsets in ``text``. Redacted as search
    results are when data-loss prevention applies."""
    read = reading.read_page(
        context.catalog, context.info, document_id, page=page, chunk_id=chunk, dlp=dlp
    )
    mark = read.highlight
    return DocumentTextOut(
        documentId=read.document.id,
        title=read.document.title,
        type=read.document.doc_type,
        paged=read.paged,
        pageCount=read.page_count,
        page=read.number,
        text=read.text,
        highlight=HighlightOut(chunkId=mark.chunk_id, start=mark.start, end=mark.end)
        if mark
        else None,
        redacted=read.redacted,
    )


@router.get(
    "/documents/{document_id}/file",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/octet-stream": {}}, "description": "The file"},
        403: {"description": "Withheld by data-loss prevention"},
        404: {"description": "No such document, or it has no original file"},
        409: {"description": "The file changed since it was indexed"},
    },
)
def download_document(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
    dlp: DocumentDlp,
    document_id: DocumentId,
) -> StreamingResponse:
    """The original file, as an attachment under its own name (never shown inline)."""
    original = reading.open_original(
        context.catalog,
        context.info,
        document_id,
        data_dir=context.workspace.data_dir,
        roots=context.roots,
        dlp=dlp,
    )
    return StreamingResponse(
        original.blocks(),
        media_type="application/octet-stream",
        headers={
            "Content-Disposition": attachment(original.name),
            "Content-Length": str(original.size),
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "private, no-store",
        },
    )


def attachment(name: str) -> str:
    """``Content-Disposition`` for a download named ``name``: an ASCII fallback and the
    exact name (RFC 6266), neither able to break out of the header."""
    fallback = "".join(c if " " <= c <= "~" and c not in '"\\;%' else "_" for c in name)
    exact = quote(name, safe="")
    return f"attachment; filename=\"{fallback or 'document'}\"; filename*=UTF-8''{exact}"


@router.delete("/documents/{document_id}", status_code=204, response_class=Response)
def delete_document(
    principal: Annotated[Principal, Depends(require("documents:write"))],
    context: WorkspaceDep,
    pool: PoolDep,
    document_id: DocumentId,
) -> Response:
    """Remove a document from every store, its uploaded file included."""
    # Exclusive: the document may be mid-processing, which would write it back.
    with pool.locks(context.info.id).exclusive():
        document = docs.get_document(context.catalog, context.info, document_id)
        docs.delete_document(context.indexer, context.workspace.data_dir, document)
    return Response(status_code=204)


@router.post("/reembed", status_code=202, response_model=JobOut)
def reembed(
    principal: Annotated[Principal, Depends(require("workspaces:admin", protection=True))],
    context: WorkspaceDep,
    pool: PoolDep,
) -> JobOut:
    """Rebuild the workspace's vectors with the configured embedding model in a shadow
    table, swapped in when complete (search uses the old one meanwhile). Answers the
    job; a re-embed already queued or running is answered instead of a second one."""
    engine = context.catalog.engine
    active = queue.active_job(engine, context.info.id, REEMBED_JOB)
    if active is None:
        with engine.begin() as conn:
            job_id = queue.enqueue(conn, context.info.id, REEMBED_JOB)
        pool.notify()
        active = queue.get_job_row(engine, job_id)
    return _job(active)


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(
    principal: Annotated[Principal, Depends(require("documents:read"))],
    context: WorkspaceDep,
    job_id: Annotated[int, Path(ge=1, le=MAX_ID)],
) -> JobOut:
    """A background job of the workspace (document processing, re-embedding)."""
    return _job(queue.get_job_row(context.catalog.engine, job_id, workspace_id=context.info.id))
