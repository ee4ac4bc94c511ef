"""Files attached to one chat (skill ``document_temp_process``).

An attachment is checked, parsed and chunked exactly as an upload is, embedded with the
workspace's model, and stored in the chat's own tables. Nothing here writes to the
documents, chunks, full-text or vector stores: an attachment is searchable in its chat
only, and deleting the chat deletes it (foreign keys cascade).

Citations of attachment chunks use ``document_id = -attachment_id``: negative, so never
a workspace document's id, yet distinct per file (the per-document citation cap and the
deduplication of grounding count each file on its own). ``chunk_id`` is the attachment
chunk's id, and ``paragraph`` is 0, since attachment chunks do not record one.

Over HTTP an attachment is read by a background job, as an upload is: the request checks
what is cheap to check (the chat, the name and type, the size, the content against the
type, a PDF's page count), keeps the file in ``.autorag/attachments/`` and queues the
job; the attachment is ``processing`` until the job makes it ``ready`` or ``failed`` with
the reason. :func:`attach_file` reads one at once (no job) for callers that wait anyway.

The bounds are an upload's and a page cap: ``server.max_upload_mb`` bytes, the ingest
size and zip limits, and ``ocr.max_pages`` pages (the page bound a document has). A
PDF's pages are counted before it is parsed; any file is refused before embedding when
it yields more than ``CHUNKS_PER_PAGE`` chunks a page allowed.
"""

from __future__ import annotations

import math
import os
import re
import secrets
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql import ColumnElement

from autorag.context import AppContext
from autorag.embeddings.base import Vectors
from autorag.errors import (
    AutoragError,
    InvalidInput,
    NotFound,
    PayloadTooLarge,
    UnsupportedMediaType,
)
from autorag.ingest.chunker import chunk_document
from autorag.ingest.parsers import ParseError, parse_file
from autorag.ingest.parsers.guards import human_size
from autorag.ingest.pipeline import embedding_text
from autorag.ingest.uploads import sanitize_filename, sniff, upload_type
from autorag.models import Chunk, Citation, ParsedDocument
from autorag.private_files import make_private_dir
from autorag.retrieval.fusion import Fused, rank_fused, rrf_fuse
from autorag.store.catalog import queue
from autorag.store.catalog.models import (
    ChatAttachmentChunkRow,
    ChatAttachmentRow,
    ChatRow,
    utcnow,
)
from autorag.text.stemming import stems
from autorag.times import as_utc

SOURCE_PREFIX = "chat-attachment:"
ATTACHMENT_JOB = "chat_attachment"
# A dense page is about 3,000 characters: three or four chunks at the default size.
CHUNKS_PER_PAGE = 5
# How a kept file is named: random, with the type as its extension (parsers go by it).
_KEPT_NAME = re.compile(r"[0-9a-f]{32}\.[a-z]{2,4}")


@dataclass(frozen=True)
class AttachmentInfo:
    id: int
    chat_id: int
    name: str  # sanitised, as uploads sanitise names
    doc_type: str
    size: int  # bytes
    chunks: int
    created_at: datetime
    status: str = "ready"  # processing | ready | failed
    error_code: str | None = None  # when failed: empty_file, corrupt, too_large, ...
    error: str | None = None


@dataclass(frozen=True)
class _StoredChunk:
    id: int
    attachment_id: int
    name: str
    chunk_index: int
    text: str
    page: int | None
    embedding: bytes


# -- attaching ------------------------------------------------------------------------
def attach_file(app: AppContext, chat_id: int, name: str, data: bytes) -> AttachmentInfo:
    """Read ``data`` as the file ``name`` now and make it searchable in chat ``chat_id``."""
    _require_chat(app, chat_id)
    filename, doc_type = _checked_name(app, name, len(data))
    incoming = make_private_dir(app.workspace.incoming_uploads_dir)
    with tempfile.TemporaryDirectory(dir=incoming) as folder:
        path = Path(folder) / f"{secrets.token_hex(16)}.{doc_type}"
        path.write_bytes(data)
        _check_file(app, filename, doc_type, path)
        chunks, vectors = _read(app, filename, doc_type, path)
    row = {"chat_id": chat_id, "name": filename, "doc_type": doc_type, "size": len(data)}
    try:
        with app.catalog.engine.begin() as conn:
            attachment_id = _insert(conn, row, status="ready")
            _insert_chunks(conn, attachment_id, chunks, vectors)
    except IntegrityError as exc:  # the chat was deleted while the file was read
        raise NotFound(f"chat {chat_id} not found") from exc
    return get_attachment(app, chat_id, attachment_id)


