"""``autorag migrate``: move a workspace from the embedded stores to PostgreSQL.

The catalog is copied table by table (it is the source of truth); the full-text index
follows it (PostgreSQL keeps it in step with the chunks); vectors are rebuilt from the
catalog into the chosen vector store, every embedding served by the cache. Then the copy
is checked: the same row counts, and a sample of searches that find their documents.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from sqlalchemy import Connection, Engine, MetaData, Table, func, inspect, select, text
from sqlalchemy.engine import make_url

from autorag.context import AppContext, open_context
from autorag.errors import Conflict, InvalidInput
from autorag.ingest.reindex import reindex
from autorag.ops.workspaces import list_workspaces
from autorag.retrieval.hybrid import SearchRequest
from autorag.store.catalog.db import create_catalog_engine, migrate
from autorag.store.catalog.models import Base, ChunkRow, DocumentRow

# Features keep their rows in their own store modules; importing them here puts their
# tables in ``Base.metadata``, which is what the copy walks (and ``_unknown_tables``
# refuses a copy that would still leave one out).
from autorag.synth import store as _synth_store  # noqa: F401
from autorag.wiki import store as _wiki_store  # noqa: F401

# Tables of features on ops' own layer or read without their store (backups, events,
# webhooks, push), which ops does not import: copied as the
# migrations made them, read from each database's own schema. Parents first.
REFLECTED_TABLES = (
    "backup_jobs",
    "backup_runs",
    "events",
    "webhooks",
    "webhook_deliveries",
    "push_subscriptions",
    "push_preferences",
    "widgets",
    "mcp_servers",
)
BATCH_ROWS = 1000
SAMPLE_WORDS = 12
Progress = Callable[[str, int], None]  # (what, how many more done)


@dataclass(frozen=True)
class TableCount:
    table: str
    source: int
    target: int

    @property
    def same(self) -> bool:
        return self.source == self.target


@dataclass(frozen=True)
class SampleCheck:
    workspace: str
    query: str  # the first words of a chunk
    document_id: int  # the chunk's document: the search must find it
    found_in_source: bool
    found_in_target: bool


@dataclass
class MigrationReport:
    target: str  # the URL, password hidden
    vector_store: str
    tables: list[TableCount] = field(default_factory=list)
    embedded_chunks: int = 0
    samples: list[SampleCheck] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def counts_match(self) -> bool:
        return all(t.same for t in self.tables)

    @property
    def searches_match(self) -> bool:
        return all(s.found_in_target for s in self.samples if s.found_in_source)

    @property
    def ok(self) -> bool:
        return self.counts_match and self.searches_match


def migrate_to(
    source: AppContext,
    url: str,
    *,
    vector_store: str = "pgvector",
    samples: int = 20,
    progress: Progress | None = None,
) -> MigrationReport:
    """Copy ``source``'s catalog into the empty PostgreSQL database at ``url``, rebuild
    vectors in ``vector_store``, and check the copy."""
    began = time.monotonic()
    target_url = _postgres_url(url)
    report = MigrationReport(
        make_url(target_url).render_as_string(hide_password=True), vector_store
    )
    engine = create_catalog_engine(target_url)
    try:
        migrate(engine)
        _require_empty(engine)
        _require_known_tables(engine)
        _copy_catalog(source.catalog.engine, engine, progress)
    finally:
        engine.dispose()
    target = open_context(source.workspace, database_url=target_url, vector_store=vector_store)
    try:
        report.embedded_chunks = _rebuild_vectors(target, progress)
        report.tables = _counts(source.catalog.engine, target.catalog.engine)
        report.samples = _check_searches(source, target, samples)
    finally:
        target.close()
    report.seconds = time.monotonic() - began
    return report


def _postgres_url(url: str) -> str:
    """psycopg 3 as the driver, whatever the URL names."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "postgresql":
        raise InvalidInput(f"migrate copies to PostgreSQL; {parsed.get_backend_name()!r} is not")
    return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)


def _require_empty(engine: Engine) -> None:
    with engine.connect() as conn:
        documents = conn.execute(select(func.count()).select_from(DocumentRow)).scalar_one()
    if documents:
        raise Conflict(
            f"the target database already holds {documents} documents: migrate into an "
            "empty database"
        )


# Tables the migrations keep for themselves: the schema's version, and PostgreSQL's
# full-text configuration (set on the target by its own store, never copied).
_MIGRATIONS_OWN = {"alembic_version", "fulltext_settings"}


def _require_known_tables(engine: Engine) -> None:
    """Fail closed: a table the migrations made that this process has no rows for
    would silently stay empty in the copy."""
    known = {table.name for table in Base.metadata.sorted_tables} | _MIGRATIONS_OWN
    known |= set(REFLECTED_TABLES)
    unknown = sorted(set(inspect(engine).get_table_names()) - known)
    if unknown:
        raise Conflict(
            "migrate does not know how to copy the tables "
            f"{', '.join(unknown)}; nothing was copied (a build error: report it)",
            code="unknown_tables",
        )


