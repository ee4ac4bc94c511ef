"""Files attached to one chat (skill ``document_temp_process``).

An attachment is checked, parsed and chunked exactly as an upload is, embedded with the
workspace's model, and stored in the chat's own tables. Nothing here writes to the
documents, chunks, full-text or vector stores: an attachment is searchable in its chat
only, and deleting the chat deletes it (foreign keys cascade).

Citations of attachment chunks use ``document_id = -attachment_id``: negative, so never
a workspace document's id, yet distinct per file (the per-document citation cap and the
deduplication of grounding count each file on its own). ``chunk_id`` is the attachment
chunk's id, and ``paragraph`` is 0, since attachment chunks do not record one.

An attachment is parsed and embedded inside its request, so it is held to the bounds of
an upload and to a page cap: ``server.max_upload_mb`` bytes, the ingest size and zip
limits, and ``ocr.max_pages`` pages (the page bound a document has). A PDF's pages are
counted before it is parsed; any file is refused before embedding when it yields more
than ``CHUNKS_PER_PAGE`` chunks a page allowed. Refusals are 413 problems.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, delete, func, insert, select
from sqlalchemy.exc import IntegrityError

from autorag.context import AppContext
from autorag.embeddings.base import Vectors
from autorag.errors import InvalidInput, NotFound, PayloadTooLarge, UnsupportedMediaType
from autorag.ingest.chunker import chunk_document
from autorag.ingest.guards import human_size
from autorag.ingest.parsers import ParseError, parse_file
from autorag.ingest.pipeline import embedding_text
from autorag.ingest.uploads import sanitize_filename, sniff, upload_type
from autorag.models import Chunk, Citation, ParsedDocument
from autorag.retrieval.fusion import Fused, rank_fused, rrf_fuse
from autorag.retrieval.stemming import stems
from autorag.store.catalog.models import (
    ChatAttachmentChunkRow,
    ChatAttachmentRow,
    ChatRow,
    utcnow,
)

SOURCE_PREFIX = "chat-attachment:"
# A dense page is about 3,000 characters: three or four chunks at the default size.
CHUNKS_PER_PAGE = 5


@dataclass(frozen=True)
class AttachmentInfo:
    id: int
    chat_id: int
    name: str  # sanitised, as uploads sanitise names
    doc_type: str
    size: int  # bytes
    chunks: int
    created_at: datetime


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
    """Parse ``data`` as the file ``name`` and make it searchable in chat ``chat_id``."""
    _require_chat(app, chat_id)
    filename = sanitize_filename(name)
    doc_type = upload_type(filename)  # 415 for a type uploads do not accept
    _check_size(app, filename, len(data))
    parsed = _parse(app, filename, doc_type, data)
    ingest = app.settings.ingest
    chunks = chunk_document(parsed, chunk_size=ingest.chunk_size, overlap=ingest.chunk_overlap)
    _check_chunks(app, filename, len(chunks))
    title = parsed.title or Path(filename).stem
    vectors = app.embedder.embed([embedding_text(title, c.text) for c in chunks])
    return _store(app, chat_id, filename, doc_type, len(data), chunks, vectors)


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


def _parse(app: AppContext, filename: str, doc_type: str, data: bytes) -> ParsedDocument:
    """Sniff and parse through a temporary file, as uploads are (parsers read files)."""
    limits = app.indexer.limits
    incoming = app.workspace.incoming_uploads_dir
    incoming.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=incoming) as folder:
        # The sniffer picks its checks by a lower-case extension equal to the type.
        path = Path(folder) / f"{Path(filename).stem}.{doc_type}"
        path.write_bytes(data)
        sniff(path, doc_type, limits)
        if doc_type == "pdf":
            _check_pages(app, filename, pdf_pages(path))
        try:
            parsed = parse_file(path, limits=limits)
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


def _store(
    app: AppContext,
    chat_id: int,
    filename: str,
    doc_type: str,
    size: int,
    chunks: Sequence[Chunk],
    vectors: Vectors,
) -> AttachmentInfo:
    now = utcnow()
    values = {"chat_id": chat_id, "name": filename, "doc_type": doc_type, "size": size}
    try:
        with app.catalog.engine.begin() as conn:
            attachment_id = conn.execute(
                insert(ChatAttachmentRow)
                .values(**values, created_at=now)
                .returning(ChatAttachmentRow.id)
            ).scalar_one()
            conn.execute(
                insert(ChatAttachmentChunkRow),
                [_chunk_row(attachment_id, c, v) for c, v in zip(chunks, vectors, strict=True)],
            )
    except IntegrityError as exc:  # the chat was deleted while the file was parsed
        raise NotFound(f"chat {chat_id} not found") from exc
    return AttachmentInfo(attachment_id, chat_id, filename, doc_type, size, len(chunks), now)


def _chunk_row(attachment_id: int, chunk: Chunk, vector: Vectors) -> dict[str, object]:
    return {
        "attachment_id": attachment_id,
        "chunk_index": chunk.index,
        "text": chunk.text,
        "page": chunk.page,
        "embedding": np.asarray(vector, dtype=np.float32).tobytes(),
    }


# -- listing and deleting -------------------------------------------------------------
def list_attachments(app: AppContext, chat_id: int) -> list[AttachmentInfo]:
    """The chat's attachments, oldest first, with their chunk counts."""
    _require_chat(app, chat_id)
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
        )
        .outerjoin(ChatAttachmentChunkRow, ChatAttachmentChunkRow.attachment_id == row.id)
        .where(ChatAttachmentRow.chat_id == chat_id)
        .group_by(ChatAttachmentRow.id)
        .order_by(ChatAttachmentRow.id)
    )
    with app.catalog.engine.connect() as conn:
        rows = conn.execute(query).all()
    return [AttachmentInfo(*r[:5], int(r[5]), _aware(r[6])) for r in rows]


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


def _aware(value: datetime) -> datetime:
    # SQLite hands timestamps back without their zone; they were written in UTC.
    return value if value.tzinfo else value.replace(tzinfo=UTC)