def receive_attachment(app: AppContext, chat_id: int, name: str, path: Path) -> AttachmentInfo:
    """Check the file received at ``path`` (the client called it ``name``), keep it and
    queue the job that reads it: the attachment is ``processing`` until that job ends.

    ``path`` is consumed: moved into ``.autorag/attachments/`` or removed when refused.
    """
    try:
        _require_chat(app, chat_id)
        size = path.stat().st_size
        filename, doc_type = _checked_name(app, name, size)
        folder = make_private_dir(app.workspace.attachments_dir)
        kept = folder / f"{secrets.token_hex(16)}.{doc_type}"
        os.replace(path, kept)
        kept.chmod(0o600)  # the owner's alone, whoever wrote it
    finally:
        path.unlink(missing_ok=True)
    row = {"chat_id": chat_id, "name": filename, "doc_type": doc_type, "size": size}
    try:
        _check_file(app, filename, doc_type, kept)
        with app.catalog.engine.begin() as conn:
            attachment_id = _insert(conn, row, status="processing")
            payload = {"attachment_id": attachment_id, "file": kept.name}
            queue.enqueue(conn, app.info.id, ATTACHMENT_JOB, payload=payload)
    except IntegrityError as exc:  # the chat was deleted meanwhile
        kept.unlink(missing_ok=True)
        raise NotFound(f"chat {chat_id} not found") from exc
    except BaseException:
        kept.unlink(missing_ok=True)
        raise
    return get_attachment(app, chat_id, attachment_id)


def read_attachment(app: AppContext, payload: Mapping[str, Any]) -> AttachmentInfo | None:
    """The job: read the kept file, store its chunks, and mark the attachment ``ready``,
    or ``failed`` with the reason. None when the attachment was deleted meanwhile.

    The kept file is removed either way; a job killed half way runs again from the start.
    """
    attachment_id, kept = _job_target(app, payload)
    try:
        row = _info(app.catalog.engine, attachment_id)
        if row is None or row.status != "processing":
            return None
        try:
            chunks, vectors = _read(app, row.name, row.doc_type, kept)
        except AutoragError as exc:
            _fail(app.catalog.engine, attachment_id, exc.code, exc.message)
        except Exception as exc:  # a parser bug: the attachment says so, the worker logs
            message = f"reading {row.name} failed ({type(exc).__name__})"
            _fail(app.catalog.engine, attachment_id, "processing_error", message)
            raise
        else:
            if not _complete(app.catalog.engine, attachment_id, chunks, vectors):
                return None
        return _info(app.catalog.engine, attachment_id)
    finally:
        kept.unlink(missing_ok=True)


def abandon_attachment(app: AppContext, payload: Mapping[str, Any]) -> None:
    """Its job stopped the server too often: the attachment failed, its file goes."""
    attachment_id, kept = _job_target(app, payload)
    kept.unlink(missing_ok=True)
    message = "reading this file stopped the server several times; attach it again"
    _fail(app.catalog.engine, attachment_id, "processing_crashed", message)


def _job_target(app: AppContext, payload: Mapping[str, Any]) -> tuple[int, Path]:
    attachment_id, name = payload.get("attachment_id"), payload.get("file")
    if not isinstance(attachment_id, int) or not isinstance(name, str):
        raise InvalidInput("an attachment job names no attachment", code="bad_job")
    if not _KEPT_NAME.fullmatch(name):  # never a path: only a name this module made
        raise InvalidInput("an attachment job names no kept file", code="bad_job")
    return attachment_id, app.workspace.attachments_dir / name


def _checked_name(app: AppContext, name: str, size: int) -> tuple[str, str]:
    """The sanitised name and its type (415 for a type uploads do not accept)."""
    filename = sanitize_filename(name)
    doc_type = upload_type(filename)
    _check_size(app, filename, size)
    return filename, doc_type