def _copy_catalog(source: Engine, target: Engine, progress: Progress | None) -> None:
    """Every catalog table, parents before children, in batches; then the id sequences
    moved past the copied ids so new rows do not collide with them."""
    pairs = [(table, table) for table in _own_tables()] + _reflected(source, target)
    with target.begin() as conn:
        # Start-up rows the target's migrations made (a workspace, built-in patterns).
        for _read, written in reversed(pairs):
            conn.execute(written.delete())
    for read, written in pairs:
        for batch in _batches(source, read):
            with target.begin() as conn:
                conn.execute(written.insert(), batch)
            if progress:
                progress(f"copying {written.name}", len(batch))
    with target.begin() as conn:
        for _read, written in pairs:
            _advance_sequence(conn, written)


def _own_tables() -> list[Table]:
    """The tables of ``Base.metadata`` this module copies as they are declared (a process
    that loaded the backup store has its tables there too: they are reflected instead)."""
    return [t for t in Base.metadata.sorted_tables if t.name not in REFLECTED_TABLES]


def _reflected(source: Engine, target: Engine) -> list[tuple[Table, Table]]:
    """``REFLECTED_TABLES`` as each database has them: (read from, written to)."""
    read, written = MetaData(), MetaData()
    return [
        (Table(name, read, autoload_with=source), Table(name, written, autoload_with=target))
        for name in REFLECTED_TABLES
    ]


def _batches(engine: Engine, table: Table) -> Iterator[list[dict[str, Any]]]:
    columns = [c for c in table.columns if c.computed is None]
    query = select(*columns).execution_options(yield_per=BATCH_ROWS)
    with engine.connect() as conn:
        for partition in conn.execute(query).mappings().partitions(BATCH_ROWS):
            yield [dict(row) for row in partition]


def _advance_sequence(conn: Connection, table: Table) -> None:
    key = table.columns.get("id")
    if key is None or not key.primary_key or key.type.python_type is not int:
        return
    conn.execute(
        text(
            f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
            f"COALESCE((SELECT MAX(id) FROM {table.name}), 0) + 1, false)"
        )
    )


def _rebuild_vectors(target: AppContext, progress: Progress | None) -> int:
    total = 0
    for summary in list_workspaces(target.catalog, hidden=True):
        scoped = target.for_workspace(summary.info)
        total += reindex(
            scoped.catalog,
            scoped.info,
            scoped.fulltext,
            partial(scoped.open_vectors, recreate=True),
            scoped.embedder,
            on_batch=(lambda n: progress("embedding", n)) if progress else None,
        )
    return total


def _counts(source: Engine, target: Engine) -> list[TableCount]:
    counts = []
    reflected = [read for read, _written in _reflected(source, target)]
    for table in [*_own_tables(), *reflected]:
        query = select(func.count()).select_from(table)
        with source.connect() as a, target.connect() as b:
            counts.append(
                TableCount(table.name, a.execute(query).scalar_one(), b.execute(query).scalar_one())
            )
    return counts


def _check_searches(source: AppContext, target: AppContext, samples: int) -> list[SampleCheck]:
    """Search for the opening words of evenly spread chunks in both copies: each must
    find its own document in the target when it does in the source."""
    checks = []
    for summary in list_workspaces(source.catalog, hidden=True):
        here, there = source.for_workspace(summary.info), target.for_workspace(summary.info)
        for document_id, query in _sample_queries(source.catalog.engine, summary.info.id, samples):
            checks.append(
                SampleCheck(
                    summary.info.name,
                    query,
                    document_id,
                    _finds(here, query, document_id),
                    _finds(there, query, document_id),
                )
            )
    return checks


def _sample_queries(engine: Engine, workspace_id: int, samples: int) -> list[tuple[int, str]]:
    query = (
        select(ChunkRow.document_id, ChunkRow.text)
        .join(DocumentRow, DocumentRow.id == ChunkRow.document_id)
        .where(DocumentRow.workspace_id == workspace_id, DocumentRow.status == "ready")
        .order_by(ChunkRow.id)
    )
    with engine.connect() as conn:
        rows = conn.execute(query).all()
    step = max(1, len(rows) // max(1, samples))
    picked = rows[::step][:samples]
    return [(int(r[0]), " ".join(str(r[1]).split()[:SAMPLE_WORDS])) for r in picked]


def _finds(app: AppContext, query: str, document_id: int) -> bool:
    hits = app.searcher.search(SearchRequest(query, k=10)).hits
    return any(h.document_id == document_id for h in hits)
