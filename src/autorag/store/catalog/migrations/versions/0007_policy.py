"""Source policy: glob rules per workspace and the sources peer queries have seen.

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _workspace() -> sa.ForeignKey:
    return sa.ForeignKey("workspaces.id", ondelete="CASCADE")


def upgrade() -> None:
    ts = sa.DateTime(timezone=True)
    op.create_table(
        "policy_rules",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workspace_id", sa.Integer, _workspace(), nullable=False),
        sa.Column("glob", sa.String(500), nullable=False),
        sa.Column("level", sa.String(16), nullable=False),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
        sa.UniqueConstraint("workspace_id", "glob", name="uq_policy_rules_workspace_glob"),
    )
    op.create_table(
        "policy_seen_sources",
        sa.Column("workspace_id", sa.Integer, _workspace(), primary_key=True),
        sa.Column("source_id", sa.Text, primary_key=True),
        sa.Column("first_seen_at", ts, nullable=False),
        sa.Column("last_seen_at", ts, nullable=False),
        sa.Column("count", sa.Integer, nullable=False, server_default="1"),
    )


def downgrade() -> None:
    op.drop_table("policy_seen_sources")
    op.drop_table("policy_rules")
