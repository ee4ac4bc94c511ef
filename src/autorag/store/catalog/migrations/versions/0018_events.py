"""Events (issue 21): ``events`` is the outbox, one row per domain event written in the
transaction of the change it describes, dispatched after commit (``dispatched_at``; a
dispatcher claims a batch with ``claimed_by``/``claimed_until``, so one process of many
delivers each); ``webhooks`` and their ``webhook_deliveries`` (every attempt, for the
delivery log); ``push_subscriptions`` (a browser's Web Push endpoint and keys, per user)
and ``push_preferences`` (which events notify a user).

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_UNDISPATCHED = sa.text("dispatched_at IS NULL")


def _when(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _user(*, nullable: bool) -> sa.Column[object]:
    return sa.Column(
        "user_id", sa.Integer, sa.ForeignKey("users.id", ondelete="CASCADE"), nullable=nullable
    )


def upgrade() -> None:
    op.create_table(
        "events",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column("name", sa.String(64), nullable=False),  # "document.processed"
        _when("occurred_at"),
        # Names, not foreign keys: an event outlives what it is about (user.deleted).
        sa.Column("workspace", sa.String(200)),
        sa.Column("actor", sa.String(200)),  # the username, or "system", "peer:<name>"
        sa.Column("data", sa.Text, nullable=False, server_default="{}"),  # JSON object
        _when("dispatched_at", nullable=True),
        sa.Column("claimed_by", sa.String(200)),  # "<host>:<pid>:<thread>"
        _when("claimed_until", nullable=True),
        sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    )
    op.create_index("ix_events_occurred_at", "events", ["occurred_at"])
    op.create_index("ix_events_name", "events", ["name"])
    op.create_index(
        "ix_events_undispatched",
        "events",
        ["id"],
        sqlite_where=_UNDISPATCHED,
        postgresql_where=_UNDISPATCHED,
    )
    op.create_table(
        "webhooks",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(100), nullable=False, unique=True),
        sa.Column("url", sa.Text, nullable=False),
        sa.Column("events", sa.Text, nullable=False, server_default="[]"),  # JSON; [] = all
        sa.Column("secret_sealed", sa.Text, nullable=False),  # autorag.secretbox
        sa.Column("enabled", sa.Boolean, nullable=False, server_default=sa.true()),
        sa.Column("disabled_reason", sa.Text),
        sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0"),
        _when("created_at"),
        _when("updated_at"),
    )
    op.create_table(
        "webhook_deliveries",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True),
        sa.Column(
            "webhook_id",
            sa.Integer,
            sa.ForeignKey("webhooks.id", ondelete="CASCADE"),
            nullable=False,
        ),
        # Not a foreign key: test events have none, and old events may be pruned first.
        sa.Column("event_id", sa.BigInteger),
        sa.Column("event_name", sa.String(64), nullable=False),
        sa.Column("delivery_id", sa.String(64), nullable=False),  # X-Webhook-Id, per event
        sa.Column("attempt", sa.Integer, nullable=False),  # 1 … 4
        sa.Column("status", sa.String(16), nullable=False),  # delivered | failed | refused
        sa.Column("response_code", sa.Integer),
        sa.Column("latency_ms", sa.Integer),
        sa.Column("error", sa.Text),
        _when("attempted_at"),
    )
    op.create_index(
        "ix_webhook_deliveries_webhook", "webhook_deliveries", ["webhook_id", "attempted_at"]
    )
    op.create_table(
        "push_subscriptions",
        sa.Column("id", sa.Integer, primary_key=True),
        _user(nullable=False),
        sa.Column("endpoint", sa.Text, nullable=False),
        sa.Column("p256dh", sa.Text, nullable=False),  # the browser's public key (base64url)
        sa.Column("auth", sa.Text, nullable=False),  # its auth secret (base64url)
        sa.Column("user_agent", sa.String(300)),
        _when("created_at"),
        _when("last_success_at", nullable=True),
    )
    op.create_index(
        "uq_push_subscriptions_endpoint", "push_subscriptions", ["endpoint"], unique=True
    )
    op.create_table(
        "push_preferences",
        _user(nullable=False),
        sa.Column("event", sa.String(64), nullable=False),  # a topic a user may follow
        sa.Column("enabled", sa.Boolean, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "event"),
    )


def downgrade() -> None:
    op.drop_table("push_preferences")
    op.drop_index("uq_push_subscriptions_endpoint", table_name="push_subscriptions")
    op.drop_table("push_subscriptions")
    op.drop_index("ix_webhook_deliveries_webhook", table_name="webhook_deliveries")
    op.drop_table("webhook_deliveries")
    op.drop_table("webhooks")
    op.drop_index("ix_events_undispatched", table_name="events")
    op.drop_index("ix_events_name", table_name="events")
    op.drop_index("ix_events_occurred_at", table_name="events")
    op.drop_table("events")
