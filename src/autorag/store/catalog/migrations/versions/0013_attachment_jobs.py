"""Chat attachments read by a background job: each one's status (processing, ready,
failed) and, when it failed, why. Attachments stored so far were read in their request.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "chat_attachments",
        sa.Column("status", sa.String(16), nullable=False, server_default="ready"),
    )
    op.add_column("chat_attachments", sa.Column("error_code", sa.String(64)))
    op.add_column("chat_attachments", sa.Column("error", sa.Text))


def downgrade() -> None:
    op.drop_column("chat_attachments", "error")
    op.drop_column("chat_attachments", "error_code")
    op.drop_column("chat_attachments", "status")
