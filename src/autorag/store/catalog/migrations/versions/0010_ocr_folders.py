"""OCR of files found under search paths: each job names the content it reads and the
file it reads it from; refresh runs count the files left without text apart.

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("ocr_jobs", sa.Column("content_hash", sa.String(64)))
    op.add_column("ocr_jobs", sa.Column("source_path", sa.Text))
    # Jobs so far were over uploads, whose content never changes under their document.
    op.execute(
        "UPDATE ocr_jobs SET content_hash = "
        "(SELECT content_hash FROM documents WHERE documents.id = ocr_jobs.document_id)"
    )
    op.add_column(
        "refresh_runs", sa.Column("needs_ocr", sa.Integer, nullable=False, server_default="0")
    )


def downgrade() -> None:
    op.drop_column("refresh_runs", "needs_ocr")
    op.drop_column("ocr_jobs", "source_path")
    op.drop_column("ocr_jobs", "content_hash")
