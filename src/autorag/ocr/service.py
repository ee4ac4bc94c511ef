"""OCR as background work: planned once an upload, or a file a refresh found, is parsed;
run page by page (with progress) by the worker pool, then indexed at once or held for an
admin's review.

A document's status tells where its OCR is: a scan with no text at all stays unindexed
(``pending`` while OCR is queued or running, ``needs_ocr`` with a reason code after:
``ocr_review``, ``ocr_rejected``, ``ocr_failed``, ``ocr_empty``). A mixed PDF stays
``ready`` on its text pages meanwhile, and gains its scanned pages when OCR is indexed.

A job reads one version of its document (its content hash): a file that changes under
its search path gets a new job at the next refresh, and the old job reads nothing more.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from pathlib import Path
from typing import Literal

from sqlalchemy import Engine, Update, update
from sqlalchemy.orm import Session

from autorag import audit
from autorag.config import OcrSettings
from autorag.context import AppContext
from autorag.errors import AutoragError, Conflict, InvalidInput, NotFound
from autorag.ingest.minsync import OcrPlanner
from autorag.ingest.pipeline import Indexer, IngestItem, IngestOutcome, file_hash
from autorag.ingest.uploads import stored_path
from autorag.ocr import store
from autorag.ocr.base import EngineConfig, OcrEngine
from autorag.ocr.engines import build_engine, local_engine
from autorag.ocr.merge import merged_document
from autorag.ocr.options import choice_of, effective
from autorag.ocr.quality import Scored, combine, visible_chars
from autorag.ocr.reader import Bar, OcrMode, PageRead, Readers
from autorag.ocr.render import Rendered, open_pages
from autorag.sources import to_real_path
from autorag.store.catalog import outbox
from autorag.store.catalog.models import DocumentRow, utcnow
from autorag.store.catalog.repository import DocumentMeta
from autorag.times import as_utc
from autorag.workspace_settings import read_settings

log = logging.getLogger(__name__)

UploadOcrMode = Literal["auto", "vision", "skip"]
OCR_MODES: tuple[UploadOcrMode, ...] = ("auto", "vision", "skip")
Guard = Callable[[], AbstractContextManager[None]]
# Document states OCR may change: a scan waiting for it. A ready (mixed) one keeps its own.
_SCAN_STATES = ("needs_ocr", "pending")
# Why a job could not read its file, kept on the document as they are (others: ocr_failed).
_DOCUMENT_CODES = (
    "encrypted", "corrupt", "empty", "too_large", "unreadable", "source_missing", "source_changed"
)  # fmt: skip


def ocr_mode(value: str | None) -> UploadOcrMode:
    """An upload's ``ocrMode``; ``auto`` when not given."""
    if value is None or value == "":
        return "auto"
    if value not in OCR_MODES:
        raise InvalidInput(
            f"ocrMode must be one of {', '.join(OCR_MODES)}, not {value!r}", code="invalid_ocr_mode"
        )
    return value


# -- planning -------------------------------------------------------------------------
def ocr_wanted(context: AppContext, mode: str | None) -> bool:
    """Whether pages without a text layer will be read: the upload's mode and settings."""
    return workspace_ocr(context).enabled and ocr_mode(mode) != "skip"


def workspace_ocr(context: AppContext) -> OcrSettings:
    """The server's ``[ocr]`` settings with the workspace's choices (engine, languages,
    vision model) over them."""
    return effective(context.settings.ocr, choice_of(read_settings(context.catalog, context.info)))


def plan_ocr(
    context: AppContext, document_id: int, pages: Sequence[int], mode: str | None
) -> int | None:
    """Queue OCR of a document's ``pages``: the job's id, or None when the mode or the
    settings say no. A document keeps the job under way over its current content."""
    if not pages or not ocr_wanted(context, mode):
        return None
    engine = context.catalog.engine
    existing = store.active_job(engine, document_id)
    if existing is not None:
        return existing
    document = _document(engine, document_id)
    if document is None:
        return None  # deleted meanwhile
    with engine.begin() as conn:
        job_id = store.create_job(
            conn,
            context.info.id,
            document_id,
            pages,
            mode=ocr_mode(mode),
            max_pages=context.settings.ocr.max_pages,
            source_path=_found_path(context, document),
        )
        # In the job's transaction: a scan marked waiting for OCR always has its job.
        waiting = f"waiting for OCR (job {job_id})"
        conn.execute(
            _scan_status(document_id, document.content_hash, "pending", "ocr_queued", waiting)
        )
    return job_id


