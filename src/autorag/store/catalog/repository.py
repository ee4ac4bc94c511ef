"""The catalog repository: every read and write services make to the catalog tables."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    delete,
    insert,
    select,
    update,
)
from sqlalchemy.orm import Session

from autorag.errors import Conflict, NotFound
from autorag.models import Chunk, SearchFilters
from autorag.sources.policy import Rule
from autorag.store.catalog import outbox
from autorag.store.catalog.db import dialect_insert
from autorag.store.catalog.models import (
    ChunkRow,
    DocumentRow,
    JobRow,
    RefreshRunRow,
    WorkspaceLanguageRow,
    WorkspaceRow,
    utcnow,
)
from autorag.store.catalog.policy_rules import level_of, rules_of
from autorag.store.catalog.readiness_sql import VISIBLE_STATUS as VISIBLE_STATUS
from autorag.store.catalog.readiness_sql import ReadinessFacts, engine_rows
from autorag.store.catalog.workspace_info import WorkspaceInfo as WorkspaceInfo
from autorag.text.analysis import index_terms

# A workspace people use; any other kind is a hidden namespace (an archive's index,
# ``archive:<id>``) that no listing or lookup by name ever shows.
WORKSPACE_KIND = "workspace"


@dataclass(frozen=True)
class FileState:
    document_id: int
    size: int
    mtime_ns: int
    status: str
    content_hash: str | None
    error_code: str | None


@dataclass(frozen=True)
class DocumentMeta:
    """What the pipeline knows about a document before it is written."""

    source_id: str
    doc_type: str
    title: str
    size: int
    mtime_ns: int
    content_hash: str | None
    doc_date: datetime
    pages: int | None = None
    origin: str = "file"


@dataclass(frozen=True)
class StagedDocument:
    meta: DocumentMeta
    chunks: Sequence[Chunk]
    language: str = "en"  # ISO 639-1: how its full-text terms are stemmed


@dataclass(frozen=True)
class ChunkView:
    chunk_id: int
    document_id: int
    chunk_index: int
    text: str
    page: int | None
    paragraph: int
    char_start: int
    source_id: str
    title: str
    doc_type: str


def filter_clauses(filters: SearchFilters) -> list[ColumnElement[bool]]:
    """The documentTypes/date predicates on ``documents``; shared by every leg."""
    clauses: list[ColumnElement[bool]] = []
    if filters.document_types:
        clauses.append(DocumentRow.doc_type.in_(filters.document_types))
    if filters.date_from is not None:
        clauses.append(DocumentRow.doc_date >= filters.date_from)
    if filters.date_to is not None:
        clauses.append(DocumentRow.doc_date < filters.date_to)
    return clauses


def _visible_clauses(
    workspace_id: int, chunk_ids: Iterable[int], filters: SearchFilters
) -> list[ColumnElement[bool]]:
    """Chunks (among these ids) of the workspace's ready documents that pass the filters."""
    return [
        ChunkRow.id.in_(set(chunk_ids)),
        DocumentRow.workspace_id == workspace_id,
        DocumentRow.status == VISIBLE_STATUS,
        *filter_clauses(filters),
    ]


