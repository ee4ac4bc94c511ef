"""Webhooks' tables (migration 0018) and all of their SQL.

Rows leave this module as ``webhooks.models``' dataclasses, or as ``StoredWebhook`` (a
webhook with what only the service and the delivery read: its id and sealed secret). The
outcomes of an event's deliveries are written in one transaction with what they change:
their log rows, each webhook's failure count, the logs trimmed, and, when a count reaches
the limit, the webhook disabled and its ``webhook.disabled`` event (the outbox), once.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Engine,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from autorag.store.catalog import outbox
from autorag.store.catalog.models import utcnow
from autorag.times import as_utc
from autorag.webhooks.models import DISABLED_EVENT, Delivery, DeliveryStatus, Webhook

_metadata = MetaData()
_BIG_ID = BigInteger().with_variant(Integer, "sqlite")
W = Table(
    "webhooks",
    _metadata,
    Column("id", Integer, primary_key=True),
    Column("name", String(100), nullable=False, unique=True),
    Column("url", Text, nullable=False),
    Column("events", Text, nullable=False),
    Column("secret_sealed", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("disabled_reason", Text),
    Column("consecutive_failures", Integer, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
)
D = Table(
    "webhook_deliveries",
    _metadata,
    Column("id", _BIG_ID, primary_key=True),
    Column("webhook_id", Integer, ForeignKey("webhooks.id", ondelete="CASCADE"), nullable=False),
    Column("event_id", BigInteger),
    Column("event_name", String(64), nullable=False),
    Column("delivery_id", String(64), nullable=False),
    Column("attempt", Integer, nullable=False),
    Column("status", String(16), nullable=False),
    Column("response_code", Integer),
    Column("latency_ms", Integer),
    Column("error", Text),
    Column("attempted_at", DateTime(timezone=True), nullable=False),
)


@dataclass(frozen=True)
class StoredWebhook:
    id: int
    webhook: Webhook
    secret_sealed: str


@dataclass(frozen=True)
class Attempt:
    """One attempt, as its delivery log row records it."""

    event_id: int | None
    event: str
    delivery_id: str
    attempt: int
    status: DeliveryStatus
    response_code: int | None
    latency_ms: int | None
    error: str | None


# -- webhooks ---------------------------------------------------------------------------
def insert_webhook(
    engine: Engine, *, name: str, url: str, events: Sequence[str], secret_sealed: str
) -> bool:
    """A new enabled webhook; False when the name is taken."""
    now = utcnow()
    values = {
        "name": name, "url": url, "events": _events_json(events),
        "secret_sealed": secret_sealed, "enabled": True, "consecutive_failures": 0,
        "created_at": now, "updated_at": now,
    }  # fmt: skip
    try:
        with engine.begin() as conn:
            conn.execute(insert(W).values(**values))
    except IntegrityError:
        return False
    return True


def update_webhook(engine: Engine, name: str, values: Mapping[str, Any]) -> bool:
    """Change the given columns (``events`` as a sequence); False when there is none."""
    changes = dict(values)
    if "events" in changes:
        changes["events"] = _events_json(changes["events"])
    statement = update(W).where(W.c.name == name).values(**changes, updated_at=utcnow())
    with engine.begin() as conn:
        return conn.execute(statement).rowcount == 1


def delete_webhook(engine: Engine, name: str) -> bool:
    with engine.begin() as conn:
        webhook_id = conn.execute(select(W.c.id).where(W.c.name == name)).scalar()
        if webhook_id is None:
            return False
        # Deleted here too: SQLite enforces ON DELETE only with its foreign keys on.
        conn.execute(delete(D).where(D.c.webhook_id == webhook_id))
        conn.execute(delete(W).where(W.c.id == webhook_id))
    return True


def load_webhook(engine: Engine, name: str) -> StoredWebhook | None:
    found = _webhooks(engine, W.c.name == name)
    return found[0] if found else None


def load_webhook_by_id(engine: Engine, webhook_id: int) -> StoredWebhook | None:
    found = _webhooks(engine, W.c.id == webhook_id, with_last=False)
    return found[0] if found else None


def list_webhooks(engine: Engine) -> list[StoredWebhook]:
    return _webhooks(engine, None)


def any_enabled(engine: Engine) -> bool:
    """Whether any webhook is enabled (one row read at most: asked every second)."""
    with engine.connect() as conn:
        found = conn.execute(select(W.c.id).where(W.c.enabled.is_(True)).limit(1)).first()
    return found is not None


def subscribed(engine: Engine, event: str) -> list[StoredWebhook]:
    """The enabled webhooks that want ``event`` (by name, so a deployment's order)."""
    hooks = _webhooks(engine, W.c.enabled.is_(True), with_last=False)
    return [hook for hook in hooks if hook.webhook.wants(event)]


def _webhooks(engine: Engine, condition: Any, *, with_last: bool = True) -> list[StoredWebhook]:
    query = select(W)
    if condition is not None:
        query = query.where(condition)
    with engine.connect() as conn:
        rows = conn.execute(query.order_by(W.c.name)).all()
        last = _last_deliveries(conn, rows) if with_last else {}
    return [_stored(row, last.get(row.id)) for row in rows]


def _stored(row: Row[Any], last: Delivery | None) -> StoredWebhook:
    webhook = Webhook(
        name=row.name, url=row.url, events=tuple(json.loads(row.events or "[]")),
        enabled=bool(row.enabled), disabled_reason=row.disabled_reason,
        consecutive_failures=int(row.consecutive_failures),
        created_at=as_utc(row.created_at), updated_at=as_utc(row.updated_at),
        last_delivery=last,
    )  # fmt: skip
    return StoredWebhook(int(row.id), webhook, row.secret_sealed)


def _last_deliveries(conn: Connection, rows: Sequence[Row[Any]]) -> dict[int, Delivery]:
    if not rows:
        return {}
    names = {int(row.id): row.name for row in rows}
    newest = (
        select(func.max(D.c.id))
        .where(D.c.webhook_id.in_(names))
        .group_by(D.c.webhook_id)
        .scalar_subquery()
    )
    found = conn.execute(select(D).where(D.c.id.in_(newest))).all()
    return {int(row.webhook_id): _delivery(row, names[int(row.webhook_id)]) for row in found}


def _events_json(events: Sequence[str]) -> str:
    return json.dumps(sorted(set(events)))


# -- deliveries -------------------------------------------------------------------------
def record_attempt(engine: Engine, webhook_id: int, attempt: Attempt) -> None:
    """An attempt that is not the last of its delivery (a retry follows)."""
    with engine.begin() as conn:
        _insert_attempt(conn, webhook_id, attempt)


def record_outcome(
    engine: Engine,
    webhook_id: int,
    attempt: Attempt,
    *,
    keep: int,
    disable_after: int | None,
    counts: bool = True,
) -> bool:
    """The last attempt of a delivery (see ``record_outcomes``); True when it disabled
    the webhook."""
    disabled = record_outcomes(
        engine, [(webhook_id, attempt)], keep=keep, disable_after=disable_after, counts=counts
    )
    return webhook_id in disabled


def record_outcomes(
    engine: Engine,
    outcomes: Sequence[tuple[int, Attempt]],
    *,
    keep: int,
    disable_after: int | None,
    counts: bool = True,
    trim: Collection[int] | None = None,
) -> set[int]:
    """The last attempts of an event's deliveries (webhook id, attempt; one per
    webhook), in ONE transaction with what they change: a delivered one resets its
    webhook's failure count, a failed one adds one to it and, at ``disable_after``
    (None: never), disables the webhook and emits ``webhook.disabled``. The logs of the
    webhooks in ``trim`` (None: every one here) are cut to their newest ``keep`` rows. A
    test event does not ``count``: it changes no failure count. The webhooks this call
    disabled.

    A handful of statements whatever the number of webhooks: this runs for every event
    delivered, in the process that serves searches."""
    disabled: set[int] = set()
    if not outcomes:
        return disabled
    ids = sorted({webhook_id for webhook_id, _ in outcomes})
    delivered = sorted({w for w, attempt in outcomes if attempt.status == "delivered"})
    failed = sorted(set(ids) - set(delivered))
    with engine.begin() as conn:
        conn.execute(insert(D), [_attempt_row(w, attempt) for w, attempt in outcomes])
        for webhook_id in ids if trim is None else sorted(set(ids) & set(trim)):
            _trim(conn, webhook_id, keep)
        if not counts:
            return disabled
        if delivered:
            # Only where there were failures: most deliveries then write no webhook row.
            conn.execute(
                update(W)
                .where(W.c.id.in_(delivered), W.c.consecutive_failures != 0)
                .values(consecutive_failures=0)
            )
        if failed:
            conn.execute(
                update(W)
                .where(W.c.id.in_(failed))
                .values(consecutive_failures=W.c.consecutive_failures + 1)
            )
            if disable_after is not None:
                disabled = {w for w in failed if _disable_if_failing(conn, w, disable_after)}
    return disabled


def _disable_if_failing(conn: Connection, webhook_id: int, limit: int) -> bool:
    reason = f"disabled after {limit} consecutive failed deliveries"
    disabled = conn.execute(
        update(W)
        .where(W.c.id == webhook_id, W.c.enabled.is_(True), W.c.consecutive_failures >= limit)
        .values(enabled=False, disabled_reason=reason, updated_at=utcnow())
    )
    if disabled.rowcount != 1:
        return False
    name = conn.execute(select(W.c.name).where(W.c.id == webhook_id)).scalar_one()
    outbox.emit(conn, DISABLED_EVENT, {"webhook": name, "failures": limit, "reason": reason})
    return True


def _insert_attempt(conn: Connection, webhook_id: int, attempt: Attempt) -> None:
    conn.execute(insert(D).values(**_attempt_row(webhook_id, attempt)))


def _attempt_row(webhook_id: int, attempt: Attempt) -> dict[str, Any]:
    return {
        "webhook_id": webhook_id, "event_id": attempt.event_id, "event_name": attempt.event,
        "delivery_id": attempt.delivery_id, "attempt": attempt.attempt,
        "status": attempt.status, "response_code": attempt.response_code,
        "latency_ms": attempt.latency_ms, "error": attempt.error, "attempted_at": utcnow(),
    }  # fmt: skip


def _trim(conn: Connection, webhook_id: int, keep: int) -> None:
    """Only the newest ``keep`` rows of the webhook's log stay (one statement)."""
    newest_dropped = (
        select(D.c.id)
        .where(D.c.webhook_id == webhook_id)
        .order_by(D.c.id.desc())
        .offset(keep)
        .limit(1)
        .scalar_subquery()
    )
    conn.execute(delete(D).where(D.c.webhook_id == webhook_id, D.c.id <= newest_dropped))


def list_deliveries(engine: Engine, stored: StoredWebhook, *, limit: int) -> list[Delivery]:
    """The webhook's log, newest first."""
    query = select(D).where(D.c.webhook_id == stored.id).order_by(D.c.id.desc()).limit(limit)
    with engine.connect() as conn:
        return [_delivery(row, stored.webhook.name) for row in conn.execute(query)]


def _delivery(row: Row[Any], webhook: str) -> Delivery:
    return Delivery(
        id=int(row.id), webhook=webhook, event_id=row.event_id, event=row.event_name,
        delivery_id=row.delivery_id, attempt=int(row.attempt),
        status=cast("DeliveryStatus", row.status), response_code=row.response_code,
        latency_ms=row.latency_ms, error=row.error, attempted_at=as_utc(row.attempted_at),
    )  # fmt: skip
