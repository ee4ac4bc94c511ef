"""Archives (issue 18): a workspace's markdown wiki. Pages addressed by a path slug, every
saved version kept, ``[[wikilinks]]`` parsed into a links table (resolved or dangling),
old paths and titles kept as aliases, the workspace's own page templates, and files
attached to an archive. ``workspaces.kind`` tells people's workspaces from the hidden
rows (``archive:<id>``, kind ``archive``) that hold an archive's search index.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def _when(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=False)


def _who(name: str) -> sa.Column[object]:
    return sa.Column(name, sa.String(200), nullable=False, server_default="")


def upgrade() -> None:
    op.add_column(
        "workspaces",
        sa.Column("kind", sa.String(16), nullable=False, server_default="workspace"),
    )
    op.create_table(
        "archives",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        sa.Column("description", sa.Text, nullable=False, server_default=""),
        sa.Column("config", sa.Text, nullable=False, server_default="{}"),
        _when("created_at"),
        _when("updated_at"),
        _who("created_by"),
        sa.UniqueConstraint("workspace_id", "name", name="uq_archives_workspace_name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "archive_pages",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("path", sa.String(200), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("title_key", sa.String(300), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("front_matter", sa.Text, nullable=False, server_default="{}"),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("document_id", sa.Integer),
        sa.Column("indexed_version", sa.Integer, nullable=False, server_default="0"),
        _when("created_at"),
        _who("created_by"),
        _when("updated_at"),
        _who("updated_by"),
        sa.UniqueConstraint("archive_id", "path", name="uq_archive_pages_path"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_archive_pages_title", "archive_pages", ["archive_id", "title_key"])
    op.create_table(
        "archive_page_versions",
        sa.Column(
            "page_id",
            sa.Integer,
            sa.ForeignKey("archive_pages.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("version", sa.Integer, primary_key=True),
        sa.Column("path", sa.String(200), nullable=False),
        sa.Column("title", sa.Text, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("front_matter", sa.Text, nullable=False, server_default="{}"),
        _when("saved_at"),
        _who("saved_by"),
        sa.Column("note", sa.Text, nullable=False, server_default=""),
    )
    op.create_table(
        "archive_links",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column(
            "source_page_id",
            sa.Integer,
            sa.ForeignKey("archive_pages.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("target", sa.String(300), nullable=False),
        sa.Column("target_key", sa.String(300), nullable=False),
        sa.Column("target_slug", sa.String(200)),
        sa.Column(
            "target_page_id", sa.Integer, sa.ForeignKey("archive_pages.id", ondelete="SET NULL")
        ),
        sa.Column("label", sa.Text),
        sa.Column("heading", sa.Text),
        sa.Column("context", sa.Text, nullable=False, server_default=""),
    )
    op.create_index("ix_archive_links_source", "archive_links", ["source_page_id", "position"])
    op.create_index("ix_archive_links_target", "archive_links", ["target_page_id"])
    op.create_index("ix_archive_links_key", "archive_links", ["archive_id", "target_key"])
    op.create_index("ix_archive_links_slug", "archive_links", ["archive_id", "target_slug"])
    op.create_table(
        "archive_aliases",
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        sa.Column("kind", sa.String(8), primary_key=True),
        sa.Column("key", sa.String(300), primary_key=True),
        sa.Column(
            "page_id",
            sa.Integer,
            sa.ForeignKey("archive_pages.id", ondelete="CASCADE"),
            nullable=False,
        ),
        _when("created_at"),
    )
    op.create_index("ix_archive_aliases_page", "archive_aliases", ["page_id"])
    op.create_table(
        "archive_templates",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "workspace_id",
            sa.Integer,
            sa.ForeignKey("workspaces.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(63), nullable=False),
        sa.Column("title", sa.Text, nullable=False, server_default=""),
        sa.Column("body", sa.Text, nullable=False),
        _when("created_at"),
        _who("created_by"),
        sa.UniqueConstraint("workspace_id", "name", name="uq_archive_templates_name"),
    )
    op.create_table(
        "archive_attachments",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column(
            "archive_id",
            sa.Integer,
            sa.ForeignKey("archives.id", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("media_type", sa.String(100), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("sha256", sa.String(64), nullable=False),
        sa.Column("data", sa.LargeBinary, nullable=False),
        _when("created_at"),
        _who("created_by"),
        sa.UniqueConstraint("archive_id", "name", name="uq_archive_attachments_name"),
    )


def downgrade() -> None:
    op.drop_table("archive_attachments")
    op.drop_table("archive_templates")
    op.drop_table("archive_aliases")
    op.drop_table("archive_links")
    op.drop_table("archive_page_versions")
    op.drop_table("archive_pages")
    op.drop_table("archives")
    op.drop_column("workspaces", "kind")