class Catalog:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    # -- workspaces -------------------------------------------------------------------
    def ensure_workspace(self, name: str) -> WorkspaceInfo:
        return self.ensure_namespace(name, WORKSPACE_KIND)

    def get_workspace(self, name: str) -> WorkspaceInfo:
        """A workspace people use, by name (never a hidden namespace)."""
        found = self.find_namespace(name, WORKSPACE_KIND)
        if found is None:
            raise NotFound(f"no workspace {name!r}")
        return found

    def ensure_namespace(self, name: str, kind: str) -> WorkspaceInfo:
        """The workspace row ``name`` of this ``kind``, created when missing.

        A hidden namespace (kind other than ``workspace``) has the stores a workspace
        has (documents, chunks, full-text rows, a vector table) for a feature's own
        index; ``Conflict`` when the name is taken by a row of another kind.
        """
        with self.engine.begin() as conn:
            row = conn.execute(select(WorkspaceRow).where(WorkspaceRow.name == name)).first()
            if row is None:
                conn.execute(
                    insert(WorkspaceRow).values(
                        name=name, short_id=secrets.token_hex(4), kind=kind, created_at=utcnow()
                    )
                )
                row = conn.execute(select(WorkspaceRow).where(WorkspaceRow.name == name)).one()
        if row.kind != kind:
            raise Conflict(f"the name {name!r} is taken by a {row.kind}, not a {kind}")
        return WorkspaceInfo(row.id, row.name, row.short_id)

    def find_namespace(self, name: str, kind: str) -> WorkspaceInfo | None:
        """The workspace row ``name`` of this ``kind``; None when there is none."""
        query = select(WorkspaceRow.id, WorkspaceRow.name, WorkspaceRow.short_id).where(
            WorkspaceRow.name == name, WorkspaceRow.kind == kind
        )
        with self.engine.connect() as conn:
            row = conn.execute(query).first()
        return None if row is None else WorkspaceInfo(row[0], row[1], row[2])

    def delete_workspace_rows(self, workspace_id: int) -> None:
        """Delete a workspace row (or namespace) with its documents, chunks (and so its
        full-text rows) and jobs, in one transaction; its vector table is the caller's."""
        documents = select(DocumentRow.id).where(DocumentRow.workspace_id == workspace_id)
        with self.engine.begin() as conn:
            named = conn.execute(
                select(WorkspaceRow.name).where(
                    WorkspaceRow.id == workspace_id, WorkspaceRow.kind == WORKSPACE_KIND
                )
            ).scalar()
            if named is not None:  # a workspace people use, not an archive's index
                gone = {"workspace": workspace_id}
                outbox.emit(conn, "workspace.deleted", gone, workspace=named)
            conn.execute(delete(ChunkRow).where(ChunkRow.document_id.in_(documents)))
            conn.execute(delete(DocumentRow).where(DocumentRow.workspace_id == workspace_id))
            conn.execute(delete(JobRow).where(JobRow.workspace_id == workspace_id))
            conn.execute(delete(WorkspaceRow).where(WorkspaceRow.id == workspace_id))

    # -- refresh bookkeeping ----------------------------------------------------------
    def file_states(self, workspace_id: int, origin: str = "file") -> dict[str, FileState]:
        query = select(
            DocumentRow.source_id,
            DocumentRow.id,
            DocumentRow.size,
            DocumentRow.mtime_ns,
            DocumentRow.status,
            DocumentRow.content_hash,
            DocumentRow.error_code,
        ).where(DocumentRow.workspace_id == workspace_id, DocumentRow.origin == origin)
        with self.engine.connect() as conn:
            return {r[0]: FileState(*r[1:]) for r in conn.execute(query)}

    def stage_documents(
        self, workspace_id: int, staged: Sequence[StagedDocument]
    ) -> dict[str, tuple[int, list[int]]]:
        """Write documents as ``indexing`` with their new chunks, in one transaction.

        Returns ``source_id -> (document_id, chunk ids in chunk order)``. Nothing written
        here is visible to search until ``mark_ready``.
        """
        written: dict[str, tuple[int, list[int]]] = {}
        with self.engine.begin() as conn:
            for item in staged:
                doc_id = self._upsert_document(conn, workspace_id, item.meta, "indexing")
                conn.execute(delete(ChunkRow).where(ChunkRow.document_id == doc_id))
                conn.execute(
                    update(DocumentRow)
                    .where(DocumentRow.id == doc_id)
                    .values(language=item.language)
                )
                _note_language(conn, workspace_id, item.language)
                chunk_ids: list[int] = []
                if item.chunks:
                    title_terms = index_terms(item.meta.title, item.language)
                    rows = [
                        _chunk_values(workspace_id, doc_id, item.meta.title, c)
                        | {"fts_title": title_terms, "fts_text": index_terms(c.text, item.language)}
                        for c in item.chunks
                    ]
                    result = conn.execute(
                        insert(ChunkRow).returning(ChunkRow.id, sort_by_parameter_order=True),
                        rows,
                    )
                    chunk_ids = [r[0] for r in result]
                conn.execute(
                    update(DocumentRow)
                    .where(DocumentRow.id == doc_id)
                    .values(chunk_count=len(chunk_ids))
                )
                written[item.meta.source_id] = (doc_id, chunk_ids)
        return written

    def mark_ready(
        self, document_ids: Sequence[int], embedding_model: str, *, announce: bool = False
    ) -> None:
        """Make documents visible; ``announce``: with a ``document.processed`` event each
        (newly indexed, not re-embedded)."""
        if not document_ids:
            return
        with self.engine.begin() as conn:
            if announce:
                announce_documents(conn, document_ids, "document.processed")
            conn.execute(
                update(DocumentRow)
                .where(DocumentRow.id.in_(document_ids))
                .values(
                    status=VISIBLE_STATUS,
                    error_code=None,
                    error=None,
                    embedding_model=embedding_model,
                    indexed_at=utcnow(),
                )
            )

    def record_unindexed(
        self, workspace_id: int, meta: DocumentMeta, status: str, code: str, reason: str
    ) -> int:
        """Record a file that yields no chunks (failed, needs_ocr) and drop old chunks."""
        with self.engine.begin() as conn:
            doc_id = self._upsert_document(conn, workspace_id, meta, status)
            conn.execute(delete(ChunkRow).where(ChunkRow.document_id == doc_id))
            conn.execute(
                update(DocumentRow)
                .where(DocumentRow.id == doc_id)
                .values(error_code=code, error=reason, chunk_count=0, embedding_model=None)
            )
            if status == "failed":
                announce_documents(conn, [doc_id], "document.failed")
            return doc_id

    def touch(self, document_id: int, size: int, mtime_ns: int) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(DocumentRow)
                .where(DocumentRow.id == document_id)
                .values(size=size, mtime_ns=mtime_ns)
            )

    def mark_deleting(self, document_ids: Sequence[int]) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(DocumentRow)
                .where(DocumentRow.id.in_(document_ids))
                .values(status="deleting")
            )

    def delete_documents(self, document_ids: Sequence[int]) -> None:
        with self.engine.begin() as conn:
            announce_documents(conn, document_ids, "document.deleted")
            conn.execute(delete(ChunkRow).where(ChunkRow.document_id.in_(document_ids)))
            conn.execute(delete(DocumentRow).where(DocumentRow.id.in_(document_ids)))

    def documents_with_status(self, workspace_id: int, status: str) -> list[int]:
        query = select(DocumentRow.id).where(
            DocumentRow.workspace_id == workspace_id, DocumentRow.status == status
        )
        with self.engine.connect() as conn:
            return [r[0] for r in conn.execute(query)]

    def _upsert_document(
        self, conn: Connection, workspace_id: int, meta: DocumentMeta, status: str
    ) -> int:
        values = {
            "title": meta.title,
            "doc_type": meta.doc_type,
            "size": meta.size,
            "mtime_ns": meta.mtime_ns,
            "content_hash": meta.content_hash,
            "status": status,
            "pages": meta.pages,
            "doc_date": meta.doc_date,
            "origin": meta.origin,
            "updated_at": utcnow(),
        }
        existing = conn.execute(
            select(DocumentRow.id).where(
                DocumentRow.workspace_id == workspace_id, DocumentRow.source_id == meta.source_id
            )
        ).scalar()
        if existing is not None:
            conn.execute(update(DocumentRow).where(DocumentRow.id == existing).values(**values))
            return int(existing)
        result = conn.execute(
            insert(DocumentRow)
            .values(
                workspace_id=workspace_id,
                source_id=meta.source_id,
                chunk_count=0,
                created_at=utcnow(),
                **values,
            )
            .returning(DocumentRow.id)
        )
        return int(result.scalar_one())

    # -- reads for search ---------------------------------------------------------------
    def visible_positions(
        self, workspace_id: int, chunk_ids: Iterable[int], filters: SearchFilters
    ) -> dict[int, tuple[int, int]]:
        """The post-retrieval backstop: of these chunks, those of ready documents that pass
        the filters, as ``chunk id -> (document id, chunk index)`` (no text: it is cheap
        to check hundreds of candidates, then fetch the text of the few kept)."""
        query = select(ChunkRow.id, ChunkRow.document_id, ChunkRow.chunk_index)
        with self.engine.connect() as conn:
            rows = conn.execute(
                query.join(DocumentRow, DocumentRow.id == ChunkRow.document_id).where(
                    *_visible_clauses(workspace_id, chunk_ids, filters)
                )
            )
            return {chunk_id: (document_id, index) for chunk_id, document_id, index in rows}

    def visible_chunks(
        self, workspace_id: int, chunk_ids: Iterable[int], filters: SearchFilters
    ) -> dict[int, ChunkView]:
        """Chunks with their text and document, for those still visible."""
        query = select(
            ChunkRow.id.label("chunk_id"),
            ChunkRow.document_id,
            ChunkRow.chunk_index,
            ChunkRow.text,
            ChunkRow.page,
            ChunkRow.paragraph,
            ChunkRow.char_start,
            DocumentRow.source_id,
            DocumentRow.title,
            DocumentRow.doc_type,
        )
        with self.engine.connect() as conn:
            rows = conn.execute(
                query.join(DocumentRow, DocumentRow.id == ChunkRow.document_id).where(
                    *_visible_clauses(workspace_id, chunk_ids, filters)
                )
            )
            return {row.chunk_id: ChunkView(**row._mapping) for row in rows}

    def embedding_models(self, workspace_id: int) -> set[str]:
        """The models the visible documents with chunks were embedded with."""
        return self.readiness_facts(workspace_id).embedding_models()

    def languages(self, workspace_id: int) -> list[str]:
        """The languages the workspace's documents were indexed in."""
        with self.engine.connect() as conn:
            return workspace_languages(conn, workspace_id)

    def readiness_facts(self, workspace_id: int) -> ReadinessFacts:
        # The counts readiness is judged from: one set of queries (``readiness_sql``).
        return ReadinessFacts(engine_rows(self.engine), workspace_id)

    def iter_chunks(self, workspace_id: int, batch: int = 512) -> Iterator[list[ChunkReindexRow]]:
        """Every chunk of the workspace's indexed documents, in batches (for reindex)."""
        query = (
            select(
                ChunkRow.id,
                ChunkRow.document_id,
                ChunkRow.title,
                ChunkRow.text,
                ChunkRow.content_hash,
                DocumentRow.doc_type,
                DocumentRow.doc_date,
            )
            .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
            .where(
                DocumentRow.workspace_id == workspace_id,
                DocumentRow.status.in_((VISIBLE_STATUS, "indexing")),
            )
            .order_by(ChunkRow.id)
        )
        with self.engine.connect() as conn:
            result = conn.execute(query)
            while rows := result.fetchmany(batch):
                yield [ChunkReindexRow(*r) for r in rows]

    # -- documents ----------------------------------------------------------------------
    def list_documents(
        self,
        workspace_id: int,
        *,
        status: str | None = None,
        doc_type: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[DocumentRow]:
        query = select(DocumentRow).where(DocumentRow.workspace_id == workspace_id)
        if status:
            query = query.where(DocumentRow.status == status)
        if doc_type:
            query = query.where(DocumentRow.doc_type == doc_type)
        query = query.order_by(DocumentRow.source_id).limit(limit).offset(offset)
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.scalars(query))

    def get_document(self, workspace_id: int, ref: str) -> DocumentRow:
        """A document by numeric id or by canonical source id."""
        where = DocumentRow.id == int(ref) if ref.isdigit() else DocumentRow.source_id == ref
        query = select(DocumentRow).where(DocumentRow.workspace_id == workspace_id, where)
        with Session(self.engine, expire_on_commit=False) as session:
            document = session.scalars(query).first()
        if document is None:
            raise NotFound(f"no document {ref!r} in this workspace")
        return document

    def document_chunks(self, document_id: int) -> list[ChunkRow]:
        query = (
            select(ChunkRow)
            .where(ChunkRow.document_id == document_id)
            .order_by(ChunkRow.chunk_index)
        )
        with Session(self.engine, expire_on_commit=False) as session:
            return list(session.scalars(query))

    def status_counts(self, workspace_id: int) -> dict[str, int]:
        return self.readiness_facts(workspace_id).status_counts()

    def chunk_count(self, workspace_id: int) -> int:
        """Chunks of the documents search sees."""
        return self.readiness_facts(workspace_id).chunk_count()

    # -- refresh runs -------------------------------------------------------------------
    def start_run(self, workspace_id: int, method: str) -> int:
        with self.engine.begin() as conn:
            # A run still marked running was killed: its lock is gone, so it is not live.
            conn.execute(
                update(RefreshRunRow)
                .where(
                    RefreshRunRow.workspace_id == workspace_id, RefreshRunRow.status == "running"
                )
                .values(status="interrupted", finished_at=utcnow())
            )
            result = conn.execute(
                insert(RefreshRunRow)
                .values(
                    workspace_id=workspace_id,
                    method=method,
                    status="running",
                    started_at=utcnow(),
                    files_seen=0,
                    indexed=0,
                    unchanged=0,
                    failed=0,
                    needs_ocr=0,
                    deleted=0,
                )
                .returning(RefreshRunRow.id)
            )
            return int(result.scalar_one())

    def finish_run(self, run_id: int, status: str, **counts: int | str | None) -> None:
        with self.engine.begin() as conn:
            conn.execute(
                update(RefreshRunRow)
                .where(RefreshRunRow.id == run_id)
                .values(status=status, finished_at=utcnow(), **counts)
            )


