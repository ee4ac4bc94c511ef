"""Backups (issue 20): ``backup_jobs`` are the cron schedules (where each job's backups
go and how long they are kept), ``backup_runs`` every backup made or attempted, with its
archive's name, size and checksum and a log for people. At most one run is ``running``
at a time: a unique index on the status of running rows is the database-level mutex
(seed 003), so two processes never back up at once.

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_RUNNING = sa.text("status = 'running'")


def _when(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def upgrade() -> None:
    op.create_table(
        "backup_jobs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("cron", sa.String(200), nullable=False),
        sa.Column("destination", sa.Text, nullable=False),
        sa.Column("retention_days", sa.Integer, nullable=False),
        sa.Column("include_vectors", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        _when("created_at"),
        _when("updated_at"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "backup_runs",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("job_id", sa.Integer, sa.ForeignKey("backup_jobs.id", ondelete="SET NULL")),
        sa.Column("trigger", sa.String(16), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("destination", sa.Text, nullable=False),
        sa.Column("archive", sa.String(300)),
        sa.Column("size_bytes", sa.BigInteger),
        sa.Column("sha256", sa.String(64)),
        _when("started_at"),
        _when("finished_at", nullable=True),
        _when("heartbeat_at"),
        sa.Column("host", sa.String(255), nullable=False, server_default=""),
        sa.Column("pid", sa.Integer),
        sa.Column("error", sa.Text),
        sa.Column("log", sa.Text, nullable=False, server_default=""),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_backup_runs_job", "backup_runs", ["job_id", "started_at"])
    # The mutex: a second running row violates it, in SQLite and PostgreSQL alike.
    op.create_index(
        "uq_backup_runs_running",
        "backup_runs",
        ["status"],
        unique=True,
        sqlite_where=_RUNNING,
        postgresql_where=_RUNNING,
    )


def downgrade() -> None:
    op.drop_index("uq_backup_runs_running", table_name="backup_runs")
    op.drop_index("ix_backup_runs_job", table_name="backup_runs")
    op.drop_table("backup_runs")
    op.drop_table("backup_jobs")
