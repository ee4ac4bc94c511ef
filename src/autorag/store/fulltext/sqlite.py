"""Full-text search with SQLite FTS5 (BM25), kept in step with chunks by triggers."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Column,
    Engine,
    Integer,
    MetaData,
    Select,
    Table,
    Text,
    func,
    literal_column,
    select,
)
from sqlalchemy import text as sql_text
from sqlalchemy.sql.elements import ColumnClause

from autorag.models import SearchFilters
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.store.catalog.repository import (
    VISIBLE_STATUS,
    filter_clauses,
    fulltext_scope,
    workspace_languages,
)
from autorag.text.analysis import query_terms

# The FTS5 virtual table created by the catalog migration, described for SQL building.
_FTS = Table(
    "chunks_fts",
    MetaData(),
    Column("rowid", Integer),
    Column("scope", Text),
    Column("fts_title", Text),
    Column("fts_text", Text),
)
_FTS_TABLE: ColumnClause[Any] = literal_column("chunks_fts")


class SqliteFullTextIndex:
    def __init__(self, engine: Engine, *, title_weight: float = 1.0) -> None:
        self.engine = engine
        self.title_weight = title_weight

    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        with self.engine.connect() as conn:
            words = query_terms(query, workspace_languages(conn, workspace_id))
            if not words:
                return []
            # Each term quoted, so FTS5 syntax inside a question is never interpreted; the
            # scope token keeps the match inside this workspace without a join.
            terms = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
            scope = fulltext_scope(workspace_id)
            match = f'scope:"{scope}" AND {{fts_title fts_text}}:({terms})'
            return [
                (row[0], -row[1]) for row in conn.execute(self._statement(match, depth, filters))
            ]

    def _statement(self, match: str, depth: int, filters: SearchFilters) -> Select[Any]:
        rank = func.bm25(_FTS_TABLE, 0.0, self.title_weight, 1.0)
        statement = select(_FTS.c.rowid, rank).where(_FTS_TABLE.op("MATCH")(match))
        if filters.active:
            # Filters need the documents; unfiltered, the catalog backstop checks
            # visibility afterwards, which spares a join per matching chunk.
            statement = (
                statement.join(ChunkRow, ChunkRow.id == _FTS.c.rowid)
                .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
                .where(DocumentRow.status == VISIBLE_STATUS, *filter_clauses(filters))
            )
        # bm25() is lower-is-better: the caller negates it (higher-is-better, as every leg).
        return statement.order_by(rank).limit(depth)

    def rebuild(self) -> None:
        with self.engine.begin() as conn:
            conn.execute(sql_text("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')"))