def _check_file(app: AppContext, filename: str, doc_type: str, path: Path) -> None:
    """What is cheap to check before reading: the content matches the type, a PDF's
    page count is within bounds."""
    sniff(path, doc_type, app.indexer.limits)
    if doc_type == "pdf":
        _check_pages(app, filename, pdf_pages(path))


def _check_size(app: AppContext, filename: str, size: int) -> None:
    if size == 0:
        raise InvalidInput(f"{filename} is empty", code="empty_file")
    limit = int(app.settings.server.max_upload_mb * 1024**2)
    if size > limit:
        raise PayloadTooLarge(
            f"{filename} is {human_size(size)}, over the {human_size(limit)} upload limit"
        )


def max_pages(app: AppContext) -> int:
    return app.settings.ocr.max_pages


def _check_pages(app: AppContext, filename: str, pages: int | None) -> None:
    if pages is not None and pages > max_pages(app):
        raise PayloadTooLarge(
            f"{filename} has {pages} pages, over the {max_pages(app)}-page limit of a chat "
            "attachment (ocr.max_pages): upload it to the workspace instead"
        )


def _check_chunks(app: AppContext, filename: str, chunks: int) -> None:
    limit = max_pages(app) * CHUNKS_PER_PAGE
    if chunks > limit:
        raise PayloadTooLarge(
            f"{filename} holds too much text for a chat attachment ({chunks} chunks, over "
            f"{limit}: {CHUNKS_PER_PAGE} a page of ocr.max_pages): upload it to the "
            "workspace instead"
        )


def pdf_pages(path: Path) -> int | None:
    """The page count from the PDF's page tree, without reading any page; None if PDFium
    cannot open it (the parser then reports why)."""
    import pypdfium2 as pdfium  # loaded on first use, as OCR does

    try:
        document = pdfium.PdfDocument(path)
    except pdfium.PdfiumError:
        return None
    try:
        return len(document)
    finally:
        document.close()


def _read(app: AppContext, filename: str, doc_type: str, path: Path) -> tuple[list[Chunk], Vectors]:
    """Parse, chunk and embed the checked file at ``path`` (named by its type)."""
    parsed = _parse(app, filename, path)
    ingest = app.settings.ingest
    chunks = chunk_document(parsed, chunk_size=ingest.chunk_size, overlap=ingest.chunk_overlap)
    _check_chunks(app, filename, len(chunks))
    title = parsed.title or Path(filename).stem
    return chunks, app.embedder.embed([embedding_text(title, c.text) for c in chunks])


def _parse(app: AppContext, filename: str, path: Path) -> ParsedDocument:
    try:
        parsed = parse_file(path, limits=app.indexer.limits)
    except ParseError as exc:
        raise _parse_failure(filename, exc) from exc
    _check_pages(app, filename, parsed.pages)  # slides, sheets: counted by their parser
    if parsed.needs_ocr:
        raise InvalidInput(
            f"{filename} has no usable text layer (a scan?): OCR is needed to read it",
            code="needs_ocr",
        )
    return parsed


def _parse_failure(filename: str, exc: ParseError) -> InvalidInput:
    message = f"cannot read the attachment {filename}: {exc.message}"
    if exc.reason == "too_large":
        return PayloadTooLarge(message)
    if exc.reason == "unsupported_type":
        return UnsupportedMediaType(message)
    return InvalidInput(message, code=exc.reason)  # corrupt, empty, zip_bomb, unreadable


# -- storing --------------------------------------------------------------------------
def _insert(conn: Connection, values: Mapping[str, object], *, status: str) -> int:
    statement = (
        insert(ChatAttachmentRow)
        .values(**values, status=status, created_at=utcnow())
        .returning(ChatAttachmentRow.id)
    )
    return int(conn.execute(statement).scalar_one())


def _insert_chunks(
    conn: Connection, attachment_id: int, chunks: Sequence[Chunk], vectors: Vectors
) -> None:
    rows = [_chunk_row(attachment_id, c, v) for c, v in zip(chunks, vectors, strict=True)]
    if rows:
        conn.execute(insert(ChatAttachmentChunkRow), rows)


def _chunk_row(attachment_id: int, chunk: Chunk, vector: Vectors) -> dict[str, object]:
    return {
        "attachment_id": attachment_id,
        "chunk_index": chunk.index,
        "text": chunk.text,
        "page": chunk.page,
        "embedding": np.asarray(vector, dtype=np.float32).tobytes(),
    }


