"""The agent's key-value memory per workspace (table ``workspace_memory``).

Shared by the ``workspace_memory`` skill and the API. Every function takes the catalog
(or its engine) and the workspace id, so no workspace can read another's keys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, Engine, delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from autorag.errors import InvalidInput, NotFound
from autorag.store.catalog.models import WorkspaceMemoryRow, utcnow
from autorag.store.catalog.repository import Catalog
from autorag.times import as_utc

MAX_KEY_CHARS = 200  # the column's width
MAX_VALUE_BYTES = 8 * 1024  # UTF-8
MAX_KEYS = 500  # per workspace


@dataclass(frozen=True)
class MemoryEntry:
    key: str
    value: str
    updated_at: datetime


def get_memory(store: Catalog | Engine, workspace_id: int, key: str) -> MemoryEntry | None:
    query = select(WorkspaceMemoryRow).where(
        WorkspaceMemoryRow.workspace_id == workspace_id,
        WorkspaceMemoryRow.key == _valid_key(key),
    )
    with _engine(store).connect() as conn:
        row = conn.execute(query).first()
    return None if row is None else _entry(row.key, row.value, row.updated_at)


def list_memory(store: Catalog | Engine, workspace_id: int) -> list[MemoryEntry]:
    """Every key of the workspace, in key order."""
    query = (
        select(WorkspaceMemoryRow)
        .where(WorkspaceMemoryRow.workspace_id == workspace_id)
        .order_by(WorkspaceMemoryRow.key)
    )
    with _engine(store).connect() as conn:
        rows = conn.execute(query).all()
    return [_entry(r.key, r.value, r.updated_at) for r in rows]


def set_memory(store: Catalog | Engine, workspace_id: int, key: str, value: str) -> MemoryEntry:
    """Create or replace ``key``; ``InvalidInput`` past the size or key-count limits."""
    key = _valid_key(key)
    _check_value(value)
    engine = _engine(store)
    try:
        return _upsert(engine, workspace_id, key, value)
    except IntegrityError:
        pass  # a concurrent set inserted the key first: this one now updates it
    try:
        return _upsert(engine, workspace_id, key, value)
    except IntegrityError as exc:  # still failing: the workspace itself is gone
        raise NotFound(f"workspace {workspace_id} does not exist") from exc


def delete_memory(store: Catalog | Engine, workspace_id: int, key: str) -> bool:
    """Remove ``key``; False when it was not set."""
    statement = delete(WorkspaceMemoryRow).where(
        WorkspaceMemoryRow.workspace_id == workspace_id,
        WorkspaceMemoryRow.key == _valid_key(key),
    )
    with _engine(store).begin() as conn:
        return conn.execute(statement).rowcount > 0


def _upsert(engine: Engine, workspace_id: int, key: str, value: str) -> MemoryEntry:
    # Update-then-insert instead of a dialect's ON CONFLICT: the catalog may be any SQL
    # database, and the key-count check has to run before an insert anyway.
    now = utcnow()
    where = (WorkspaceMemoryRow.workspace_id == workspace_id, WorkspaceMemoryRow.key == key)
    with engine.begin() as conn:
        updated = conn.execute(
            update(WorkspaceMemoryRow).where(*where).values(value=value, updated_at=now)
        )
        if updated.rowcount == 0:
            _check_room(conn, workspace_id)
            conn.execute(
                insert(WorkspaceMemoryRow).values(
                    workspace_id=workspace_id, key=key, value=value, updated_at=now
                )
            )
    return MemoryEntry(key, value, now)


def _check_room(conn: Connection, workspace_id: int) -> None:
    count = conn.execute(
        select(func.count())
        .select_from(WorkspaceMemoryRow)
        .where(WorkspaceMemoryRow.workspace_id == workspace_id)
    ).scalar_one()
    if count >= MAX_KEYS:
        raise InvalidInput(
            f"the workspace memory is full ({MAX_KEYS} keys): delete a key before adding "
            "another, or update an existing one",
            code="memory_full",
        )


def _valid_key(key: str) -> str:
    key = key.strip()
    if not key:
        raise InvalidInput("a memory key must not be empty", code="invalid_memory_key")
    if len(key) > MAX_KEY_CHARS:
        raise InvalidInput(
            f"a memory key is at most {MAX_KEY_CHARS} characters (got {len(key)})",
            code="invalid_memory_key",
        )
    return key


def _check_value(value: str) -> None:
    size = len(value.encode("utf-8", "surrogatepass"))
    if size > MAX_VALUE_BYTES:
        raise InvalidInput(
            f"a memory value is at most {MAX_VALUE_BYTES} bytes of UTF-8 (got {size})",
            code="memory_value_too_large",
        )


def _entry(key: str, value: str, updated_at: datetime) -> MemoryEntry:
    # SQLite hands timestamps back without their zone; they were written in UTC.
    aware = as_utc(updated_at)
    return MemoryEntry(key, value, aware)


def _engine(store: Catalog | Engine) -> Engine:
    return store.engine if isinstance(store, Catalog) else store
