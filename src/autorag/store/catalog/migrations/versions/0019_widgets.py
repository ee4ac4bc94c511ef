"""Widgets (issue 22): ``widgets`` is one embeddable chat widget of a workspace, found by
its unguessable ``public_id`` (the ``data-widget-id`` a site puts on the script tag);
the origins it may be embedded on, its model, greeting, theme colours, rate limits per
visitor and per widget, and an optional fixed ``rag_context``. Visitors' conversations
are not stored: the widget keeps them in the page and sends its last turns.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def _when(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def upgrade() -> None:
    op.create_table(
        "widgets",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("public_id", sa.String(64), nullable=False, unique=True),  # "wgt_…"
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("allowed_origins", sa.Text, nullable=False, server_default="[]"),  # JSON
        sa.Column("model", sa.String(300)),  # None: the workspace's chat model
        sa.Column("greeting", sa.Text, nullable=False, server_default=""),
        sa.Column("theme", sa.Text, nullable=False, server_default="{}"),  # JSON colours
        sa.Column("visitor_per_minute", sa.Integer, nullable=False, server_default="10"),
        sa.Column("widget_per_minute", sa.Integer, nullable=False, server_default="120"),
        sa.Column("rag_context", sa.Text),  # None: answers search the workspace
        sa.Column("created_by", sa.String(200)),  # a username; not a key: users may go
        _when("created_at"),
        _when("updated_at"),
    )
    op.create_index("ix_widgets_workspace", "widgets", ["workspace_id", "name"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_widgets_workspace", table_name="widgets")
    op.drop_table("widgets")