def refresh_planner(context: AppContext) -> OcrPlanner | None:
    """How a refresh queues OCR of the scans it finds: in the default mode, as an upload
    without ``ocrMode``; None when OCR is off (``ocr.enabled = false``)."""
    return partial(plan_ocr, context, mode=None) if ocr_wanted(context, None) else None


def _found_path(context: AppContext, document: DocumentRow) -> str | None:
    """Where a refresh found the document's file; None for an upload (stored by hash).

    Kept on the job: a worker started before a search path was added still finds it.
    """
    if document.origin == "upload":
        return None
    return to_real_path(document.source_id, context.roots)


# -- running --------------------------------------------------------------------------
def run_ocr_job(context: AppContext, job_id: int, *, indexer: Indexer, guard: Guard) -> str | None:
    """Read the job's queued pages, then index the text or hold it for review.

    Returns why the job failed (recorded on the job and its document), or None. Pages
    read before a crash are kept: a job redone reads only the rest.
    """
    engine = context.catalog.engine
    try:
        job = store.get_job(engine, job_id, workspace_id=context.info.id)
    except NotFound:
        return None  # the document, and its job with it, was deleted
    if job.status not in ("queued", "running"):
        return None
    store.set_status(engine, job_id, "running")
    try:
        path = _source_path(context, job)
        _read_pages(context, job, path, _readers(context, job))
        _current_document(engine, job)  # a refresh may have found a newer version meanwhile
        return _settle(context, job_id, indexer, guard)
    except NotFound:
        return None  # the document was deleted meanwhile, its job with it
    except AutoragError as exc:
        return _fail(engine, job, exc.code, exc.message)
    except Exception as exc:  # the worker, and a ready mixed document, must outlive it
        log.exception("OCR job %d failed", job_id)
        return _fail(engine, job, "ocr_failed", f"OCR failed: {type(exc).__name__}: {exc}")


def _readers(context: AppContext, job: store.OcrJob) -> Readers:
    chosen = read_settings(context.catalog, context.info)
    settings = effective(context.settings.ocr, choice_of(chosen))
    config = EngineConfig(settings, context.settings.llm, chosen.ocr_instructions)
    vision = _optional(lambda: build_engine("vision", config), required=job.mode == "vision")
    local = None
    if job.mode == "auto":
        local = _optional(lambda: local_engine(config), required=vision is None)
    bar = Bar(settings.review_below_quality, settings.review_below_credibility)
    mode: OcrMode = "vision" if job.mode == "vision" else "auto"
    return Readers(mode, bar, local, vision, settings.vision_max_pages)


def _optional(build: Callable[[], OcrEngine], *, required: bool) -> OcrEngine | None:
    """The engine, or None when it cannot run here and another can do the work."""
    try:
        return build()
    except AutoragError:
        if required:
            raise
        return None


def _read_pages(context: AppContext, job: store.OcrJob, path: Path, readers: Readers) -> None:
    settings = context.settings.ocr
    engine = context.catalog.engine
    todo = store.queued_pages(engine, job.id)
    if not todo:
        return
    with open_pages(path, dpi=settings.dpi, max_pixels=settings.max_image_pixels) as source:
        for page in todo:
            if page > source.pages:
                read = PageRead("failed", reason=f"the file has {source.pages} pages")
            else:
                read = _read_one(source.render, page, readers)
            store.save_page(engine, job.id, page, _page_values(read))


def _read_one(render: Callable[[int], Rendered], page: int, readers: Readers) -> PageRead:
    try:
        rendered = render(page)
    except AutoragError as exc:  # one page too big or broken: the others go on
        return PageRead("failed", reason=exc.message)
    return readers.read(rendered.image)


def _page_values(read: PageRead) -> dict[str, object]:
    return {
        "status": read.status,
        "engine": read.engine,
        "confidence": read.confidence,
        "credibility": read.credibility,
        "chars": visible_chars(read.text),
        "rotation": read.rotation,
        "text": read.text,
        "reason": read.reason,
    }


