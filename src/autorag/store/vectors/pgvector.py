"""Vectors in PostgreSQL with pgvector: one table per workspace, in the catalog database.

A table per workspace rather than one shared table with a workspace column: a search
then walks an HNSW graph that holds only its workspace's vectors, so "k=10 in
workspace W" is a plain ANN query however many rows the other workspaces hold. In one
shared graph the same query has to step past every other workspace's neighbours
(pgvector's iterative scan), and gets slower the more workspaces share it. A table per
workspace also lets a re-embed with a model of another dimension fill a shadow table
beside the live one, and keeps LanceDB's table names.

Filters on document type and date are SQL predicates on payload columns, applied
inside the index scan (``hnsw.iterative_scan`` keeps scanning until k rows pass).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy import Connection, Engine, text
from sqlalchemy.exc import DBAPIError

from autorag.config import VectorSettings
from autorag.errors import InvalidInput, Unavailable
from autorag.models import SearchFilters
from autorag.store.vectors.base import VectorRecord, check_dimensions
from autorag.times import as_utc

# pgvector's first release with iterative index scans (filtered ANN that still returns k).
ITERATIVE_SCAN_VERSION = (0, 8)
NO_EXTENSION = (
    "the PostgreSQL server has no pgvector extension (vector_store = 'pgvector' needs it): "
    "install pgvector on the database server (often packaged as "
    "postgresql-<version>-pgvector), or choose vector_store = 'lancedb' or 'qdrant'"
)
MAX_EF_SEARCH = 1000  # the largest hnsw.ef_search pgvector accepts
# Rows per INSERT round; psycopg pipelines the statements of one batch.
WRITE_BATCH = 1000


class PgVectorStore:
    def __init__(
        self,
        engine: Engine,
        table_name: str,
        dim: int,
        *,
        settings: VectorSettings,
        recreate: bool = False,
    ) -> None:
        if engine.dialect.name != "postgresql":
            raise InvalidInput(
                "vector_store 'pgvector' keeps vectors in the catalog database: "
                "set database_url to a PostgreSQL server (postgresql://…)"
            )
        self._engine = engine
        self._settings = settings
        self.dim = dim
        self.table_name = table_name
        self._table = _qualified(settings.pgvector_schema, table_name)
        self._iterative = False  # pgvector >= 0.8: filtered scans continue until k rows
        try:
            with engine.begin() as conn:
                stored = self._prepare(conn, recreate)
        except DBAPIError as exc:
            raise Unavailable(f"vector table {table_name} unavailable: {_reason(exc)}") from exc
        if stored is not None and stored != dim:
            raise Unavailable(
                f"vector table {table_name} holds {stored}-dim vectors but the embedding "
                f"model makes {dim}-dim ones: run `autorag reindex`"
            )

    @property
    def schema(self) -> str:
        return self._settings.pgvector_schema

    @property
    def qualified_table(self) -> str:
        """``"schema"."table"``, quoted (for bulk loads with COPY)."""
        return self._table

    def _prepare(self, conn: Connection, recreate: bool) -> int | None:
        """Extension, schema and table; returns the dimension of an existing table."""
        _ddl_lock(conn)
        self._iterative = _ensure_extension(conn) >= ITERATIVE_SCAN_VERSION
        conn.execute(text(f"CREATE SCHEMA IF NOT EXISTS {_quote(self._settings.pgvector_schema)}"))
        if recreate:
            conn.execute(text(f"DROP TABLE IF EXISTS {self._table}"))
        stored = _stored_dim(conn, self._settings.pgvector_schema, self.table_name)
        if stored is None:
            _create_table(conn, self._table, self.dim)
            # Built empty, then kept up row by row: a new table is searchable at once.
            self._create_indexes(conn, self._table)
        return stored

    def add(self, records: Sequence[VectorRecord]) -> None:
        """Upsert by chunk id (a re-added chunk replaces its row)."""
        check_dimensions(records, self.dim)
        statement = text(
            f"INSERT INTO {self._table} (chunk_id, document_id, doc_type, doc_date, embedding) "
            "VALUES (:chunk_id, :document_id, :doc_type, :doc_date, CAST(:embedding AS vector)) "
            "ON CONFLICT (chunk_id) DO UPDATE SET document_id = EXCLUDED.document_id, "
            "doc_type = EXCLUDED.doc_type, doc_date = EXCLUDED.doc_date, "
            "embedding = EXCLUDED.embedding"
        )
        with self._engine.begin() as conn:
            for start in range(0, len(records), WRITE_BATCH):
                rows = [_row(r) for r in records[start : start + WRITE_BATCH]]
                conn.execute(statement, rows)

    def delete_documents(self, document_ids: Sequence[int]) -> None:
        if not document_ids:
            return
        with self._engine.begin() as conn:
            conn.execute(
                text(f"DELETE FROM {self._table} WHERE document_id = ANY(:ids)"),
                {"ids": [int(d) for d in document_ids]},
            )

    def search(
        self, vector: npt.NDArray[np.float32], *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        where, params = _where(filters)
        statement = text(
            f"SELECT chunk_id, embedding <=> CAST(:query AS vector) AS distance "
            f"FROM {self._table}{where} ORDER BY distance LIMIT :depth"
        )
        params |= {"query": _literal(vector), "depth": depth}
        with self._engine.begin() as conn:  # a transaction: the settings below are LOCAL
            self._tune_scan(conn, depth)
            rows = conn.execute(statement, params).all()
        # A relaxed-order scan may leave near-ties out of order: order them here.
        hits = [(int(chunk_id), 1.0 - float(distance)) for chunk_id, distance in rows]
        return sorted(hits, key=lambda hit: (-hit[1], hit[0]))

    def _tune_scan(self, conn: Connection, depth: int) -> None:
        # HNSW yields at most ef_search rows: at least the depth asked for, within
        # pgvector's limit (past it, the iterative scan supplies the rest).
        ef_search = str(min(max(self._settings.pgvector_ef_search, depth), MAX_EF_SEARCH))
        settings = "set_config('hnsw.ef_search', :ef_search, true)"
        if self._iterative:
            settings += ", set_config('hnsw.iterative_scan', 'relaxed_order', true)"
        conn.execute(text(f"SELECT {settings}"), {"ef_search": ef_search})

    def count(self) -> int:
        with self._engine.connect() as conn:
            return int(conn.execute(text(f"SELECT count(*) FROM {self._table}")).scalar_one())

    def document_ids(self) -> set[int]:
        with self._engine.connect() as conn:
            rows = conn.execute(text(f"SELECT DISTINCT document_id FROM {self._table}"))
            return {int(row[0]) for row in rows}

    def optimize(self) -> None:
        """Build the HNSW index if it is missing (dropped for a bulk load: one build after
        the load is much faster than keeping it up row by row), then refresh statistics
        so the planner picks the index or, for a filter few rows pass, an exact scan of
        those rows. Autovacuum does the compaction."""
        with self._engine.begin() as conn:
            if not _has_hnsw_index(conn, self._table):
                self._create_hnsw_index(conn, self._table)
            conn.execute(text(f"ANALYZE {self._table}"))

    def drop(self) -> None:
        with self._engine.begin() as conn:
            conn.execute(text(f"DROP TABLE IF EXISTS {self._table}"))

    def copy_to(self, table: str) -> None:
        """Fill a new table, index it in bulk, then swap it for ``table`` in one commit.

        DDL is transactional in PostgreSQL: readers of ``table`` wait for the commit (a
        moment: the copy and the index build happen before the old table is dropped)
        and then read the new one.
        """
        schema = self._settings.pgvector_schema
        staging = _qualified(schema, f"copy_{uuid.uuid4().hex[:16]}")
        with self._engine.begin() as conn:
            _ddl_lock(conn)
            _create_table(conn, staging, self.dim)
            conn.execute(text(f"INSERT INTO {staging} SELECT * FROM {self._table}"))
            self._create_indexes(conn, staging)
            conn.execute(text(f"DROP TABLE IF EXISTS {_qualified(schema, table)}"))
            conn.execute(text(f"ALTER TABLE {staging} RENAME TO {_quote(table)}"))

    def _create_indexes(self, conn: Connection, table: str) -> None:
        # Index names are left to PostgreSQL: they stay unique across renames.
        self._create_hnsw_index(conn, table)
        for column in ("document_id", "doc_type", "doc_date"):
            conn.execute(text(f"CREATE INDEX ON {table} ({column})"))

    def _create_hnsw_index(self, conn: Connection, table: str) -> None:
        settings = self._settings
        # The build is fast only while the graph fits in maintenance_work_mem.
        conn.execute(
            text("SELECT set_config('maintenance_work_mem', :memory, true)"),
            {"memory": f"{settings.pgvector_build_memory_mb}MB"},
        )
        conn.execute(
            text(
                f"CREATE INDEX ON {table} USING hnsw (embedding vector_cosine_ops) "
                f"WITH (m = {settings.pgvector_hnsw_m}, "
                f"ef_construction = {settings.pgvector_hnsw_ef_construction})"
            )
        )


def _create_table(conn: Connection, table: str, dim: int) -> None:
    conn.execute(
        text(
            f"CREATE TABLE {table} (chunk_id bigint PRIMARY KEY, document_id bigint NOT NULL, "
            f"doc_type text NOT NULL, doc_date timestamptz NOT NULL, "
            f"embedding vector({int(dim)}) NOT NULL)"
        )
    )


def _ddl_lock(conn: Connection) -> None:
    """Serialize this module's DDL across processes (concurrent CREATEs collide)."""
    conn.execute(text("SELECT pg_advisory_xact_lock(hashtext('autorag.vectors.pgvector'))"))


