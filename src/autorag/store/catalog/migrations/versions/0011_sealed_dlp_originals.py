"""DLP originals sealed at rest: the clear ones stored so far are encrypted with the
workspace's key (``.autorag/secrets.key``, never in the database).

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

from alembic import op

from autorag.dlp.store import open_sealed_originals, seal_clear_originals

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    seal_clear_originals(op.get_bind())


def downgrade() -> None:
    open_sealed_originals(op.get_bind())