def _complete(
    engine: Engine, attachment_id: int, chunks: Sequence[Chunk], vectors: Vectors
) -> bool:
    """Store the chunks and mark the attachment ready; False if it was deleted meanwhile."""
    try:
        with engine.begin() as conn:
            if not _set_status(conn, attachment_id, "ready"):
                return False
            _insert_chunks(conn, attachment_id, chunks, vectors)
    except IntegrityError:  # deleted (with its chat) between the update and the insert
        return False
    return True


def _fail(engine: Engine, attachment_id: int, code: str, message: str) -> None:
    with engine.begin() as conn:
        _set_status(conn, attachment_id, "failed", code=code, message=message)


def _set_status(
    conn: Connection,
    attachment_id: int,
    status: str,
    *,
    code: str | None = None,
    message: str | None = None,
) -> bool:
    statement = (
        update(ChatAttachmentRow)
        .where(ChatAttachmentRow.id == attachment_id, ChatAttachmentRow.status == "processing")
        .values(status=status, error_code=code, error=message)
    )
    return bool(conn.execute(statement).rowcount)


# -- listing and deleting -------------------------------------------------------------
def list_attachments(app: AppContext, chat_id: int) -> list[AttachmentInfo]:
    """The chat's attachments, oldest first, with their status and chunk counts."""
    _require_chat(app, chat_id)
    return _infos(app.catalog.engine, ChatAttachmentRow.chat_id == chat_id)


def get_attachment(app: AppContext, chat_id: int, attachment_id: int) -> AttachmentInfo:
    """One attachment of the chat; ``NotFound`` unless it is in this chat."""
    _require_chat(app, chat_id)
    found = _infos(
        app.catalog.engine,
        ChatAttachmentRow.chat_id == chat_id,
        ChatAttachmentRow.id == attachment_id,
    )
    if not found:
        raise NotFound(f"attachment {attachment_id} not found in chat {chat_id}")
    return found[0]


def _info(engine: Engine, attachment_id: int) -> AttachmentInfo | None:
    found = _infos(engine, ChatAttachmentRow.id == attachment_id)
    return found[0] if found else None


