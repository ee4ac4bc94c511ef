"""Full-text in every language (issue 23): each document's language, each chunk's title
and text as analysed terms (stemmed in that language, without diacritics, CJK as
character pairs), and both full-text indexes reading those terms instead of raw text.

SQLite: the FTS5 table of 0001 (porter, English only) is replaced by one over
``chunks.fts_title``/``fts_text`` with a plain tokenizer. PostgreSQL: the vector of 0008
is built from the same columns. Existing chunks are analysed here, once.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from autorag.text.analysis import index_terms
from autorag.text.language import detect_language

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_SQLITE_DROP = [
    "DROP TRIGGER IF EXISTS chunks_fts_ai",
    "DROP TRIGGER IF EXISTS chunks_fts_ad",
    "DROP TRIGGER IF EXISTS chunks_fts_au",
    "DROP TABLE IF EXISTS chunks_fts",
]
# The terms are already lower-case, stemmed and folded: unicode61 only splits them.
_SQLITE_CREATE = [
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(scope, fts_title, fts_text, content='chunks', "
    "content_rowid='id', tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts(rowid, scope, fts_title, fts_text) "
    "VALUES (new.id, new.scope, new.fts_title, new.fts_text); END",
    "CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, scope, fts_title, fts_text) "
    "VALUES ('delete', old.id, old.scope, old.fts_title, old.fts_text); END",
    "CREATE TRIGGER chunks_fts_au AFTER UPDATE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, scope, fts_title, fts_text) "
    "VALUES ('delete', old.id, old.scope, old.fts_title, old.fts_text); "
    "INSERT INTO chunks_fts(rowid, scope, fts_title, fts_text) "
    "VALUES (new.id, new.scope, new.fts_title, new.fts_text); END",
    "INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')",
]
_POSTGRES = [
    "DROP TRIGGER IF EXISTS chunks_tsv_update ON chunks",
    "CREATE OR REPLACE FUNCTION chunks_tsv_trigger() RETURNS trigger LANGUAGE plpgsql AS $$ "
    "BEGIN NEW.tsv := chunks_tsv((SELECT config FROM fulltext_settings WHERE id = 1)"
    "::regconfig, NEW.fts_title, NEW.fts_text); RETURN NEW; END $$",
    "CREATE TRIGGER chunks_tsv_update BEFORE INSERT OR UPDATE OF fts_title, fts_text "
    "ON chunks FOR EACH ROW EXECUTE FUNCTION chunks_tsv_trigger()",
    "UPDATE chunks SET tsv = chunks_tsv("
    "(SELECT config FROM fulltext_settings WHERE id = 1)::regconfig, fts_title, fts_text)",
]
_BATCH = 500  # documents analysed per round trip


def upgrade() -> None:
    bind = op.get_bind()
    sqlite = bind.dialect.name == "sqlite"
    op.add_column("documents", sa.Column("language", sa.String(16)))
    op.add_column("chunks", sa.Column("fts_title", sa.Text, nullable=False, server_default=""))
    op.add_column("chunks", sa.Column("fts_text", sa.Text, nullable=False, server_default=""))
    op.create_table(
        "workspace_languages",
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("language", sa.String(16), primary_key=True),
    )
    if sqlite:
        for statement in _SQLITE_DROP:  # before the backfill: its updates would fire them
            op.execute(statement)
    _analyse_existing(bind)
    for statement in _SQLITE_CREATE if sqlite else _POSTGRES:
        op.execute(statement)


def _analyse_existing(bind: sa.Connection) -> None:
    documents = sa.table(
        "documents", sa.column("id"), sa.column("workspace_id"), sa.column("language")
    )
    chunks = sa.table(
        "chunks",
        sa.column("id"),
        sa.column("document_id"),
        sa.column("chunk_index"),
        sa.column("title"),
        sa.column("text"),
        sa.column("fts_title"),
        sa.column("fts_text"),
    )
    last = 0
    seen: set[tuple[int, str]] = set()
    while True:
        batch = bind.execute(
            sa.select(documents.c.id, documents.c.workspace_id)
            .where(documents.c.id > last)
            .order_by(documents.c.id)
            .limit(_BATCH)
        ).all()
        if not batch:
            break
        last = batch[-1][0]
        for document_id, workspace_id in batch:
            rows = bind.execute(
                sa.select(chunks.c.id, chunks.c.title, chunks.c.text)
                .where(chunks.c.document_id == document_id)
                .order_by(chunks.c.chunk_index)
            ).all()
            if not rows:
                continue
            language = detect_language(" ".join(r[2] for r in rows[:4]))
            title = index_terms(rows[0][1] or "", language)
            bind.execute(
                sa.update(chunks)
                .where(chunks.c.id == sa.bindparam("chunk"))
                .values(fts_title=sa.bindparam("t"), fts_text=sa.bindparam("x")),
                [{"chunk": r[0], "t": title, "x": index_terms(r[2], language)} for r in rows],
            )
            bind.execute(
                sa.update(documents).where(documents.c.id == document_id).values(language=language)
            )
            seen.add((workspace_id, language))
    if seen:
        languages = sa.table(
            "workspace_languages", sa.column("workspace_id"), sa.column("language")
        )
        bind.execute(
            sa.insert(languages), [{"workspace_id": w, "language": lang} for w, lang in seen]
        )


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for statement in _SQLITE_DROP:
            op.execute(statement)
        from importlib import import_module

        initial = import_module("autorag.store.catalog.migrations.versions.0001_initial")
        for statement in initial._SQLITE_FTS:
            op.execute(statement)
        op.execute("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")
    else:
        op.execute("DROP TRIGGER IF EXISTS chunks_tsv_update ON chunks")
        op.execute(
            "CREATE OR REPLACE FUNCTION chunks_tsv_trigger() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN NEW.tsv := chunks_tsv((SELECT config FROM fulltext_settings WHERE "
            "id = 1)::regconfig, NEW.title, NEW.text); RETURN NEW; END $$"
        )
        op.execute(
            "CREATE TRIGGER chunks_tsv_update BEFORE INSERT OR UPDATE OF title, text ON chunks "
            "FOR EACH ROW EXECUTE FUNCTION chunks_tsv_trigger()"
        )
        op.execute(
            "UPDATE chunks SET tsv = chunks_tsv((SELECT config FROM fulltext_settings "
            "WHERE id = 1)::regconfig, title, text)"
        )
    op.drop_table("workspace_languages")
    op.drop_column("chunks", "fts_text")
    op.drop_column("chunks", "fts_title")
    op.drop_column("documents", "language")
