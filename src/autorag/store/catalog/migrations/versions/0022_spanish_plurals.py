"""Spanish full-text terms re-analysed: the plural -s of short words (issue 23).

The analyser now stems "días" as "día" (``autorag.text.analysis._SpanishStemmer``). A
query is analysed by the code that runs it, so the terms stored for Spanish chunks must
be made by the same code, or "días" asked would no longer find "días" indexed. Only
documents detected as Spanish are touched; the full-text indexes follow through their
triggers (FTS5's update trigger, PostgreSQL's ``tsv`` trigger).

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from autorag.text.analysis import index_terms

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

LANGUAGE = "es"
_BATCH = 500  # chunks analysed per round trip


def upgrade() -> None:
    bind = op.get_bind()
    documents = sa.table("documents", sa.column("id"), sa.column("language"))
    chunks = sa.table(
        "chunks", sa.column("id"), sa.column("document_id"), sa.column("title"),
        sa.column("text"), sa.column("fts_title"), sa.column("fts_text"),
    )  # fmt: skip
    spanish = sa.select(documents.c.id).where(documents.c.language == LANGUAGE)
    last = 0
    while True:
        rows = bind.execute(
            sa.select(chunks.c.id, chunks.c.title, chunks.c.text)
            .where(chunks.c.id > last, chunks.c.document_id.in_(spanish))
            .order_by(chunks.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        last = rows[-1][0]
        bind.execute(
            sa.update(chunks)
            .where(chunks.c.id == sa.bindparam("chunk"))
            .values(fts_title=sa.bindparam("t"), fts_text=sa.bindparam("x")),
            [
                {"chunk": r[0], "t": index_terms(r[1] or "", LANGUAGE),
                 "x": index_terms(r[2], LANGUAGE)}
                for r in rows
            ],
        )  # fmt: skip


def downgrade() -> None:
    """Nothing to undo: the terms stay as the analyser of this version makes them."""