@dataclass(frozen=True)
class ChunkReindexRow:
    chunk_id: int
    document_id: int
    title: str
    text: str
    content_hash: str
    doc_type: str
    doc_date: datetime


def announce_documents(conn: Connection, document_ids: Sequence[int], name: str) -> None:
    """An event ``name`` per document of a workspace people use (an archive's hidden
    index is not theirs), in ``conn``'s transaction: ids, names, counts, never text."""
    query = (
        select(
            DocumentRow.id,
            DocumentRow.source_id,
            DocumentRow.origin,
            DocumentRow.doc_type,
            DocumentRow.chunk_count,
            DocumentRow.error_code,
            DocumentRow.workspace_id,
            WorkspaceRow.name,
        )
        .join(WorkspaceRow, WorkspaceRow.id == DocumentRow.workspace_id)
        .where(DocumentRow.id.in_(list(document_ids)), WorkspaceRow.kind == WORKSPACE_KIND)
        .order_by(DocumentRow.id)
    )
    rules: dict[str, list[Rule]] = {}
    for row in conn.execute(query).all():
        if row.name not in rules:
            rules[row.name] = rules_of(conn, row.workspace_id)
        # Events leave the server (webhooks, notifications): a source is named only when
        # its policy lets it leave; otherwise only its policy level is said.
        level = level_of(rules[row.name], row.source_id)
        data: dict[str, object] = {
            "document": row.id,
            "source": row.source_id if level == "share" else None,
            "origin": row.origin,
            "type": row.doc_type,
        }
        if level != "share":
            data["sourceWithheld"] = level
        if name == "document.processed":
            data["chunks"] = row.chunk_count
        elif name == "document.failed":
            data["code"] = row.error_code
        actor = _uploader(conn, row.id) if row.origin == "upload" else None
        outbox.emit(conn, name, data, workspace=row.name, actor=actor)


