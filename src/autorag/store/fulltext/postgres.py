"""Full-text search with PostgreSQL: a weighted ``tsvector`` per chunk (migration 0008),
a GIN index, ``websearch_to_tsquery`` to match and a BM25-like rank.

PostgreSQL's own ranks know nothing of how rare a word is: on SciFact, ``ts_rank_cd``
over the OR-query scored nDCG@10 0.42 and ``ts_rank`` 0.58, against FTS5's BM25 0.68.
So each query lexeme's ``ts_rank`` (term frequency, saturating, length-normalized) is
weighted by its BM25 inverse document frequency among the workspace's matching chunks
(0.67 with ``simple``, 0.68 with ``english``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    REAL,
    Connection,
    Engine,
    Float,
    Integer,
    Select,
    Text,
    bindparam,
    cast,
    func,
    literal_column,
    select,
    true,
)
from sqlalchemy import text as sql_text
from sqlalchemy.dialects.postgresql import ARRAY, REGCONFIG, TSQUERY, TSVECTOR

from autorag.errors import InvalidInput
from autorag.models import SearchFilters
from autorag.store.catalog.models import ChunkRow, DocumentRow
from autorag.store.catalog.repository import (
    VISIBLE_STATUS,
    filter_clauses,
    fulltext_scope,
    workspace_languages,
)
from autorag.text.analysis import query_terms

_log = logging.getLogger(__name__)

# The column migration 0008 adds to ``chunks`` (not in the models: SQLite has no such type).
_TSV = literal_column("chunks.tsv", type_=TSVECTOR)
# A copy of the vector (ts_filter keeping every weight): a chunk's vector is stored
# compressed, and each per-lexeme test and rank below would unpack it again (3x slower).
_DETOASTED = func.ts_filter(_TSV, literal_column("""'{a,b,c,d}'::"char"[]"""), type_=TSVECTOR)
_CONFIG = cast(bindparam("config", type_=Text), REGCONFIG)
# ts_rank's normalization 1: divide by 1 + log(length), so long chunks do not win on
# length alone (best of 0, 1, 2 on SciFact).
_LENGTH_NORMALIZATION = 1
# A workspace's chunk count (BM25's N) is counted at most this often: it only scales IDF.
_TOTAL_TTL_S = 60.0


class PostgresFullTextIndex:
    """Opening it makes the catalog's text-search configuration ``config``: if the stored
    vectors were built with another, they are rebuilt first (once, for every process)."""

    def __init__(self, engine: Engine, *, config: str = "simple", title_weight: float = 1.0):
        self.engine = engine
        self.config = config
        self.weights = rank_weights(title_weight)
        self._totals: dict[int, tuple[float, int]] = {}
        self._totals_lock = threading.Lock()
        with engine.begin() as conn:
            _use_config(conn, config)

    def search(
        self, workspace_id: int, query: str, *, depth: int, filters: SearchFilters
    ) -> list[tuple[int, float]]:
        with self.engine.connect() as conn:
            words = query_terms(query, workspace_languages(conn, workspace_id))
            if not words:
                return []
            lexemes = self._lexemes(conn, words)
            if not lexemes:  # only the configuration's stopwords
                return []
            params = {
                "scope": fulltext_scope(workspace_id),
                "config": self.config,
                # Terms are letter and digit runs: joined with ``or`` they mean "any of these".
                "words": " or ".join(words),
                "total": self._total(conn, workspace_id),
                "weights": self.weights,
                "depth": depth,
                **{f"term{i}": _tsquery_term(lexeme) for i, lexeme in enumerate(lexemes)},
            }
            rows = conn.execute(_ranked(len(lexemes), filters), params)
            return [(row[0], float(row[1])) for row in rows]

    def rebuild(self) -> None:
        with self.engine.begin() as conn:
            _rebuild(conn)

    def _lexemes(self, conn: Connection, words: Sequence[str]) -> list[str]:
        """The query's distinct lexemes as the configuration makes them (stemmed, without
        its stopwords): the terms whose rarity weighs the rank."""
        vector = func.to_tsvector(_CONFIG, bindparam("text", type_=Text))
        statement = select(func.unnest(func.tsvector_to_array(vector)))
        rows = conn.execute(statement, {"config": self.config, "text": " ".join(words)})
        return [row[0] for row in rows]

    def _total(self, conn: Connection, workspace_id: int) -> int:
        now = time.monotonic()
        with self._totals_lock:
            cached = self._totals.get(workspace_id)
        if cached is not None and now - cached[0] < _TOTAL_TTL_S:
            return cached[1]
        scope = ChunkRow.scope == fulltext_scope(workspace_id)
        total = int(conn.execute(select(func.count()).where(scope)).scalar_one())
        with self._totals_lock:
            self._totals[workspace_id] = (now, total)
        return total


@lru_cache(maxsize=512)
def _ranked(terms: int, filters: SearchFilters) -> Select[Any]:
    """The search for ``terms`` query lexemes, built once per shape (building it costs
    more than running it); every value but the filters' is bound at execution."""
    # A subquery, so it is parsed once: casting text to regconfig is only STABLE, and in a
    # sequential scan (a common word matches most chunks) it was parsed again per row.
    match = select(
        func.websearch_to_tsquery(_CONFIG, bindparam("words", type_=Text), type_=TSQUERY)
    ).scalar_subquery()
    found = select(ChunkRow.id, _DETOASTED.label("tsv")).where(
        # The scope column keeps the match inside this workspace without a join.
        ChunkRow.scope == bindparam("scope", type_=Text),
        _TSV.bool_op("@@")(match),
    )
    if filters.active:
        # As in SQLite: unfiltered, the catalog backstop checks visibility afterwards.
        found = found.join(DocumentRow, DocumentRow.id == ChunkRow.document_id).where(
            DocumentRow.status == VISIBLE_STATUS, *filter_clauses(filters)
        )
    candidates = found.cte("candidates")  # read twice, so computed once
    lexemes = [cast(bindparam(f"term{i}", type_=Text), TSQUERY) for i in range(terms)]
    frequencies = select(
        *(
            func.count().filter(candidates.c.tsv.bool_op("@@")(lexeme)).label(f"df{i}")
            for i, lexeme in enumerate(lexemes)
        )
    ).subquery("frequencies")
    weights = cast(bindparam("weights", type_=ARRAY(Float)), ARRAY(REAL))
    rank = sum(
        _idf(frequencies.c[f"df{i}"])
        * func.ts_rank(weights, candidates.c.tsv, lexeme, _LENGTH_NORMALIZATION)
        for i, lexeme in enumerate(lexemes)
    )
    return (
        select(candidates.c.id, rank.label("rank"))
        .select_from(candidates)
        .join(frequencies, true())
        .order_by(literal_column("rank").desc(), candidates.c.id)
        .limit(bindparam("depth", type_=Integer))
    )


