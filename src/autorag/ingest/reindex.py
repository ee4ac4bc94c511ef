"""Rebuild derived data (vectors, full-text) from the catalog, the source of truth."""

from __future__ import annotations

from collections.abc import Callable

from autorag.embeddings.base import EmbeddingProvider
from autorag.ingest.pipeline import embedding_text
from autorag.store.catalog.repository import Catalog, WorkspaceInfo
from autorag.store.fulltext.base import FullTextIndex
from autorag.store.vectors.base import VectorRecord, VectorStore


def reindex(
    catalog: Catalog,
    workspace: WorkspaceInfo,
    fulltext: FullTextIndex,
    open_empty_vectors: Callable[[], VectorStore],
    embedder: EmbeddingProvider,
    *,
    on_batch: Callable[[int], None] | None = None,
) -> int:
    """Re-embed every chunk into a fresh vector table; returns the number of chunks."""
    fulltext.rebuild()
    vectors = open_empty_vectors()
    total = 0
    documents: set[int] = set()
    for batch in catalog.iter_chunks(workspace.id):
        embedded = embedder.embed([embedding_text(c.title, c.text) for c in batch])
        vectors.add(
            [
                VectorRecord(c.chunk_id, c.document_id, c.doc_type, c.doc_date, embedded[i])
                for i, c in enumerate(batch)
            ]
        )
        documents.update(c.document_id for c in batch)
        total += len(batch)
        if on_batch:
            on_batch(len(batch))
    catalog.mark_ready(sorted(documents), embedder.model_id)
    vectors.optimize()
    return total