def _settle(context: AppContext, job_id: int, indexer: Indexer, guard: Guard) -> str | None:
    engine = context.catalog.engine
    job = store.get_job(engine, job_id)
    pages = store.pages(engine, job_id)
    read = [p for p in pages if p.status in ("done", "low")]
    quality, believed = combine(
        Scored(p.confidence or 0.0, p.credibility or 0.0, p.chars) for p in read
    )
    engines = ",".join(sorted({p.engine for p in read if p.engine})) or None
    if quality is None or believed is None:
        return _no_text(engine, job, pages, engines)
    bar = context.settings.ocr
    if quality < bar.review_below_quality or believed < bar.review_below_credibility:
        why = f"quality {quality:.2f}, credibility {believed:.2f}: below the review bar"
        waiting = {
            "job": job_id,
            "document": job.document_id,
            "quality": round(quality, 2),
            "credibility": round(believed, 2),
        }
        store.set_status(
            engine,
            job_id,
            "review",
            on_moved=lambda conn: outbox.emit(
                conn, "ocr.review_needed", waiting, workspace=context.info.name
            ),
            reason=why,
            engine=engines,
            quality=quality,
            credibility=believed,
        )
        _mark_scan(engine, job, "needs_ocr", "ocr_review", f"OCR text awaits review: {why}")
        return None
    store.set_status(
        engine, job_id, "indexing", engine=engines, quality=quality, credibility=believed
    )
    return _index(context, job_id, indexer, guard)


def _no_text(
    engine: Engine, job: store.OcrJob, pages: list[store.OcrPage], engines: str | None
) -> str | None:
    failures = [p for p in pages if p.status == "failed"]
    if failures:
        reason = f"page {failures[0].page}: {failures[0].reason}"
        return _fail(engine, job, "ocr_failed", f"OCR read no text; {reason}")
    store.set_status(engine, job.id, "no_text", engine=engines, reason="OCR found no text")
    _mark_scan(engine, job, "needs_ocr", "ocr_empty", "OCR found no text")
    return None


def _fail(engine: Engine, job: store.OcrJob, code: str, message: str) -> str:
    store.set_status(engine, job.id, "failed", reason=message)
    _mark_scan(engine, job, "needs_ocr", _document_code(code), message)
    return f"{code}: {message}"


def _document_code(code: str) -> str:
    # Input errors keep their own stable codes (encrypted, corrupt, source_missing…).
    return code if code in _DOCUMENT_CODES else "ocr_failed"


# -- indexing -------------------------------------------------------------------------
def _index(context: AppContext, job_id: int, indexer: Indexer, guard: Guard) -> str | None:
    """Index the document with its OCR pages; the job ends ``indexed`` or ``failed``."""
    engine = context.catalog.engine
    job = store.get_job(engine, job_id)
    outcomes: list[IngestOutcome] = []
    with guard():
        document = _document(engine, job.document_id)
        if document is None:
            return None  # deleted meanwhile: nothing to index
        path = _source_path(context, job)
        parsed = merged_document(path, store.pages(engine, job_id), indexer.limits)
        indexer.index([IngestItem(_meta(document), parsed=parsed)], outcomes.append)
    outcome = outcomes[0] if outcomes else None
    if outcome is not None and outcome.status == "ready":
        store.set_status(engine, job_id, "indexed")
        return None
    reason = outcome.error if outcome is not None else "nothing was indexed"
    store.set_status(engine, job_id, "failed", reason=reason)
    return f"ocr_index_failed: {reason}"


def _meta(document: DocumentRow) -> DocumentMeta:
    assert document.content_hash is not None
    doc_date = document.doc_date
    return DocumentMeta(
        source_id=document.source_id,
        doc_type=document.doc_type,
        title=document.title,
        size=document.size,
        mtime_ns=document.mtime_ns,
        content_hash=document.content_hash,
        doc_date=as_utc(doc_date),
        pages=document.pages,
        origin=document.origin,
    )


# -- review ---------------------------------------------------------------------------
def approve(
    context: AppContext,
    job_id: int,
    *,
    reviewer: str,
    user_id: int | None,
    indexer: Indexer,
    guard: Guard,
) -> store.OcrJob:
    """Index a job's text that waited for review. ``Conflict`` unless it waits."""
    engine = context.catalog.engine
    _reviewable(engine, context, job_id)
    moved = store.set_status(
        engine, job_id, "indexing", expect=("review",), reviewed_by=reviewer, reviewed_at=utcnow()
    )
    if not moved:
        raise Conflict(f"OCR job {job_id} was reviewed meanwhile")
    try:
        failure = _index(context, job_id, indexer, guard)
    except Exception:
        store.set_status(engine, job_id, "review", expect=("indexing",))  # try again later
        raise
    _audit(context, "ocr.approved", job_id, user_id, reviewer)
    if failure is not None:
        raise Conflict(f"OCR job {job_id} could not be indexed: {failure}")
    return store.get_job(engine, job_id)


