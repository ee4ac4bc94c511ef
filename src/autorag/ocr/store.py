"""OCR jobs and their pages in the catalog: created with their queue job, then progress,
page results and the review, each a short transaction of its own."""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Connection, Engine, func, insert, select, update
from sqlalchemy.orm import Session

from autorag.errors import NotFound
from autorag.store.catalog import queue
from autorag.store.catalog.models import DocumentRow, OcrJobRow, OcrPageRow, utcnow
from autorag.times import as_utc, as_utc_or_none

OCR_JOB = "ocr"  # the kind of its job in the durable queue
JobStatus = Literal[
    "queued", "running", "review", "indexing", "indexed", "rejected", "failed", "no_text"
]
JOB_STATUSES: tuple[JobStatus, ...] = (
    "queued", "running", "review", "indexing", "indexed", "rejected", "failed", "no_text"
)  # fmt: skip
ACTIVE: tuple[JobStatus, ...] = ("queued", "running", "review", "indexing")


@dataclass(frozen=True)
class OcrPage:
    page: int
    status: str  # queued | done | low | blank | failed | skipped
    engine: str | None
    confidence: float | None
    credibility: float | None
    chars: int
    rotation: int
    text: str
    reason: str | None


@dataclass(frozen=True)
class OcrJob:
    id: int
    workspace_id: int
    document_id: int
    title: str
    source_id: str
    mode: str
    status: JobStatus
    content_hash: str | None  # the document's content the job reads
    source_path: str | None  # the file a refresh found; None for an upload
    engine: str | None
    pages_total: int
    pages_done: int
    quality: float | None
    credibility: float | None
    reason: str | None
    reviewed_by: str | None
    reviewed_at: datetime | None
    created_at: datetime
    updated_at: datetime


def create_job(
    conn: Connection,
    workspace_id: int,
    document_id: int,
    pages: Sequence[int],
    *,
    mode: str,
    max_pages: int,
    source_path: str | None = None,
) -> int:
    """An OCR job over ``pages`` of the document's current content (read from
    ``source_path``, or the stored upload), and its queue job, in the caller's
    transaction. Pages past ``max_pages`` are recorded as skipped, with the reason.

    The document's jobs still waiting (queued, or for review) over other content read
    an older version of the file: they are superseded, so none runs or is approved.
    """
    now = utcnow()
    over = max(0, len(pages) - max_pages)
    content_hash = conn.execute(
        select(DocumentRow.content_hash).where(DocumentRow.id == document_id)
    ).scalar()
    job_id = conn.execute(
        insert(OcrJobRow)
        .values(
            workspace_id=workspace_id,
            document_id=document_id,
            mode=mode,
            content_hash=content_hash,
            source_path=source_path,
            status="queued",
            pages_total=len(pages),
            pages_done=over,
            created_at=now,
            updated_at=now,
        )
        .returning(OcrJobRow.id)
    ).scalar_one()
    cap = f"over the OCR page cap of {max_pages} (ocr.max_pages)"
    rows = [
        {
            "job_id": job_id,
            "document_id": document_id,
            "page": page,
            "status": "queued" if index < max_pages else "skipped",
            "reason": None if index < max_pages else cap,
        }
        for index, page in enumerate(pages)
    ]
    if rows:
        conn.execute(insert(OcrPageRow), rows)
    conn.execute(
        update(OcrJobRow)
        .where(
            OcrJobRow.document_id == document_id,
            OcrJobRow.content_hash.is_distinct_from(content_hash),
            OcrJobRow.status.in_(("queued", "review")),
        )
        .values(
            status="failed", reason=f"superseded by job {job_id}: the file changed", updated_at=now
        )
    )
    queue.enqueue(conn, workspace_id, OCR_JOB, document_id=document_id, payload={"ocr_job": job_id})
    return int(job_id)


def active_job(engine: Engine, document_id: int) -> int | None:
    """The unfinished OCR job over the document's current content, if any."""
    query = (
        select(OcrJobRow.id)
        .join(DocumentRow, DocumentRow.id == OcrJobRow.document_id)
        .where(
            OcrJobRow.document_id == document_id,
            OcrJobRow.content_hash == DocumentRow.content_hash,
            OcrJobRow.status.in_(ACTIVE),
        )
    )
    with engine.connect() as conn:
        found = conn.execute(query.order_by(OcrJobRow.id.desc()).limit(1)).scalar()
    return None if found is None else int(found)


@dataclass(frozen=True)
class Tally:
    """Where a set of jobs is: pages read of all pages, and how many jobs per status."""

    pages_done: int
    pages_total: int
    statuses: dict[str, int]


def open_jobs(engine: Engine, workspace_id: int) -> list[int]:
    """The workspace's OCR jobs queued or being read."""
    query = select(OcrJobRow.id).where(
        OcrJobRow.workspace_id == workspace_id, OcrJobRow.status.in_(("queued", "running"))
    )
    with engine.connect() as conn:
        return [int(job_id) for job_id in conn.execute(query.order_by(OcrJobRow.id)).scalars()]


