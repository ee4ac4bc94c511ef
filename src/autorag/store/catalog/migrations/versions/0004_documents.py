"""Uploads: a workspace keeps one upload per content hash.

Revision ID: 0004
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0002"
branch_labels = None
depends_on = None

_UPLOADS_ONLY = sa.text("origin = 'upload'")


def upgrade() -> None:
    # Partial and unique: two concurrent uploads of the same bytes cannot both insert, and
    # files found under search paths (origin 'file') may repeat content freely.
    op.create_index(
        "uq_documents_upload_hash",
        "documents",
        ["workspace_id", "content_hash"],
        unique=True,
        sqlite_where=_UPLOADS_ONLY,
        postgresql_where=_UPLOADS_ONLY,
    )


def downgrade() -> None:
    op.drop_index("uq_documents_upload_hash", table_name="documents")
