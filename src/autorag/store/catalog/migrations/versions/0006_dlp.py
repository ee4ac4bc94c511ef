"""DLP: patterns, originals of redacted texts, and the audit trail.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def _fk(table: str, ondelete: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete=ondelete)


def upgrade() -> None:
    ts = sa.DateTime(timezone=True)
    op.create_table(
        "dlp_patterns",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(64), nullable=False, unique=True),
        sa.Column("regex", sa.Text, nullable=False),
        sa.Column("builtin", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
    )
    op.create_table(
        "dlp_originals",
        sa.Column("id", sa.String(32), primary_key=True),
        sa.Column("workspace_id", sa.Integer, _fk("workspaces", "CASCADE")),
        sa.Column("user_id", sa.Integer, _fk("users", "CASCADE")),
        sa.Column("source", sa.String(16), nullable=False),
        sa.Column("ref", sa.String(200)),
        sa.Column("original", sa.Text, nullable=False),
        sa.Column("redacted", sa.Text, nullable=False),
        sa.Column("types", sa.Text, nullable=False, server_default="[]"),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_index("ix_dlp_originals_ref", "dlp_originals", ["ref"])
    op.create_table(
        "audit_events",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("user_id", sa.Integer, _fk("users", "SET NULL")),
        sa.Column("workspace_id", sa.Integer, _fk("workspaces", "SET NULL")),
        sa.Column("source", sa.String(16)),
        sa.Column("details", sa.Text, nullable=False, server_default="{}"),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_index("ix_audit_events_event", "audit_events", ["event", "created_at"])
    op.create_index("ix_audit_events_created", "audit_events", ["created_at"])


def downgrade() -> None:
    for table in ("audit_events", "dlp_originals", "dlp_patterns"):
        op.drop_table(table)
