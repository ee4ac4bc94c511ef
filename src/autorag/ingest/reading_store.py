"""The SQL of reading a document (reading.py): its chunks, as plain rows."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.engine import Engine

from autorag.store.catalog.models import ChunkRow


@dataclass(frozen=True)
class Passage:
    """One chunk of a document: its text at its true offset in the document's text."""

    id: int
    index: int
    start: int
    page: int | None
    text: str

    @property
    def end(self) -> int:
        return self.start + len(self.text)


_COLUMNS = (ChunkRow.id, ChunkRow.chunk_index, ChunkRow.char_start, ChunkRow.page, ChunkRow.text)


def passages(engine: Engine, document_id: int) -> list[Passage]:
    """Every chunk of the document, in document order."""
    query = (
        select(*_COLUMNS)
        .where(ChunkRow.document_id == document_id)
        .order_by(ChunkRow.char_start, ChunkRow.chunk_index)
    )
    with engine.connect() as conn:
        return [Passage(*row) for row in conn.execute(query)]


def passages_before(
    engine: Engine, document_id: int, offset: int, *, skip: int, limit: int
) -> list[Passage]:
    """Chunks starting at or before ``offset``, nearest first: ``limit`` of them after
    the first ``skip``."""
    query = (
        select(*_COLUMNS)
        .where(ChunkRow.document_id == document_id, ChunkRow.char_start <= offset)
        .order_by(ChunkRow.char_start.desc(), ChunkRow.chunk_index.desc())
        .offset(skip)
        .limit(limit)
    )
    with engine.connect() as conn:
        return [Passage(*row) for row in conn.execute(query)]
