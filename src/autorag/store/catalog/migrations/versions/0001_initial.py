"""Initial catalog: workspaces, documents, chunks, refresh runs, SQLite FTS5 index.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The FTS5 index reads chunk text from ``chunks`` (external content) and is kept in step
# by triggers, so it commits in the same transaction as the catalog rows.
_SQLITE_FTS = [
    "CREATE VIRTUAL TABLE chunks_fts USING fts5(scope, title, text, content='chunks', "
    "content_rowid='id', tokenize='porter unicode61 remove_diacritics 2')",
    "CREATE TRIGGER chunks_fts_ai AFTER INSERT ON chunks BEGIN "
    "INSERT INTO chunks_fts(rowid, scope, title, text) "
    "VALUES (new.id, new.scope, new.title, new.text); END",
    "CREATE TRIGGER chunks_fts_ad AFTER DELETE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, scope, title, text) "
    "VALUES ('delete', old.id, old.scope, old.title, old.text); END",
    "CREATE TRIGGER chunks_fts_au AFTER UPDATE ON chunks BEGIN "
    "INSERT INTO chunks_fts(chunks_fts, rowid, scope, title, text) "
    "VALUES ('delete', old.id, old.scope, old.title, old.text); "
    "INSERT INTO chunks_fts(rowid, scope, title, text) "
    "VALUES (new.id, new.scope, new.title, new.text); END",
]


def upgrade() -> None:
    ts = sa.DateTime(timezone=True)
    op.create_table(
        "workspaces",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(200), nullable=False, unique=True),
        sa.Column("short_id", sa.String(16), nullable=False, unique=True),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_table(
        "documents",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("source_id", sa.Text, nullable=False),
        sa.Column("origin", sa.String(16), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("doc_type", sa.String(16), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("mtime_ns", sa.BigInteger, nullable=False),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_code", sa.String(32)),
        sa.Column("error", sa.Text),
        sa.Column("pages", sa.Integer),
        sa.Column("chunk_count", sa.Integer, nullable=False),
        sa.Column("embedding_model", sa.String(200)),
        sa.Column("doc_date", ts, nullable=False),
        sa.Column("indexed_at", ts),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
        sa.UniqueConstraint("workspace_id", "source_id", name="uq_documents_workspace_source"),
    )
    op.create_index("ix_documents_workspace_status", "documents", ["workspace_id", "status"])
    op.create_table(
        "chunks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "document_id",
            sa.Integer,
            sa.ForeignKey("documents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("chunk_index", sa.Integer, nullable=False),
        sa.Column("scope", sa.String(32), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64), nullable=False),
        sa.Column("page", sa.Integer),
        sa.Column("paragraph", sa.Integer, nullable=False),
        sa.Column("char_start", sa.Integer, nullable=False),
    )
    op.create_index("ix_chunks_document", "chunks", ["document_id", "chunk_index"])
    op.create_table(
        "refresh_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("method", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", ts, nullable=False),
        sa.Column("finished_at", ts),
        sa.Column("files_seen", sa.Integer, nullable=False),
        sa.Column("indexed", sa.Integer, nullable=False),
        sa.Column("unchanged", sa.Integer, nullable=False),
        sa.Column("failed", sa.Integer, nullable=False),
        sa.Column("deleted", sa.Integer, nullable=False),
        sa.Column("error", sa.Text),
    )
    if op.get_bind().dialect.name == "sqlite":
        for statement in _SQLITE_FTS:
            op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS chunks_fts")
    op.drop_table("refresh_runs")
    op.drop_table("chunks")
    op.drop_table("documents")
    op.drop_table("workspaces")
