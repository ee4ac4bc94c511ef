"""Re-embed a workspace: rebuild its vectors in a shadow table, then swap it in.

Search keeps using the live table while the shadow fills from the catalog. At the end,
holding the workspace exclusively (no document is being indexed meanwhile), documents
indexed or removed since the start are brought into the shadow, which then replaces
the live table in one step. A re-embed killed before the swap leaves the live table as
it was; its job runs again from the start.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from autorag.embeddings.base import EmbeddingProvider
from autorag.ingest.pipeline import embedding_text
from autorag.store.catalog.models import DocumentRow, utcnow
from autorag.store.catalog.repository import VISIBLE_STATUS, Catalog, WorkspaceInfo
from autorag.store.vectors.base import VectorRecord, VectorStore
from autorag.times import as_utc

REEMBED_JOB = "reembed"
SHADOW_SUFFIX = "_shadow"

# Opens a vector table of the workspace's store by name; True empties it first.
OpenTable = Callable[[str, bool], VectorStore]


@dataclass(frozen=True)
class ReembedReport:
    documents: int
    chunks: int
    caught_up: int  # documents indexed or removed while the shadow was filling


@dataclass(frozen=True)
class _Ready:
    document_id: int
    indexed_at: datetime | None
    doc_type: str
    doc_date: datetime


def shadow_table(workspace: WorkspaceInfo) -> str:
    """``<vector table>_shadow``: no workspace's table ends so (they end in a short id)."""
    return f"{workspace.vector_table}{SHADOW_SUFFIX}"


def reembed_workspace(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    embedder: EmbeddingProvider,
    open_table: OpenTable,
    *,
    exclusive: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> ReembedReport:
    """Rebuild every vector of ``workspace`` with ``embedder``; swap when complete."""
    started = utcnow()
    shadow = open_table(shadow_table(workspace), True)
    try:
        embedded = _fill(catalog, workspace, embedder, shadow)
        with exclusive():
            caught_up = _catch_up(catalog, workspace, embedder, shadow, embedded, started)
            shadow.copy_to(workspace.vector_table)
            catalog.mark_ready(sorted(embedded), embedder.model_id)
            chunks = shadow.count()
        open_table(workspace.vector_table, False).optimize()
    finally:
        shadow.drop()
    return ReembedReport(len(embedded), chunks, caught_up)


def _fill(
    catalog: Catalog, workspace: WorkspaceInfo, embedder: EmbeddingProvider, shadow: VectorStore
) -> set[int]:
    embedded: set[int] = set()
    for batch in catalog.iter_chunks(workspace.id):
        vectors = embedder.embed([embedding_text(c.title, c.text) for c in batch])
        shadow.add(
            [
                VectorRecord(c.chunk_id, c.document_id, c.doc_type, as_utc(c.doc_date), vectors[i])
                for i, c in enumerate(batch)
            ]
        )
        embedded.update(c.document_id for c in batch)
    return embedded


def _catch_up(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    embedder: EmbeddingProvider,
    shadow: VectorStore,
    embedded: set[int],
    started: datetime,
) -> int:
    """Make the shadow hold exactly the ready documents' current chunks."""
    ready = {r.document_id: r for r in _ready_documents(catalog, workspace)}
    gone = [d for d in embedded if d not in ready]
    fresh = [
        r
        for r in ready.values()
        if r.document_id not in embedded
        or (r.indexed_at is not None and as_utc(r.indexed_at) >= started)
    ]
    shadow.delete_documents(gone + [r.document_id for r in fresh])
    embedded.difference_update(gone)
    for document in fresh:
        chunks = catalog.document_chunks(document.document_id)
        if not chunks:
            continue
        vectors = embedder.embed([embedding_text(c.title, c.text) for c in chunks])
        shadow.add(
            [
                VectorRecord(
                    c.id, c.document_id, document.doc_type, as_utc(document.doc_date), vectors[i]
                )
                for i, c in enumerate(chunks)
            ]
        )
        embedded.add(document.document_id)
    return len(gone) + len(fresh)


def _ready_documents(catalog: Catalog, workspace: WorkspaceInfo) -> list[_Ready]:
    query = select(
        DocumentRow.id, DocumentRow.indexed_at, DocumentRow.doc_type, DocumentRow.doc_date
    ).where(
        DocumentRow.workspace_id == workspace.id,
        DocumentRow.status == VISIBLE_STATUS,
        DocumentRow.chunk_count > 0,
    )
    with catalog.engine.connect() as conn:
        return [_Ready(r[0], r[1], r[2], r[3]) for r in conn.execute(query)]
