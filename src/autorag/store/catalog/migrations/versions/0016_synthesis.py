"""Synthesis (issue 19): runs that read a workspace's documents into an archive in five
passes and propose a change set for a person to approve. ``synth_runs`` keeps each
run's status, progress and pass state (so a run resumes where it stopped),
``synth_sources`` the documents it reads with each pass's result per source,
``synth_items`` the proposed change set, and ``synth_done`` which version of a document
an approved run already read into an archive (a later run skips it while unchanged).

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def _when(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _json(name: str, default: str) -> sa.Column[object]:
    return sa.Column(name, sa.Text, nullable=False, server_default=default)


def _count(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.BigInteger, nullable=False, server_default="0")


def upgrade() -> None:
    op.create_table(
        "synth_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("model", sa.String(300), nullable=False),
        _json("selection", "{}"),
        sa.Column("current_pass", sa.String(32)),
        _json("progress", "{}"),
        _json("state", "{}"),
        _json("skipped", "[]"),
        _count("model_calls"),
        _count("prompt_tokens"),
        _count("completion_tokens"),
        sa.Column("error", sa.Text),
        sa.Column("error_code", sa.String(64)),
        sa.Column("cancel_requested", sa.Boolean, nullable=False, server_default=sa.false()),
        sa.Column("job_id", sa.Integer),
        sa.Column("created_by", sa.String(200), nullable=False, server_default=""),
        _when("created_at"),
        _when("updated_at"),
        _when("finished_at", nullable=True),
        sa.Column("decided_by", sa.String(200)),
        _when("decided_at", nullable=True),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_synth_runs_workspace", "synth_runs", ["workspace_id", "id"])
    op.create_index("ix_synth_runs_archive", "synth_runs", ["archive_id", "status"])
    op.create_table(
        "synth_sources",
        sa.Column(
            "run_id",
            sa.Integer,
            sa.ForeignKey("synth_runs.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("position", sa.Integer, primary_key=True),
        sa.Column(
            "document_id",
            sa.Integer,
            sa.ForeignKey("documents.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("source_id", sa.Text, nullable=False),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        _json("passages", "[]"),
        sa.Column("extraction", sa.Text),
        sa.Column("summary", sa.Text),
    )
    op.create_index("ix_synth_sources_document", "synth_sources", ["document_id"])
    op.create_table(
        "synth_items",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "run_id",
            sa.Integer,
            sa.ForeignKey("synth_runs.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("entity", sa.Text, nullable=False, server_default=""),
        sa.Column("path", sa.String(200), nullable=False),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        sa.Column("body", sa.Text, nullable=False, server_default=""),
        sa.Column("reason", sa.Text, nullable=False, server_default=""),
        _json("sources", "[]"),
        _json("contradiction", "[]"),
        sa.Column("base_version", sa.Integer),
        sa.Column("status", sa.String(16), nullable=False, server_default="pending"),
        sa.Column("applied_version", sa.Integer),
        sa.Column("decided_by", sa.String(200)),
        _when("decided_at", nullable=True),
        sa.UniqueConstraint("run_id", "position", name="uq_synth_items_position"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "synth_done",
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column(
            "document_id",
            sa.Integer,
            sa.ForeignKey("documents.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("content_hash", sa.String(64)),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("synth_runs.id", ondelete="SET NULL")),
        _when("at"),
    )


def downgrade() -> None:
    op.drop_table("synth_done")
    op.drop_table("synth_items")
    op.drop_table("synth_sources")
    op.drop_table("synth_runs")