# The upload job's kind (``autorag.ingest.uploads.UPLOAD_JOB``) and who it was for.
_UPLOAD_JOB = "process_upload"


def _uploader(conn: Connection, document_id: int) -> str | None:
    """The user who uploaded a document, as its upload job recorded (``by``)."""
    payload = conn.execute(
        select(JobRow.payload)
        .where(JobRow.document_id == document_id, JobRow.kind == _UPLOAD_JOB)
        .order_by(JobRow.id.desc())
        .limit(1)
    ).scalar()
    try:
        by = json.loads(payload or "{}").get("by")
    except (ValueError, AttributeError):
        return None
    return by if isinstance(by, str) else None


def fulltext_scope(workspace_id: int) -> str:
    return f"ws{workspace_id}"


def workspace_languages(conn: Connection, workspace_id: int) -> list[str]:
    """The languages the workspace's documents were indexed in, in a stable order."""
    rows = conn.execute(
        select(WorkspaceLanguageRow.language)
        .where(WorkspaceLanguageRow.workspace_id == workspace_id)
        .order_by(WorkspaceLanguageRow.language)
    )
    return [row[0] for row in rows]


def _note_language(conn: Connection, workspace_id: int, language: str) -> None:
    # Two writers may note one language at once: the second's insert does nothing.
    statement = dialect_insert(conn, WorkspaceLanguageRow).values(
        workspace_id=workspace_id, language=language
    )
    conn.execute(statement.on_conflict_do_nothing())


def _chunk_values(
    workspace_id: int, document_id: int, title: str, chunk: Chunk
) -> dict[str, object]:
    return {
        "document_id": document_id,
        "scope": fulltext_scope(workspace_id),
        "chunk_index": chunk.index,
        "title": title,
        "text": chunk.text,
        "content_hash": chunk.content_hash,
        "page": chunk.page,
        "paragraph": chunk.paragraph,
        "char_start": chunk.char_start,
    }
