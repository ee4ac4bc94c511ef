"""MCP tool servers (issue 22): ``mcp_servers``, a workspace's installed servers — a
stdio command (an argv list as JSON) or an HTTP URL with its headers sealed
(``autorag.secretbox``, bound to the row's id), the tools the server listed and the
allowlist of those the agent may call, and the server's own bound on a call.

Revision ID: 0020
Revises: 0019
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_servers",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("transport", sa.String(16), nullable=False),  # stdio | http
        sa.Column("command", sa.Text, nullable=False, server_default="[]"),  # JSON argv
        sa.Column("url", sa.Text),
        sa.Column("header_names", sa.Text, nullable=False, server_default="[]"),
        sa.Column("headers_sealed", sa.Text),  # autorag.secretbox
        sa.Column("tools", sa.Text, nullable=False, server_default="[]"),  # JSON
        sa.Column("allowed", sa.Text, nullable=False, server_default="[]"),  # JSON names
        sa.Column("timeout_s", sa.Float),  # a call's bound once up; NULL: the skill timeout
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("workspace_id", "name", name="uq_mcp_servers_workspace_name"),
    )


def downgrade() -> None:
    op.drop_table("mcp_servers")
