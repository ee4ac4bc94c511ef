"""Model connections: Ollama and OpenAI-compatible servers an admin adds at run time
(web UI, API, `autorag models add`) beside those written in autorag.toml. The API key is
kept sealed (``autorag.secretbox``, bound to the connection's name); ``revision`` counts
changes, so a running model router sees that the set changed.

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "model_connections",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(40), nullable=False, unique=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("base_url", sa.String(2000), nullable=False),
        sa.Column("api_key_sealed", sa.Text),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("revision", sa.Integer, nullable=False, server_default="1"),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False, server_default=""),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(200), nullable=False, server_default=""),
    )


def downgrade() -> None:
    op.drop_table("model_connections")