def _infos(engine: Engine, *where: ColumnElement[bool]) -> list[AttachmentInfo]:
    row = ChatAttachmentRow
    query = (
        select(
            row.id,
            row.chat_id,
            row.name,
            row.doc_type,
            row.size,
            func.count(ChatAttachmentChunkRow.id),
            row.created_at,
            row.status,
            row.error_code,
            row.error,
        )
        .outerjoin(ChatAttachmentChunkRow, ChatAttachmentChunkRow.attachment_id == row.id)
        .where(*where)
        .group_by(row.id)
        .order_by(row.id)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [
        AttachmentInfo(
            id=r.id,
            chat_id=r.chat_id,
            name=r.name,
            doc_type=r.doc_type,
            size=r.size,
            chunks=int(r[5]),
            created_at=as_utc(r.created_at),
            status=r.status,
            error_code=r.error_code,
            error=r.error,
        )
        for r in rows
    ]


def has_attachments(app: AppContext, chat_id: int) -> bool:
    query = select(ChatAttachmentRow.id).where(ChatAttachmentRow.chat_id == chat_id).limit(1)
    with app.catalog.engine.connect() as conn:
        return conn.execute(query).first() is not None


def delete_attachment(app: AppContext, chat_id: int, attachment_id: int) -> None:
    """Remove one attachment and its chunks; ``NotFound`` unless it is in this chat."""
    _require_chat(app, chat_id)
    statement = delete(ChatAttachmentRow).where(
        ChatAttachmentRow.id == attachment_id, ChatAttachmentRow.chat_id == chat_id
    )
    with app.catalog.engine.begin() as conn:
        if conn.execute(statement).rowcount == 0:
            raise NotFound(f"attachment {attachment_id} not found in chat {chat_id}")


# -- searching ------------------------------------------------------------------------
def search_attachments(
    app: AppContext,
    chat_id: int,
    query: str,
    k: int,
    *,
    name: str | None = None,
    first_number: int = 1,
) -> list[Citation]:
    """The ``k`` best chunks of the chat's attachments (only the file ``name`` if given).

    Hybrid like the workspace search: cosine similarity over the stored embeddings and a
    keyword score, fused by RRF with the workspace's search settings.
    """
    _require_chat(app, chat_id)
    chunks = _load_chunks(app.catalog.engine, chat_id, name)
    if not chunks or not query.strip():
        return []
    by_id = {c.id: c for c in chunks}
    ranked = _rank(app, query, chunks)[: max(k, 0)]
    return [
        _citation(first_number + i, chat_id, by_id[f.chunk_id], f) for i, f in enumerate(ranked)
    ]


def _load_chunks(engine: Engine, chat_id: int, name: str | None) -> list[_StoredChunk]:
    chunk = ChatAttachmentChunkRow
    query = (
        select(
            chunk.id,
            chunk.attachment_id,
            ChatAttachmentRow.name,
            chunk.chunk_index,
            chunk.text,
            chunk.page,
            chunk.embedding,
        )
        .join(ChatAttachmentRow, chunk.attachment_id == ChatAttachmentRow.id)
        .where(ChatAttachmentRow.chat_id == chat_id)
    )
    if name is not None:
        query = query.where(ChatAttachmentRow.name == name)
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    return [_StoredChunk(*r) for r in rows]


def _rank(app: AppContext, query: str, chunks: Sequence[_StoredChunk]) -> list[Fused]:
    settings = app.settings.search
    depth = settings.candidate_depth
    legs = {
        "vector": _vector_leg(app, query, chunks, depth),
        "fts": _keyword_leg(query, chunks, depth),
    }
    weights = {"vector": settings.vector_weight, "fts": settings.fts_weight}
    fused = rrf_fuse(legs, k=settings.rrf_k, weights=weights)
    position = {c.id: (c.attachment_id, c.chunk_index) for c in chunks}
    return rank_fused(fused, position)


def _vector_leg(
    app: AppContext, query: str, chunks: Sequence[_StoredChunk], depth: int
) -> list[int]:
    """Chunk ids by cosine similarity (stored vectors are normalised)."""
    query_vector = np.asarray(app.embedder.embed_query(query), dtype=np.float32)
    width = query_vector.shape[0] * 4
    # Chunks embedded by another model (the workspace's changed since) cannot compare.
    usable = [c for c in chunks if len(c.embedding) == width]
    if not usable:
        return []
    matrix = np.frombuffer(b"".join(c.embedding for c in usable), dtype=np.float32)
    scores = matrix.reshape(len(usable), -1) @ query_vector
    order = np.argsort(-scores, kind="stable")[:depth]
    return [usable[int(i)].id for i in order]


def _keyword_leg(query: str, chunks: Sequence[_StoredChunk], depth: int) -> list[int]:
    """Chunk ids by the summed rarity (IDF) of the query's stemmed keywords they hold."""
    terms = stems(query)
    if not terms:
        return []
    held = [stems(c.text) & terms for c in chunks]
    frequency = {t: sum(1 for h in held if t in h) for t in terms}
    idf = {t: math.log(1 + len(chunks) / n) for t, n in frequency.items() if n}
    scored = [(sum(idf[t] for t in h), c.id) for h, c in zip(held, chunks, strict=True) if h]
    scored.sort(key=lambda pair: -pair[0])  # stable: ties stay in file order
    return [chunk_id for _, chunk_id in scored[:depth]]


def _citation(number: int, chat_id: int, chunk: _StoredChunk, fused: Fused) -> Citation:
    return Citation(
        number=number,
        source=f"{SOURCE_PREFIX}{chunk.name}",
        source_id=f"/chats/{chat_id}/attachments/{chunk.attachment_id}/{chunk.name}",
        title=chunk.name,
        text=chunk.text,
        page=chunk.page,
        paragraph=0,
        score=fused.score,
        legs=fused.legs,
        chunk_id=chunk.id,
        document_id=-chunk.attachment_id,
    )


# -- helpers --------------------------------------------------------------------------
def _require_chat(app: AppContext, chat_id: int) -> None:
    """``NotFound`` unless the chat exists in the context's workspace."""
    query = select(ChatRow.id).where(ChatRow.id == chat_id, ChatRow.workspace_id == app.info.id)
    with app.catalog.engine.connect() as conn:
        if conn.execute(query).scalar() is None:
            raise NotFound(f"chat {chat_id} not found in this workspace")
