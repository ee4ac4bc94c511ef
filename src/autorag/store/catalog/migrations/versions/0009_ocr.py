"""OCR: jobs over a document's scanned pages and each page's result.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def _cascade(table: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete="CASCADE")


def upgrade() -> None:
    ts = sa.DateTime(timezone=True)
    op.create_table(
        "ocr_jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workspace_id", sa.Integer, _cascade("workspaces"), nullable=False),
        sa.Column("document_id", sa.Integer, _cascade("documents"), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("engine", sa.String(64)),
        sa.Column("pages_total", sa.Integer, nullable=False, server_default="0"),
        sa.Column("pages_done", sa.Integer, nullable=False, server_default="0"),
        sa.Column("quality", sa.Float),
        sa.Column("credibility", sa.Float),
        sa.Column("reason", sa.Text),
        sa.Column("reviewed_by", sa.String(100)),
        sa.Column("reviewed_at", ts),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
    )
    op.create_index("ix_ocr_jobs_workspace_status", "ocr_jobs", ["workspace_id", "status", "id"])
    op.create_index("ix_ocr_jobs_document", "ocr_jobs", ["document_id"])
    op.create_table(
        "ocr_pages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.Integer, _cascade("ocr_jobs"), nullable=False),
        sa.Column("document_id", sa.Integer, _cascade("documents"), nullable=False),
        sa.Column("page", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("engine", sa.String(32)),
        sa.Column("confidence", sa.Float),
        sa.Column("credibility", sa.Float),
        sa.Column("chars", sa.Integer, nullable=False, server_default="0"),
        sa.Column("rotation", sa.Integer, nullable=False, server_default="0"),
        sa.Column("text", sa.Text, nullable=False, server_default=""),
        sa.Column("reason", sa.Text),
        sa.UniqueConstraint("job_id", "page", name="uq_ocr_pages_job_page"),
    )
    op.create_index("ix_ocr_pages_document", "ocr_pages", ["document_id", "page"])


def downgrade() -> None:
    op.drop_table("ocr_pages")
    op.drop_table("ocr_jobs")
