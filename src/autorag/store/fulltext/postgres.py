"""Full-text search with PostgreSQL: a weighted ``tsvector`` per chunk (migration 0008),
a GIN index, ``websearch_to_tsquery`` and ``ts_rank_cd``."""

from __future__ import annotations

import logging

from sqlalchemy import (
    REAL,
    Connection,
    Engine,
    Float,
    cast,
    func,
    literal,
    literal_column,
    select,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSQUERY, TSVECTOR

from autorag.errors import InvalidInput
from autorag.models import SearchFilters
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.store.catalog.repository import VISIBLE_STATUS, filter_clauses, fulltext_scope
from autorag.store.fulltext.query import keywords

_log = logging.getLogger(__name__)

# The column migration 0008 adds to ``chunks`` (not in the models: SQLite has no such type).
_TSV = literal_column("chunks.tsv", type_=TSVECTOR)
# ts_rank_cd's normalization 1: divide by 1 + log(length), so long chunks do not win on
# length alone (FTS5's BM25 normalizes for length too).
_LENGTH_NORMALIZATION = 1


class PostgresFullTextIndex:
    """Opening it makes the catalog's text-search configuration ``config``: if the stored
    vectors were built with another, they are rebuilt first (once, for every process)."""

    def __init__(self, engine: Engine, *, config: str = "simple", title_weight: float = 1.0):
        self.engine = engine
        self.config = config
        self.weights = rank_weights(title_weight)
        with engine.begin() as conn:
            _use_config(conn, config)

    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        words = keywords(query)
        if not words:
            return []
        # Keywords are \w+ runs, so joined with ``or`` they can only mean "any of these";
        # the configuration still stems them and drops its own stopwords.
        tsquery = func.websearch_to_tsquery(
            cast(literal(self.config), REGCONFIG), " or ".join(words), type_=TSQUERY
        )
        weights = cast(literal(self.weights, ARRAY(Float)), ARRAY(REAL))
        rank = func.ts_rank_cd(weights, _TSV, tsquery, _LENGTH_NORMALIZATION)
        statement = select(ChunkRow.id, rank)
        # The scope column keeps the match inside this workspace without a join.
        statement = statement.where(
            ChunkRow.scope == fulltext_scope(workspace_id), _TSV.bool_op("@@")(tsquery)
        )
        if filters.active:
            # As in SQLite: unfiltered, the catalog backstop checks visibility afterwards.
            statement = statement.join(DocumentRow, DocumentRow.id == ChunkRow.document_id).where(
                DocumentRow.status == VISIBLE_STATUS, *filter_clauses(filters)
            )
        statement = statement.order_by(rank.desc(), ChunkRow.id).limit(depth)
        with self.engine.connect() as conn:
            return [(row[0], float(row[1])) for row in conn.execute(statement)]

    def rebuild(self) -> None:
        with self.engine.begin() as conn:
            _rebuild(conn)


def rank_weights(title_weight: float) -> list[float]:
    """ts_rank_cd's ``{D, C, B, A}`` weights: text is D, the title A. PostgreSQL wants
    each in [0, 1], and only their ratio matters for the order."""
    if title_weight <= 1.0:
        return [1.0, 0.0, 0.0, title_weight]
    return [1.0 / title_weight, 0.0, 0.0, 1.0]


def _use_config(conn: Connection, config: str) -> None:
    known = conn.execute(sql_text("SELECT cfgname FROM pg_ts_config ORDER BY cfgname"))
    names = [row[0] for row in known]
    if config not in names:
        raise InvalidInput(
            f"unknown text-search configuration {config!r} (search.fts_config; "
            f"this server has: {', '.join(names)})"
        )
    # Row-locked: of processes opening with a new configuration, one rebuilds.
    stored = conn.execute(
        sql_text("SELECT config FROM fulltext_settings WHERE id = 1 FOR UPDATE")
    ).scalar_one()
    if stored != config:
        _log.warning("rebuilding the full-text index: configuration %s -> %s", stored, config)
        conn.execute(
            sql_text("UPDATE fulltext_settings SET config = :config WHERE id = 1"),
            {"config": config},
        )
        _rebuild(conn)


def _rebuild(conn: Connection) -> None:
    conn.execute(
        sql_text(
            "UPDATE chunks SET tsv = chunks_tsv("
            "(SELECT config FROM fulltext_settings WHERE id = 1)::regconfig, title, text)"
        )
    )