def _has_hnsw_index(conn: Connection, table: str) -> bool:
    found = conn.execute(
        text(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "JOIN pg_am a ON a.oid = c.relam "
            "WHERE i.indrelid = CAST(:table AS regclass) AND a.amname = 'hnsw'"
        ),
        {"table": table},
    ).scalar()
    return found is not None


def _ensure_extension(conn: Connection) -> tuple[int, ...]:
    """Create the extension if it is available; return its version."""
    version = _extension_version(conn)
    if version is not None:
        return version
    available = conn.execute(
        text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
    ).scalar()
    if not available:
        raise Unavailable(NO_EXTENSION)
    try:
        with conn.begin_nested():
            conn.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except DBAPIError as exc:  # usually: this role may not create extensions
        raise Unavailable(
            f"could not create the pgvector extension ({_reason(exc)}): have a database "
            "owner or superuser run `CREATE EXTENSION vector` in this database"
        ) from exc
    return _extension_version(conn) or (0,)


def _extension_version(conn: Connection) -> tuple[int, ...] | None:
    found = conn.execute(
        text("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    ).scalar()
    if found is None:
        return None
    return tuple(int(part) for part in str(found).split(".") if part.isdigit())


def _stored_dim(conn: Connection, schema: str, table: str) -> int | None:
    """The table's vector dimension (pgvector keeps it as the type modifier)."""
    found = conn.execute(
        text(
            "SELECT a.atttypmod FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = :schema AND c.relname = :table AND a.attname = 'embedding'"
        ),
        {"schema": schema, "table": table},
    ).scalar()
    return None if found is None else int(found)


def _where(filters: SearchFilters) -> tuple[str, dict[str, Any]]:
    parts: list[str] = []
    params: dict[str, Any] = {}
    if filters.document_types:
        parts.append("doc_type = ANY(:types)")
        params["types"] = list(filters.document_types)
    if filters.date_from is not None:
        parts.append("doc_date >= :date_from")
        params["date_from"] = as_utc(filters.date_from)
    if filters.date_to is not None:
        parts.append("doc_date < :date_to")
        params["date_to"] = as_utc(filters.date_to)
    return (" WHERE " + " AND ".join(parts) if parts else ""), params


def _row(record: VectorRecord) -> dict[str, Any]:
    return {
        "chunk_id": record.chunk_id,
        "document_id": record.document_id,
        "doc_type": record.doc_type,
        "doc_date": as_utc(record.doc_date),
        "embedding": _literal(record.vector),
    }


def _literal(vector: npt.NDArray[np.float32]) -> str:
    """pgvector's text form, ``[0.1,0.2,…]``."""
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def _qualified(schema: str, table: str) -> str:
    return f"{_quote(schema)}.{_quote(table)}"


def _reason(exc: DBAPIError) -> str:
    cause = exc.orig if exc.orig is not None else exc
    return " ".join(str(cause).split())