def tally(engine: Engine, job_ids: Collection[int]) -> Tally:
    query = (
        select(
            OcrJobRow.status,
            func.count(OcrJobRow.id),
            func.sum(OcrJobRow.pages_done),
            func.sum(OcrJobRow.pages_total),
        )
        .where(OcrJobRow.id.in_(list(job_ids)))
        .group_by(OcrJobRow.status)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return Tally(
        pages_done=sum(int(row[2]) for row in rows),
        pages_total=sum(int(row[3]) for row in rows),
        statuses={row[0]: int(row[1]) for row in rows},
    )


def get_job(engine: Engine, job_id: int, *, workspace_id: int | None = None) -> OcrJob:
    query = _jobs().where(OcrJobRow.id == job_id)
    if workspace_id is not None:
        query = query.where(OcrJobRow.workspace_id == workspace_id)
    with Session(engine, expire_on_commit=False) as session:
        row = session.execute(query).first()
    if row is None:
        raise NotFound(f"no OCR job {job_id} in this workspace")
    return _job(row)


def list_jobs(
    engine: Engine,
    workspace_id: int,
    *,
    status: str | None = None,
    document_id: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> tuple[list[OcrJob], int]:
    """Newest first, with the total count before paging."""
    where: list[Any] = [OcrJobRow.workspace_id == workspace_id]
    if status is not None:
        where.append(OcrJobRow.status == status)
    if document_id is not None:
        where.append(OcrJobRow.document_id == document_id)
    with Session(engine, expire_on_commit=False) as session:
        total = session.execute(select(func.count(OcrJobRow.id)).where(*where)).scalar_one()
        rows = session.execute(
            _jobs().where(*where).order_by(OcrJobRow.id.desc()).limit(limit).offset(offset)
        ).all()
    return [_job(r) for r in rows], int(total)


def pages(engine: Engine, job_id: int) -> list[OcrPage]:
    query = select(OcrPageRow).where(OcrPageRow.job_id == job_id).order_by(OcrPageRow.page)
    with Session(engine) as session:
        return [_page(row) for row in session.scalars(query)]


def queued_pages(engine: Engine, job_id: int) -> list[int]:
    query = select(OcrPageRow.page).where(
        OcrPageRow.job_id == job_id, OcrPageRow.status == "queued"
    )
    with engine.connect() as conn:
        return [int(p) for p in conn.execute(query.order_by(OcrPageRow.page)).scalars()]


def save_page(engine: Engine, job_id: int, page: int, values: dict[str, Any]) -> None:
    """Record one page's result and count it done: the job's progress."""
    with engine.begin() as conn:
        changed = conn.execute(
            update(OcrPageRow)
            .where(
                OcrPageRow.job_id == job_id,
                OcrPageRow.page == page,
                OcrPageRow.status == "queued",
            )
            .values(**values)
        ).rowcount
        if changed:
            conn.execute(
                update(OcrJobRow)
                .where(OcrJobRow.id == job_id)
                .values(pages_done=OcrJobRow.pages_done + 1, updated_at=utcnow())
            )


def set_status(
    db: Engine,
    job_id: int,
    status: JobStatus,
    *,
    expect: Collection[str] | None = None,
    on_moved: Callable[[Connection], object] | None = None,
    **values: Any,
) -> bool:
    """Move the job to ``status`` (only from ``expect``, when given) with other column
    ``values``; whether it moved. ``on_moved`` runs in the same transaction when it did
    (an event that exists only if the move committed)."""
    query = update(OcrJobRow).where(OcrJobRow.id == job_id)
    if expect is not None:
        query = query.where(OcrJobRow.status.in_(list(expect)))
    with db.begin() as conn:
        moved = conn.execute(query.values(status=status, updated_at=utcnow(), **values))
        if moved.rowcount and on_moved is not None:
            on_moved(conn)
    return bool(moved.rowcount)


def _jobs() -> Any:
    return select(OcrJobRow, DocumentRow.title, DocumentRow.source_id).join(
        DocumentRow, DocumentRow.id == OcrJobRow.document_id
    )


def _job(row: Any) -> OcrJob:
    job: OcrJobRow = row[0]
    return OcrJob(
        id=job.id,
        workspace_id=job.workspace_id,
        document_id=job.document_id,
        title=row[1],
        source_id=row[2],
        mode=job.mode,
        status=job.status,  # type: ignore[arg-type]
        content_hash=job.content_hash,
        source_path=job.source_path,
        engine=job.engine,
        pages_total=job.pages_total,
        pages_done=job.pages_done,
        quality=job.quality,
        credibility=job.credibility,
        reason=job.reason,
        reviewed_by=job.reviewed_by,
        reviewed_at=as_utc_or_none(job.reviewed_at),
        created_at=as_utc(job.created_at),
        updated_at=as_utc(job.updated_at),
    )


def _page(row: OcrPageRow) -> OcrPage:
    return OcrPage(
        page=row.page,
        status=row.status,
        engine=row.engine,
        confidence=row.confidence,
        credibility=row.credibility,
        chars=row.chars,
        rotation=row.rotation,
        text=row.text,
        reason=row.reason,
    )
