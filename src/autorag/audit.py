"""The audit trail: security-relevant events, written once and listed with filters.

Any feature records its events here (``dlp.redacted``, ``dlp.bypassed``,
``dlp.revealed``…): a dotted ``event`` name, who (``user_id``), where
(``workspace_id``), through what (``source``: ``chat`` or ``widget`` for DLP) and JSON
``details``. Details describe what happened, never the sensitive data itself.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, insert, select
from sqlalchemy.orm import Session

from autorag.store.catalog import outbox
from autorag.store.catalog.models import AuditEventRow, UserRow, WorkspaceRow, utcnow
from autorag.store.catalog.repository import Catalog
from autorag.times import as_utc

MAX_LIST = 1000


@dataclass(frozen=True)
class AuditEvent:
    id: int
    event: str
    user_id: int | None
    username: str | None  # None once the user is deleted
    workspace_id: int | None
    workspace: str | None
    source: str | None
    details: Mapping[str, Any]
    created_at: datetime


@dataclass(frozen=True)
class AuditQuery:
    """Which events to list, newest first. Every given filter must hold."""

    events: Sequence[str] = ()  # exact names; empty: any
    prefix: str | None = None  # e.g. "dlp."
    user_id: int | None = None
    workspace_id: int | None = None
    source: str | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive
    details_contain: str | None = None  # a substring of the details JSON
    before_id: int | None = None  # paging: events older than this one
    limit: int = field(default=100)


def record(
    catalog: Catalog,
    event: str,
    *,
    user_id: int | None = None,
    workspace_id: int | None = None,
    source: str | None = None,
    details: Mapping[str, Any] | None = None,
    connection: Connection | None = None,
) -> int:
    """Write one event; inside ``connection``'s transaction when given (an action and
    its audit then commit together). Returns the event's id.

    The same event joins the event log (``autorag.store.catalog.outbox``) in the same
    transaction, so webhooks and ``autorag events`` see it; ``audit_events`` stays for
    its readers (the DLP history)."""
    statement = insert(AuditEventRow).values(
        event=event,
        user_id=user_id,
        workspace_id=workspace_id,
        source=source,
        details=json.dumps(dict(details or {}), sort_keys=True, ensure_ascii=False),
        created_at=utcnow(),
    )
    if connection is not None:
        return _write(connection, statement, event, user_id, workspace_id, details)
    with catalog.engine.begin() as conn:
        return _write(conn, statement, event, user_id, workspace_id, details)


def _write(
    connection: Connection,
    statement: Any,
    event: str,
    user_id: int | None,
    workspace_id: int | None,
    details: Mapping[str, Any] | None,
) -> int:
    key = connection.execute(statement).inserted_primary_key
    assert key is not None
    actor = _name(connection, UserRow.username, UserRow.id, user_id)
    workspace = _name(connection, WorkspaceRow.name, WorkspaceRow.id, workspace_id)
    outbox.emit(connection, event, details, workspace=workspace, actor=actor)
    return int(key[0])


def _name(connection: Connection, name: Any, key: Any, value: int | None) -> str | None:
    """A user's or workspace's name by id (events name them: ids outlive their rows)."""
    if value is None:
        return None
    found = connection.execute(select(name).where(key == value)).scalar()
    return None if found is None else str(found)


def list_events(catalog: Catalog, query: AuditQuery) -> list[AuditEvent]:
    statement = (
        select(AuditEventRow, UserRow.username, WorkspaceRow.name)
        .outerjoin(UserRow, UserRow.id == AuditEventRow.user_id)
        .outerjoin(WorkspaceRow, WorkspaceRow.id == AuditEventRow.workspace_id)
        .where(*_conditions(query))
        .order_by(AuditEventRow.id.desc())
        .limit(max(1, min(query.limit, MAX_LIST)))
    )
    with Session(catalog.engine) as session:
        rows = session.execute(statement).all()
        return [_event(row[0], row[1], row[2]) for row in rows]


def _conditions(query: AuditQuery) -> list[ColumnElement[bool]]:
    table = AuditEventRow
    conditions: list[ColumnElement[bool]] = []
    if query.events:
        conditions.append(table.event.in_(list(query.events)))
    if query.prefix:
        conditions.append(table.event.startswith(query.prefix, autoescape=True))
    if query.user_id is not None:
        conditions.append(table.user_id == query.user_id)
    if query.workspace_id is not None:
        conditions.append(table.workspace_id == query.workspace_id)
    if query.source is not None:
        conditions.append(table.source == query.source)
    if query.since is not None:
        conditions.append(table.created_at >= _utc(query.since))
    if query.until is not None:
        conditions.append(table.created_at < _utc(query.until))
    if query.details_contain:
        conditions.append(table.details.contains(query.details_contain, autoescape=True))
    if query.before_id is not None:
        conditions.append(table.id < query.before_id)
    return conditions


def _utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _event(row: AuditEventRow, username: str | None, workspace: str | None) -> AuditEvent:
    try:
        details = json.loads(row.details)
    except ValueError:
        details = {}
    created = as_utc(row.created_at)
    return AuditEvent(
        id=row.id,
        event=row.event,
        user_id=row.user_id,
        username=username,
        workspace_id=row.workspace_id,
        workspace=workspace,
        source=row.source,
        details=details if isinstance(details, dict) else {},
        created_at=created,
    )
