"""Re-embedding into a shadow table: a new model (even of another size) swapped in whole,
with documents that changed meanwhile caught up."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from autorag.errors import Unavailable
from autorag.ingest.pipeline import embedding_text
from autorag.ingest.reembed import reembed_workspace, shadow_table
from autorag.models import Chunk, SearchFilters
from autorag.store.catalog.db import create_catalog_engine, migrate, sqlite_url
from autorag.store.catalog.repository import Catalog, DocumentMeta, StagedDocument, WorkspaceInfo
from autorag.store.vectors.base import VectorRecord, VectorStore
from autorag.store.vectors.lancedb import LanceVectorStore


class FakeEmbedder:
    provider = "fake"

    def __init__(self, model: str, dim: int) -> None:
        self.model = model
        self._dim = dim

    @property
    def model_id(self) -> str:
        return f"fake:{self.model}"

    @property
    def dim(self) -> int:
        return self._dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            seed = int(hashlib.sha256(f"{self.model}{text}".encode()).hexdigest()[:8], 16)
            row = np.random.default_rng(seed).standard_normal(self._dim).astype(np.float32)
            rows.append(row / np.linalg.norm(row))
        return np.stack(rows) if rows else np.zeros((0, self._dim), np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text]).reshape(-1)


NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _index(
    catalog: Catalog, workspace: WorkspaceInfo, store: VectorStore, name: str, texts: list[str]
) -> int:
    chunks = [
        Chunk(i, text, 0, i, None, hashlib.sha256(text.encode()).hexdigest())
        for i, text in enumerate(texts)
    ]
    meta = DocumentMeta(f"/notes/{name}", "txt", name, 1, 1, name, NOW)
    ((document_id, chunk_ids),) = catalog.stage_documents(
        workspace.id, [StagedDocument(meta, chunks)]
    ).values()
    vectors = FakeEmbedder("old", 8).embed(texts)
    store.add(
        [VectorRecord(c, document_id, "txt", NOW, vectors[i]) for i, c in enumerate(chunk_ids)]
    )
    catalog.mark_ready([document_id], "fake:old")
    return document_id


@pytest.fixture
def setup(tmp_path: Path, catalog_url: str | None) -> tuple[Catalog, WorkspaceInfo, Path]:
    engine = create_catalog_engine(catalog_url or sqlite_url(tmp_path / "catalog.db"))
    migrate(engine)
    catalog = Catalog(engine)
    return catalog, catalog.ensure_workspace("default"), tmp_path / "vectors"


def test_reembed_swaps_a_new_model_in_and_catches_up(
    setup: tuple[Catalog, WorkspaceInfo, Path],
) -> None:
    catalog, workspace, directory = setup
    old = LanceVectorStore(directory, workspace.vector_table, 8)
    doomed = _index(catalog, workspace, old, "doomed", ["beta"])
    keep = _index(catalog, workspace, old, "keep", ["alpha one", "alpha two"])
    new_model = FakeEmbedder("new", 16)
    with pytest.raises(Unavailable):  # the live table holds 8-dim vectors
        LanceVectorStore(directory, workspace.vector_table, 16)

    def open_table(name: str, recreate: bool) -> VectorStore:
        return LanceVectorStore(directory, name, 16, recreate=recreate)

    late: list[int] = []

    @contextmanager
    def exclusive() -> Iterator[None]:
        # What happened while the shadow filled: one document removed, one indexed.
        catalog.delete_documents([doomed])
        old.delete_documents([doomed])
        late.append(_index(catalog, workspace, old, "late", ["gamma", "delta", "epsilon"]))
        assert old.count() == 5  # search still runs on the live 8-dim table
        yield

    report = reembed_workspace(catalog, workspace, new_model, open_table, exclusive=exclusive)

    live = LanceVectorStore(directory, workspace.vector_table, 16)
    chunk_ids = {c.id for d in (keep, late[0]) for c in catalog.document_chunks(d)}
    assert live.count() == len(chunk_ids) == 5 and report.chunks == 5
    assert live.document_ids() == {keep, late[0]}
    assert report.documents == 2 and report.caught_up == 2
    query = new_model.embed_query(embedding_text("late", "gamma"))
    best = live.search(query, depth=1, filters=SearchFilters())[0]
    assert best[0] in {c.id for c in catalog.document_chunks(late[0])} and best[1] > 0.99
    assert catalog.embedding_models(workspace.id) == {"fake:new"}
    assert not any(t.endswith("_shadow") for t in live._db.list_tables().tables)
    assert shadow_table(workspace).startswith(workspace.vector_table)


def test_a_failed_reembed_leaves_the_live_table(
    setup: tuple[Catalog, WorkspaceInfo, Path],
) -> None:
    catalog, workspace, directory = setup
    old = LanceVectorStore(directory, workspace.vector_table, 8)
    _index(catalog, workspace, old, "keep", ["alpha"])

    class Broken(FakeEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            raise Unavailable("the embedding server is down")

    def open_table(name: str, recreate: bool) -> VectorStore:
        return LanceVectorStore(directory, name, 8, recreate=recreate)

    with pytest.raises(Unavailable):
        reembed_workspace(catalog, workspace, Broken("new", 8), open_table)
    assert LanceVectorStore(directory, workspace.vector_table, 8).count() == 1
    assert catalog.embedding_models(workspace.id) == {"fake:old"}