def reject(context: AppContext, job_id: int, *, reviewer: str, user_id: int | None) -> store.OcrJob:
    """Drop a job's text that waited for review: it is never indexed."""
    engine = context.catalog.engine
    job = _reviewable(engine, context, job_id)
    moved = store.set_status(
        engine, job_id, "rejected", expect=("review",), reviewed_by=reviewer, reviewed_at=utcnow()
    )
    if not moved:
        raise Conflict(f"OCR job {job_id} was reviewed meanwhile")
    _mark_scan(engine, job, "needs_ocr", "ocr_rejected", f"OCR text rejected by {reviewer}")
    _audit(context, "ocr.rejected", job_id, user_id, reviewer)
    return store.get_job(engine, job_id)


def _reviewable(engine: Engine, context: AppContext, job_id: int) -> store.OcrJob:
    job = store.get_job(engine, job_id, workspace_id=context.info.id)
    if job.status != "review":
        raise Conflict(f"OCR job {job_id} is {job.status}, not waiting for review")
    return job


def _audit(
    context: AppContext, event: str, job_id: int, user_id: int | None, reviewer: str
) -> None:
    details = {"job": job_id, "reviewer": reviewer}
    audit.record(
        context.catalog, event, user_id=user_id, workspace_id=context.info.id, details=details
    )


# -- documents ------------------------------------------------------------------------
def _document(engine: Engine, document_id: int) -> DocumentRow | None:
    with Session(engine, expire_on_commit=False) as session:
        document = session.get(DocumentRow, document_id)
    return None if document is None or document.status == "deleting" else document


def _source_path(context: AppContext, job: store.OcrJob) -> Path:
    """The file the job reads, as long as it holds the content the job was queued for."""
    document = _current_document(context.catalog.engine, job)
    if job.source_path is not None:
        return _unchanged_file(Path(job.source_path), document.content_hash)
    if document.origin != "upload" or document.content_hash is None:
        raise InvalidInput(
            "OCR reads uploads and files found under search paths only", code="ocr_unsupported"
        )
    return stored_path(
        context.workspace.data_dir, context.info, document.content_hash, document.doc_type
    )


def _current_document(engine: Engine, job: store.OcrJob) -> DocumentRow:
    """The job's document; ``Conflict`` once a refresh recorded another version of it."""
    document = _document(engine, job.document_id)
    if document is None:
        raise NotFound(f"document {job.document_id} is gone")
    if job.content_hash is not None and document.content_hash != job.content_hash:
        raise Conflict(
            "the file changed after this job was queued: the document's next job reads it",
            code="ocr_superseded",
        )
    return document


def _unchanged_file(path: Path, content_hash: str | None) -> Path:
    """A file found by a refresh, still as that refresh read it: uploads cannot change
    under their job, but a file in a search path can be edited or deleted at any time."""
    try:
        found = file_hash(path)
    except FileNotFoundError:
        message = f"{path} is gone; the next `autorag refresh` removes its document"
        raise InvalidInput(message, code="source_missing") from None
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}", code="unreadable") from None
    if found != content_hash:
        message = f"{path} changed after OCR was queued; the next `autorag refresh` queues it"
        raise InvalidInput(message, code="source_changed")
    return path


def _mark_scan(engine: Engine, job: store.OcrJob, status: str, code: str, message: str) -> None:
    with engine.begin() as conn:
        conn.execute(_scan_status(job.document_id, job.content_hash, status, code, message))


def _scan_status(
    document_id: int, content_hash: str | None, status: str, code: str, message: str
) -> Update:
    """Say where OCR is on a scanned document. A ready (mixed) one is left as it is, and
    so is a newer version of the file: it is another job's."""
    query = update(DocumentRow).where(
        DocumentRow.id == document_id, DocumentRow.status.in_(_SCAN_STATES)
    )
    if content_hash is not None:
        query = query.where(DocumentRow.content_hash == content_hash)
    return query.values(status=status, error_code=code, error=message, updated_at=utcnow())