def _idf(frequency: Any) -> Any:
    """BM25's inverse document frequency (the form that never goes negative)."""
    total = bindparam("total", type_=Integer)
    return func.ln(1.0 + (total - frequency + 0.5) / (frequency + 0.5))


def _tsquery_term(lexeme: str) -> str:
    """A lexeme as a tsquery literal: quoted, so it is taken as is (no parsing, stemming)."""
    escaped = lexeme.replace("\\", "\\\\").replace("'", "''")
    return f"'{escaped}'"


def rank_weights(title_weight: float) -> list[float]:
    """ts_rank's ``{D, C, B, A}`` weights: text is D, the title A. PostgreSQL wants
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
    if _stored_config(conn) == config:
        return
    # Row-locked: of processes opening with a new configuration, one rebuilds.
    stored = _stored_config(conn, lock=True)
    if stored != config:
        _log.warning("rebuilding the full-text index: configuration %s -> %s", stored, config)
        conn.execute(
            sql_text("UPDATE fulltext_settings SET config = :config WHERE id = 1"),
            {"config": config},
        )
        _rebuild(conn)


def _stored_config(conn: Connection, *, lock: bool = False) -> str:
    statement = "SELECT config FROM fulltext_settings WHERE id = 1"
    if lock:
        statement += " FOR UPDATE"
    return str(conn.execute(sql_text(statement)).scalar_one())


def _rebuild(conn: Connection) -> None:
    conn.execute(
        sql_text(
            "UPDATE chunks SET tsv = chunks_tsv("
            "(SELECT config FROM fulltext_settings WHERE id = 1)::regconfig, fts_title, fts_text)"
        )
    )
