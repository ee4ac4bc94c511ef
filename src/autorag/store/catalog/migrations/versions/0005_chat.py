"""Chat: chats, messages, token usage, workspace memory, chat attachments, system config.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def _fk(table: str) -> sa.ForeignKey:
    return sa.ForeignKey(f"{table}.id", ondelete="CASCADE")


def upgrade() -> None:
    ts = sa.DateTime(timezone=True)
    op.add_column(
        "users", sa.Column("custom_instructions", sa.Text, nullable=False, server_default="")
    )
    op.create_table(
        "chats",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("workspace_id", sa.Integer, _fk("workspaces"), nullable=False),
        sa.Column("user_id", sa.Integer, _fk("users")),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        sa.Column("model", sa.String(300)),
        sa.Column("created_at", ts, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
    )
    op.create_index("ix_chats_workspace_user", "chats", ["workspace_id", "user_id", "updated_at"])
    op.create_table(
        "messages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, _fk("chats"), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("content", sa.Text, nullable=False, server_default=""),
        sa.Column("citations", sa.Text, nullable=False, server_default="[]"),
        sa.Column("plan", sa.Text),
        sa.Column("model_used", sa.String(300)),
        sa.Column("provider_used", sa.String(100)),
        sa.Column("abort_reason", sa.String(32)),
        sa.Column("prompt_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.Integer, nullable=False, server_default="0"),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_index("ix_messages_chat", "messages", ["chat_id", "id"])
    op.create_table(
        "token_usage",
        sa.Column("workspace_id", sa.Integer, _fk("workspaces"), primary_key=True),
        sa.Column("day", sa.String(10), primary_key=True),
        sa.Column("prompt_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("completion_tokens", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("requests", sa.Integer, nullable=False, server_default="0"),
        sa.Column("errors", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_table(
        "workspace_memory",
        sa.Column("workspace_id", sa.Integer, _fk("workspaces"), primary_key=True),
        sa.Column("key", sa.String(200), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
    )
    op.create_table(
        "chat_attachments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("chat_id", sa.Integer, _fk("chats"), nullable=False),
        sa.Column("name", sa.Text, nullable=False),
        sa.Column("doc_type", sa.String(16), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False, server_default="0"),
        sa.Column("created_at", ts, nullable=False),
    )
    op.create_table(
        "chat_attachment_chunks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("attachment_id", sa.Integer, _fk("chat_attachments"), nullable=False),
        sa.Column("chunk_index", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("page", sa.Integer),
        sa.Column("embedding", sa.LargeBinary, nullable=False),
    )
    op.create_index(
        "ix_attachment_chunks", "chat_attachment_chunks", ["attachment_id", "chunk_index"]
    )
    op.create_table(
        "system_config",
        sa.Column("key", sa.String(100), primary_key=True),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("updated_at", ts, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "system_config",
        "chat_attachment_chunks",
        "chat_attachments",
        "workspace_memory",
        "token_usage",
        "messages",
        "chats",
    ):
        op.drop_table(table)
    op.drop_column("users", "custom_instructions")
