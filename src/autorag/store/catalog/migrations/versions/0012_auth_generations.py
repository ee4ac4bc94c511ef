"""Access: each user's login-token generation (bumped by a password or role change and
by a logout, refusing older tokens), and the named scopes of API keys.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "user_sessions",
        sa.Column(
            "user_id",
            sa.Integer,
            sa.ForeignKey("users.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("generation", sa.BigInteger, nullable=False, server_default="0"),
    )
    op.create_table(
        "api_key_scopes",
        sa.Column(
            "key_id",
            sa.Integer,
            sa.ForeignKey("api_keys.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("scope", sa.String(64), primary_key=True),
    )


def downgrade() -> None:
    op.drop_table("api_key_scopes")
    op.drop_table("user_sessions")
